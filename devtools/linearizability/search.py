"""The search: Porcupine's `checkSingle`, iterative, over one partition's calls and returns in a
doubly linked list, with a budget of remembered configurations."""

from __future__ import annotations

from collections.abc import Sequence

from devtools.linearizability.operations import Model, Operation, State, Step

_NIL = -1
_HEAD = 0
# Configurations one search may remember (each a bitset and a state): a history that is not
# linearizable is searched exhaustively, and every unknown write still pending may or may not
# have been applied at every later point, so their number can double with each of them. Half a
# million is about 10 s and 0.4 GB for a key with 2,500 operations.
DEFAULT_BUDGET = 500_000


class BudgetExceeded(Exception):
    """The search remembered more configurations than its budget: no verdict."""


def linearizable(
    ops: Sequence[Operation],
    step: Step,
    init: State,
    optional: frozenset[int] = frozenset(),
    budget: int = DEFAULT_BUDGET,
) -> bool:
    """Whether `ops` (one partition, none `failed`) have a linearization from `init`.

    Porcupine's checkSingle. `optional` are indexes of operations that may also be dropped (a
    window's operations that straddle its start: they may have taken effect before it).
    Raises BudgetExceeded past `budget` configurations.
    """
    count = len(ops)
    if count == 0:
        return True
    events = sorted(
        [(op.invoked, 0, index) for index, op in enumerate(ops)]
        + [(op.returned, 1, index) for index, op in enumerate(ops)]
    )
    size = 2 * count + 1  # entry 0 is the list's head
    op_at = [_NIL] * size
    is_call = [False] * size
    partner = [_NIL] * size  # a call entry's return entry
    call_of = [_NIL] * count
    for position, (_, kind, index) in enumerate(events, start=1):
        op_at[position] = index
        if kind == 0:
            is_call[position] = True
            call_of[index] = position
        else:
            partner[call_of[index]] = position
    following = [*range(1, size), _NIL]
    preceding = [_NIL, *range(size - 1)]

    def lift(call: int) -> None:
        back = partner[call]
        following[preceding[call]] = following[call]
        preceding[following[call]] = preceding[call]
        following[preceding[back]] = following[back]
        if following[back] != _NIL:
            preceding[following[back]] = preceding[back]

    def unlift(call: int) -> None:
        back = partner[call]
        following[preceding[back]] = back
        if following[back] != _NIL:
            preceding[following[back]] = back
        following[preceding[call]] = call
        preceding[following[call]] = call

    cache: set[tuple[int, State]] = set()

    def remember(done: int, state: State) -> bool:
        """False when already there: that configuration was searched."""
        if (done, state) in cache:
            return False
        if len(cache) >= budget:
            raise BudgetExceeded(f"more than {budget} configurations")
        cache.add((done, state))
        return True

    # The calls linearized so far: (call entry, state before it, dropped rather than applied).
    trail: list[tuple[int, State, bool]] = []
    state, done = init, 0
    entry = following[_HEAD]
    while following[_HEAD] != _NIL:
        if is_call[entry]:
            index = op_at[entry]
            bit = 1 << index
            accepted, after = step(state, ops[index])
            if accepted and remember(done | bit, after):
                trail.append((entry, state, False))
                state, done = after, done | bit
            elif index in optional and remember(done | bit, state):
                trail.append((entry, state, True))
                done |= bit
            else:
                entry = following[entry]
                continue
            lift(entry)
            entry = following[_HEAD]
            continue
        # A return whose call is not linearized: take back the last call linearized.
        if not trail:
            return False
        entry, state, dropped = trail.pop()
        index = op_at[entry]
        bit = 1 << index
        done &= ~bit
        unlift(entry)
        if not dropped and index in optional and remember(done | bit, state):
            trail.append((entry, state, True))
            done |= bit
            lift(entry)
            entry = following[_HEAD]
        else:
            entry = following[entry]
    return True


def proven_not_linearizable(
    ops: Sequence[Operation],
    model: Model,
    init: State,
    optional: frozenset[int] = frozenset(),
    budget: int = DEFAULT_BUDGET,
) -> bool:
    """True only when the search finished and found no linearization."""
    try:
        return not linearizable(ops, model.step, init, optional, budget)
    except BudgetExceeded:
        return False
