"""The check: a history partitioned (by key), each partition searched, the failing ones' smallest
windows, in one `CheckResult`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Mapping

from devtools.linearizability.operations import Model, Operation
from devtools.linearizability.search import DEFAULT_BUDGET, BudgetExceeded, linearizable
from devtools.linearizability.windows import Window, relevant, smallest_window


@dataclasses.dataclass(frozen=True)
class CheckResult:
    linearizable: bool  # proven: every partition has a linearization
    operations_checked: int
    # Failed calls (no effect), unknown reads (saw nothing), unknown writes no read could see.
    operations_dropped: int
    history_lengths: Mapping[str, int]  # operations checked per partition (key)
    windows: tuple[Window, ...]  # per partition proven not linearizable, shortest first
    inconclusive: tuple[str, ...] = ()  # partitions whose search ran out of budget

    @property
    def longest_history(self) -> tuple[str, int]:
        """The partition with the most operations checked, and how many."""
        if not self.history_lengths:
            return "", 0
        name = max(self.history_lengths, key=lambda k: self.history_lengths[k])
        return name, self.history_lengths[name]

    @property
    def window(self) -> Window | None:
        """The smallest non-linearizable window of every failing partition's."""
        return self.windows[0] if self.windows else None

    def describe(self) -> str:
        name, longest = self.longest_history
        verdict = "linearizable" if self.linearizable else "NOT linearizable"
        if self.inconclusive and not self.windows:
            verdict = "NOT proven linearizable"
        lines = [
            f"{verdict}: {self.operations_checked} operations checked "
            f"({self.operations_dropped} dropped) over {len(self.history_lengths)} keys; "
            f"longest history {longest} ({name})"
        ]
        if self.inconclusive:
            lines.append(f"search budget exceeded (no verdict): {', '.join(self.inconclusive)}")
        return "\n".join([*lines, *(w.describe() for w in self.windows)])

    def summary(self) -> dict[str, object]:
        """For a JSON report."""
        name, longest = self.longest_history
        return {
            "linearizable": self.linearizable,
            "operations_checked": self.operations_checked,
            "operations_dropped": self.operations_dropped,
            "keys": len(self.history_lengths),
            "longest_history": {"key": name, "operations": longest},
            "failing_keys": [w.partition for w in self.windows],
            "inconclusive_keys": list(self.inconclusive),
            "smallest_window": None if self.window is None else self.window.describe(),
        }


def check(
    history: Iterable[Operation],
    model: Model | Callable[[Operation], Model],
    *,
    budget: int = DEFAULT_BUDGET,
) -> CheckResult:
    """Check a history against one model, or a model per operation (by its key, say).
    `budget`: configurations one search may remember before giving up on a partition."""
    partitions: dict[tuple[str, Hashable], tuple[Model, list[Operation]]] = {}
    total = 0
    for op in history:
        total += 1
        chosen = model if isinstance(model, Model) else model(op)
        part = chosen.partition(op) if chosen.partition is not None else None
        partitions.setdefault((chosen.name, part), (chosen, []))[1].append(op)
    lengths: dict[str, int] = {}
    windows: list[Window] = []
    inconclusive: list[str] = []
    for (name, part), (chosen, ops) in partitions.items():
        label = name if part is None else str(part)
        checked = relevant(ops, chosen)
        lengths[label] = lengths.get(label, 0) + len(checked)
        try:
            if linearizable(checked, chosen.step, chosen.init, budget=budget):
                continue
        except BudgetExceeded:
            inconclusive.append(label)
            continue
        windows.append(smallest_window(checked, chosen, label, budget))
    windows.sort(key=lambda w: (w.seconds, len(w.operations)))
    checked_count = sum(lengths.values())
    return CheckResult(
        linearizable=not windows and not inconclusive,
        operations_checked=checked_count,
        operations_dropped=total - checked_count,
        history_lengths=lengths,
        windows=tuple(windows),
        inconclusive=tuple(inconclusive),
    )
