"""The smallest non-linearizable window of a failing partition: the earliest prefix that fails,
then the latest start whose window still fails (the package's docstring says why that is sound)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from devtools.linearizability.operations import FAILED, OK, UNKNOWN, Model, Operation, State, show
from devtools.linearizability.search import DEFAULT_BUDGET, proven_not_linearizable


def relevant(ops: Iterable[Operation], model: Model) -> list[Operation]:
    """What the check looks at: a failed call had no effect, an unknown read saw nothing, an
    unknown write no read could have seen changes nothing (`model.invisible`)."""
    kept = [
        op
        for op in ops
        if op.outcome != FAILED and not (op.outcome == UNKNOWN and model.read_only(op))
    ]
    unseen = model.invisible(kept) if model.invisible is not None else frozenset()
    return [op for index, op in enumerate(kept) if index not in unseen]


def prefix_at(ops: Sequence[Operation], model: Model, end: float) -> list[Operation]:
    """What was known at `end`: the calls invoked by then, those not answered by then pending
    (unknown outcome; a pending read is left out)."""
    known: list[Operation] = []
    for op in ops:
        if op.invoked > end:
            continue
        if op.returned <= end:
            known.append(op)
        elif not model.read_only(op):
            known.append(op if op.outcome == UNKNOWN else dataclasses.replace(op, outcome=UNKNOWN))
    return known


def _window_parts(
    prefix: Sequence[Operation], model: Model, start: float, first: float
) -> tuple[list[Operation], frozenset[int], State]:
    """The window's operations, which of them are optional, and the state it starts from."""
    inside = [op for op in prefix if op.returned >= start]
    if start <= first:
        return inside, frozenset(), model.init
    assert model.uncertain is not None
    before = [op for op in prefix if op.invoked < start]
    optional = frozenset(i for i, op in enumerate(inside) if op.invoked < start)
    return inside, optional, model.uncertain(model.init, before)


@dataclasses.dataclass(frozen=True)
class Window:
    """The smallest non-linearizable window of one partition (see the package's docstring)."""

    partition: str
    model: str
    start: float
    end: float
    operations: tuple[Operation, ...]
    start_state: str

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def describe(self) -> str:
        lines = [
            f"{self.partition} ({self.model}): not linearizable in a window of "
            f"{self.seconds * 1000:.1f} ms ({len(self.operations)} operations), from state "
            f"{self.start_state}; times relative to the window's start:"
        ]
        for op in sorted(self.operations, key=lambda o: (o.invoked, o.returned)):
            lines.append("  " + self._line(op))
        return "\n".join(lines)

    def _line(self, op: Operation) -> str:
        began = f"{op.invoked - self.start:+.3f}s"
        if op.outcome == UNKNOWN and op.completed > self.end:
            ended, note = "pending", ""
        else:
            ended = f"{op.completed - self.start:+.3f}s"
            note = (
                " (gave up then: may or may not have taken effect)" if op.outcome == UNKNOWN else ""
            )
        if op.invoked < self.start:
            note += " (began before the window: may have taken effect before it)"
        if op.outcome == OK and op.completed == self.end:
            note += " <- cannot be linearized"
        call = f"{op.kind}({'' if op.input is None and op.kind == 'read' else show(op.input)})"
        answer = f" -> {show(op.output)}" if op.kind == "read" else ""
        return f"[{began} .. {ended}] client {op.client}: {call}{answer} {op.outcome}{note}"


def smallest_window(
    ops: Sequence[Operation], model: Model, partition: str, budget: int = DEFAULT_BUDGET
) -> Window:
    """The smallest non-linearizable window of one partition's history (`relevant` operations),
    which must be proven not linearizable. Every window returned was proven so; a search that
    runs out of budget counts as "not proven", which keeps the window sound (maybe larger)."""
    ends = sorted({op.completed for op in ops if op.outcome == OK})
    low, high = 0, len(ends) - 1  # the prefix at ends[high] fails: it is the whole history's
    while low < high:
        middle = (low + high) // 2
        if proven_not_linearizable(
            prefix_at(ops, model, ends[middle]), model, model.init, budget=budget
        ):
            high = middle
        else:
            low = middle + 1
    end = ends[high]
    prefix = prefix_at(ops, model, end)
    starts = sorted({op.invoked for op in prefix})
    first = starts[0]
    # The window at starts[low] fails; without `uncertain` a window keeps the whole prefix.
    low, high = 0, (len(starts) - 1 if model.uncertain is not None else 0)
    while low < high:
        middle = (low + high + 1) // 2
        inside, optional, state = _window_parts(prefix, model, starts[middle], first)
        if proven_not_linearizable(inside, model, state, optional, budget):
            low = middle
        else:
            high = middle - 1
    inside, _, state = _window_parts(prefix, model, starts[low], first)
    return Window(
        partition=partition,
        model=model.name,
        start=starts[low],
        end=end,
        operations=tuple(inside),
        start_state=model.describe_state(state),
    )
