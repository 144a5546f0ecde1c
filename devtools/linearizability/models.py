"""The sequential objects provided: a register per key (write sets the value, read returns it)
and a set per key (add and remove an element, read returns the whole set), each with what a
window's start may be (`OneOf`, `Between`) and its unknown operations no read could have seen."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Iterable, Sequence

from devtools.linearizability.operations import OK, UNKNOWN, Model, Operation, State, show


@dataclasses.dataclass(frozen=True)
class OneOf:
    """A register state standing for any of `values` (the start of a window)."""

    values: frozenset[Hashable]


def _register_step(state: State, op: Operation) -> tuple[bool, State]:
    if op.kind == "write":
        return True, op.input
    if op.kind != "read":
        raise ValueError(f"a register has no {op.kind!r} operation")
    if op.outcome == UNKNOWN:
        return True, state
    if isinstance(state, OneOf):
        return (True, op.output) if op.output in state.values else (False, state)
    return state == op.output, state


def _register_uncertain(init: State, before: Sequence[Operation]) -> State:
    values = {init} | {op.input for op in before if op.kind == "write"}
    return init if len(values) == 1 else OneOf(frozenset(values))


def _register_invisible(ops: Sequence[Operation]) -> frozenset[int]:
    """Unknown writes whose value no read answered after they were invoked: had one taken
    effect, no read fell before the next write, so the history is linearizable with it iff
    without it."""
    last_seen: dict[Hashable, float] = {}
    for op in ops:
        if op.kind == "read" and op.outcome == OK:
            last_seen[op.output] = max(last_seen.get(op.output, -math.inf), op.completed)
    return frozenset(
        i
        for i, op in enumerate(ops)
        if op.outcome == UNKNOWN
        and op.kind == "write"
        and last_seen.get(op.input, -math.inf) < op.invoked
    )


def _describe_register(state: State) -> str:
    if isinstance(state, OneOf):
        return "one of " + show(state.values)
    return show(state)


def register(init: Hashable = None, name: str = "register") -> Model:
    """A register per key; `init` None means "not set" (a read of an unset key returns None)."""
    return Model(
        name=name,
        init=init,
        step=_register_step,
        uncertain=_register_uncertain,
        invisible=_register_invisible,
        describe_state=_describe_register,
    )


@dataclasses.dataclass(frozen=True)
class Between:
    """A set state standing for every set S with lower <= S <= upper (the start of a window)."""

    lower: frozenset[Hashable]
    upper: frozenset[Hashable]


def _between(lower: frozenset[Hashable], upper: frozenset[Hashable]) -> State:
    return lower if lower == upper else Between(lower, upper)


def _set_step(state: State, op: Operation) -> tuple[bool, State]:
    if op.kind == "read":
        if op.outcome == UNKNOWN:
            return True, state
        seen = frozenset(op.output) if isinstance(op.output, Iterable) else None
        if isinstance(state, Between):
            ok = seen is not None and state.lower <= seen <= state.upper
            return (True, seen) if ok else (False, state)
        return state == seen, state
    element = frozenset((op.input,))
    if op.kind == "add":
        if isinstance(state, Between):
            return True, _between(state.lower | element, state.upper | element)
        return True, _as_set(state) | element
    if op.kind == "remove":
        if isinstance(state, Between):
            return True, _between(state.lower - element, state.upper - element)
        return True, _as_set(state) - element
    raise ValueError(f"a set has no {op.kind!r} operation")


def _as_set(state: State) -> frozenset[Hashable]:
    if not isinstance(state, frozenset):
        raise TypeError(f"a set model's state is a frozenset, not {state!r}")
    return state


def _set_uncertain(init: State, before: Sequence[Operation]) -> State:
    start = _as_set(init)
    added = frozenset(op.input for op in before if op.kind == "add")
    removed = frozenset(op.input for op in before if op.kind == "remove")
    return _between(start - removed, start | added)


def _set_invisible(ops: Sequence[Operation]) -> frozenset[int]:
    """Unknown adds of an element no read answered present after they were invoked, and
    unknown removes of one no read answered absent: as for a register's unseen writes, the
    history is linearizable with them iff without them."""
    reads = [op for op in ops if op.kind == "read" and op.outcome == OK]
    elements = {op.input for op in ops if op.kind in ("add", "remove")}
    present: dict[Hashable, float] = {}
    absent: dict[Hashable, float] = {}
    for op in reads:
        seen = frozenset(op.output) if isinstance(op.output, Iterable) else frozenset()
        elements |= seen
        for element in seen:
            present[element] = max(present.get(element, -math.inf), op.completed)
    for op in reads:
        seen = frozenset(op.output) if isinstance(op.output, Iterable) else frozenset()
        for element in elements - seen:
            absent[element] = max(absent.get(element, -math.inf), op.completed)
    last_seen = {"add": present, "remove": absent}
    return frozenset(
        i
        for i, op in enumerate(ops)
        if op.outcome == UNKNOWN
        and op.kind in last_seen
        and last_seen[op.kind].get(op.input, -math.inf) < op.invoked
    )


def _describe_set(state: State) -> str:
    if isinstance(state, Between):
        return f"any set between {show(state.lower)} and {show(state.upper)}"
    return show(state)


def set_model(init: frozenset[Hashable] = frozenset(), name: str = "set") -> Model:
    """A set per key: `add` / `remove` an element (`input`), `read` answers the whole set
    (`output`, a frozenset or any iterable of elements)."""
    return Model(
        name=name,
        init=init,
        step=_set_step,
        uncertain=_set_uncertain,
        invisible=_set_invisible,
        describe_state=_describe_set,
    )
