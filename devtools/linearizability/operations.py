"""What the checker reads: one client call (`Operation`) and its outcome, and a sequential
object as data (`Model`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Literal

Outcome = Literal["ok", "failed", "unknown"]
OK: Outcome = "ok"
FAILED: Outcome = "failed"
UNKNOWN: Outcome = "unknown"
State = Hashable
Step = Callable[[State, "Operation"], tuple[bool, State]]


@dataclasses.dataclass(frozen=True)
class Operation:
    """One client call. `completed` is when the answer came or, for `unknown`, when the client
    gave up (kept for the report: the checker uses `returned`, +infinity)."""

    client: str
    key: str
    kind: str
    input: Hashable = None
    output: Hashable = None
    invoked: float = 0.0
    completed: float = math.inf
    outcome: Outcome = OK

    def __post_init__(self) -> None:
        if self.outcome not in (OK, FAILED, UNKNOWN):
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if self.completed < self.invoked:
            raise ValueError(f"completed ({self.completed}) before invoked ({self.invoked})")
        if self.outcome == OK and math.isinf(self.completed):
            raise ValueError("an ok operation needs its completion time")

    @property
    def returned(self) -> float:
        """By when it took effect, if it did: its completion, +infinity when unknown."""
        return math.inf if self.outcome == UNKNOWN else self.completed


def _reads(op: Operation) -> bool:
    return op.kind == "read"


def _by_key(op: Operation) -> Hashable:
    return op.key


@dataclasses.dataclass(frozen=True)
class Model:
    """A sequential object as data. `step` must accept any state `uncertain` returns;
    `partition` None checks the whole history as one object; `invisible` names the unknown
    operations of one partition's history whose effect no read could have seen (left out)."""

    name: str
    init: State
    step: Step
    read_only: Callable[[Operation], bool] = _reads
    partition: Callable[[Operation], Hashable] | None = _by_key
    uncertain: Callable[[State, Sequence[Operation]], State] | None = None
    invisible: Callable[[Sequence[Operation]], frozenset[int]] | None = None
    describe_state: Callable[[State], str] = repr


def show(value: object, most: int = 12) -> str:
    if isinstance(value, frozenset | set):
        shown = sorted(repr(v) for v in value)
        more = f", ... ({len(shown)} in all)" if len(shown) > most else ""
        return "{" + ", ".join(shown[:most]) + more + "}"
    return repr(value)
