"""The linearizability checker (devtools.linearizability): Porcupine's and Knossos' classic
histories, unknown and failed outcomes, sets, the smallest non-linearizable window, and two
properties: a history a real sequential object produced (each call's effect at one instant inside
its interval) is always linearizable; a corrupted read (a value never written, or a stale value
after a newer completed write) is always caught, in a window that holds it."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Hashable, Iterable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.linearizability import (
    FAILED,
    OK,
    UNKNOWN,
    Between,
    Model,
    OneOf,
    Operation,
    check,
    prefix_at,
    register,
    relevant,
    set_model,
)


def call(
    client: int | str,
    kind: str,
    invoked: float,
    completed: float,
    *,
    value: Hashable = None,
    seen: Hashable = None,
    outcome: str = OK,
    key: str = "x",
) -> Operation:
    return Operation(
        client=str(client),
        key=key,
        kind=kind,
        input=value,
        output=seen,
        invoked=invoked,
        completed=completed,
        outcome=outcome,
    )


def write(client: int, value: Hashable, invoked: float, completed: float, **kw: str) -> Operation:
    return call(client, "write", invoked, completed, value=value, **kw)


def read(client: int, seen: Hashable, invoked: float, completed: float, **kw: str) -> Operation:
    return call(client, "read", invoked, completed, seen=seen, **kw)


# --- Porcupine's and Knossos' classics -----------------------------------------------------------


def test_porcupine_register_linearizable() -> None:
    # Porcupine's TestRegisterModel, first history: the read of 0 comes before the write.
    history = [write(0, 100, 0, 100), read(1, 100, 25, 75), read(2, 0, 30, 60)]
    result = check(history, register(0))
    assert result.linearizable and result.window is None
    assert result.operations_checked == 3


def test_porcupine_register_not_linearizable() -> None:
    # The read of 200 forces the write before 30; the read of 0 from 40 cannot come before it.
    history = [write(0, 200, 0, 100), read(1, 200, 10, 30), read(2, 0, 40, 90)]
    result = check(history, register(0))
    assert not result.linearizable
    window = result.window
    assert window is not None
    assert window.end == 90  # the stale read's completion
    assert read(2, 0, 40, 90) in window.operations


def test_stale_read_after_a_completed_write() -> None:
    first, second, stale = write(0, 1, 0, 1), write(0, 2, 2, 3), read(1, 1, 4, 5)
    result = check([first, second, stale], register())
    assert not result.linearizable
    window = result.window
    assert window is not None
    # The smallest window: the newer write and the stale read; the first write is forgotten.
    assert (window.start, window.end) == (2, 5)
    assert set(window.operations) == {second, stale}
    text = window.describe()
    assert "x (register)" in text and "+0.000s" in text and "cannot be linearized" in text


def test_concurrent_writes_and_reads() -> None:
    history = [
        write(0, 1, 0, 10),
        write(1, 2, 0, 10),
        read(2, 2, 1, 2),
        read(3, 1, 3, 4),
        read(2, 1, 11, 12),
    ]
    assert check(history, register()).linearizable
    # Both writes are done by 10: after a read of 1 at 11, a read of 2 cannot follow.
    assert not check([*history, read(3, 2, 13, 14)], register()).linearizable


def test_reads_of_an_unset_register() -> None:
    assert check([read(0, None, 0, 1), write(1, "a", 2, 3)], register()).linearizable
    assert not check([write(1, "a", 0, 1), read(0, None, 2, 3)], register()).linearizable


def test_an_unknown_write_may_or_may_not_take_effect() -> None:
    pending = write(0, 2, 2, 3, outcome=UNKNOWN)
    done = write(0, 1, 0, 1)
    # Never seen: linearizable (it never took effect, or took effect after everything).
    assert check([done, pending, read(1, 1, 4, 5), read(1, 1, 6, 7)], register()).linearizable
    # Seen long after the client gave up: it took effect late.
    assert check([done, pending, read(1, 1, 4, 5), read(1, 2, 60, 61)], register()).linearizable
    # Seen, then the older value again: not linearizable.
    result = check([done, pending, read(1, 2, 4, 5), read(1, 1, 6, 7)], register())
    assert not result.linearizable
    assert result.window is not None and pending in result.window.operations


def test_failed_and_unknown_operations_are_dropped_where_they_say_nothing() -> None:
    history = [
        write(0, 1, 0, 1),
        write(0, 2, 2, 3, outcome=FAILED),
        read(1, 99, 2, 3, outcome=FAILED),
        read(1, None, 4, 10, outcome=UNKNOWN),
        read(1, 1, 5, 6),
    ]
    result = check(history, register())
    assert result.linearizable
    assert (result.operations_checked, result.operations_dropped) == (2, 3)
    # A failed write had no effect: reading its value is not linearizable.
    assert not check([*history, read(2, 2, 7, 8)], register()).linearizable


def test_unknown_writes_no_read_could_see_are_left_out() -> None:
    unseen = [write(5, f"lost-{n}", n, n + 0.5, outcome=UNKNOWN) for n in range(40)]
    seen = write(6, "seen", 1, 2, outcome=UNKNOWN)
    history = [*unseen, seen, read(1, "seen", 50, 51), write(0, 1, 52, 53), read(1, 1, 54, 55)]
    result = check(history, register())
    assert result.linearizable
    assert (result.operations_checked, result.operations_dropped) == (4, 40)
    # Forty writes that may land anywhere later would double an exhaustive search forty times.
    # (The window holds all five others: the unknown write, seen before the write of 1 and
    # again after, straddles every later start, where it might be applied once more.)
    result = check([*history, read(1, "seen", 60, 61)], register())
    assert result.window is not None and len(result.window.operations) == 5
    adds = [call(5, "add", n, n + 1, value=f"e{n}", outcome=UNKNOWN) for n in range(30)]
    removal = call(5, "remove", 0, 1, value="e0", outcome=UNKNOWN)
    looks = [call(1, "read", 40, 41, seen=frozenset({"e0"}))]
    result = check([*adds, removal, *looks], set_model())
    assert result.linearizable and result.operations_checked == 2  # add(e0) and the read


def test_a_search_out_of_budget_proves_nothing() -> None:
    adds = [call(5, "add", n, n + 1, value=f"e{n}", outcome=UNKNOWN) for n in range(8)]
    everything = frozenset(f"e{n}" for n in range(8))
    looks = [call(1, "read", 20, 21, seen=everything), call(1, "read", 22, 23, seen=frozenset())]
    result = check([*adds, *looks], set_model(), budget=100)
    assert not result.linearizable and result.window is None
    assert result.inconclusive == ("x",)
    assert "budget exceeded" in result.describe()
    assert not check([*adds, *looks], set_model()).linearizable  # with room: proven


def test_sets_add_remove_read() -> None:
    def add(client: int, element: str, start: float, end: float, **kw: str) -> Operation:
        return call(client, "add", start, end, value=element, **kw)

    def remove(client: int, element: str, start: float, end: float) -> Operation:
        return call(client, "remove", start, end, value=element)

    def look(client: int, elements: set[str], start: float, end: float) -> Operation:
        return call(client, "read", start, end, seen=frozenset(elements))

    history = [
        add(0, "a", 0, 1),
        add(1, "b", 0, 5),  # concurrent with the first read: it may or may not see b
        look(2, {"a"}, 2, 3),
        remove(0, "a", 6, 7),
        look(2, {"b"}, 8, 9),
    ]
    assert check(history, set_model()).linearizable
    stale = look(1, {"a", "b"}, 10, 11)
    result = check([*history, stale], set_model())
    assert not result.linearizable
    window = result.window
    assert window is not None and stale in window.operations
    # The smallest window: the read of {b} and the stale read (no add of a in between).
    assert (window.start, window.end, len(window.operations)) == (8, 11, 2)
    # An element never added.
    result = check([*history, look(1, {"b", "zz"}, 10, 11)], set_model())
    assert result.window is not None and len(result.window.operations) == 1
    # An unknown add may show up later, and then stays.
    maybe = add(3, "c", 12, 13, outcome=UNKNOWN)
    later = [maybe, look(2, {"b"}, 14, 15), look(2, {"b", "c"}, 16, 17)]
    assert check([*history, *later], set_model()).linearizable
    assert not check([*history, *later, look(2, {"b"}, 18, 19)], set_model()).linearizable


def test_a_write_straddling_the_window_start_may_have_taken_effect_before_it() -> None:
    # write(1) spans everything: linearized after write(2), the read of 1 is fine.
    history = [write(0, 1, 0, 10), write(1, 2, 5, 6), read(2, 1, 7, 8)]
    assert check(history, register()).linearizable
    # A read of 2 after the read of 1 cannot be explained: write(2) was over before the read
    # of 1 began. The window starts with that read; write(1) straddles its start (optional: it
    # may have taken effect before), write(2) is before it (forgotten: "any earlier state").
    result = check([*history, read(2, 2, 11, 12)], register())
    window = result.window
    assert window is not None and (window.start, window.end) == (7, 12)
    assert set(window.operations) == {history[0], history[2], read(2, 2, 11, 12)}
    assert "began before the window" in window.describe()


def test_models_per_key_and_the_longest_history() -> None:
    registers, sets = register(), set_model()
    history = [
        write(0, 1, 0, 1, key="config:a"),
        read(1, 1, 2, 3, key="config:a"),
        read(1, None, 2, 3, key="config:b"),
        call(0, "add", 0, 1, value="u", key="acls"),
        call(1, "read", 2, 3, seen=frozenset({"u"}), key="acls"),
        call(1, "read", 4, 5, seen=frozenset({"u"}), key="acls"),
    ]
    result = check(history, lambda op: sets if op.key == "acls" else registers)
    assert result.linearizable
    assert dict(result.history_lengths) == {"config:a": 2, "config:b": 1, "acls": 3}
    assert result.longest_history == ("acls", 3)
    assert result.summary()["longest_history"] == {"key": "acls", "operations": 3}
    bad = [*history, read(1, 7, 6, 7, key="config:b")]
    result = check(bad, lambda op: sets if op.key == "acls" else registers)
    assert [w.partition for w in result.windows] == ["config:b"]
    assert "NOT linearizable" in result.describe()


def test_a_model_without_uncertain_states_keeps_the_whole_prefix() -> None:
    plain = dataclasses.replace(register(), uncertain=None)
    history = [write(0, 1, 0, 1), write(0, 2, 2, 3), read(1, 1, 4, 5), read(1, 2, 9, 10)]
    window = check(history, plain).window
    assert window is not None and (window.start, window.end) == (0, 5)


def test_operations_are_validated() -> None:
    with pytest.raises(ValueError, match="before invoked"):
        write(0, 1, 5, 4)
    with pytest.raises(ValueError, match="outcome"):
        write(0, 1, 0, 1, outcome="maybe")
    with pytest.raises(ValueError, match="completion"):
        write(0, 1, 0, math.inf)
    assert write(0, 1, 0, 3, outcome=UNKNOWN).returned == math.inf


def test_long_histories_need_no_recursion() -> None:
    sequential = []
    for n in range(10_000):
        sequential += [write(0, n, 4 * n, 4 * n + 1), read(1, n, 4 * n + 2, 4 * n + 3)]
    result = check(sequential, register())
    assert result.linearizable and result.longest_history == ("x", 20_000)
    broken = [*sequential, read(1, 3, 50_000, 50_001)]
    window = check(broken, register()).window
    assert window is not None and len(window.operations) == 2  # the last write and the read


def test_many_keys_and_clients() -> None:
    history = simulate(random.Random(7), keys=20, clients=6, operations=2000, kind="register")
    result = check(history, register())
    assert result.linearizable
    assert result.operations_checked + result.operations_dropped == 2000
    assert len(result.history_lengths) == 20


# --- properties ----------------------------------------------------------------------------------

UNIVERSE = ("a", "b", "c")


def simulate(
    rng: random.Random, *, keys: int, clients: int, operations: int, kind: str
) -> list[Operation]:
    """Clients calling a real sequential object: each call takes effect at a random instant
    inside its interval (an unknown one maybe never, a failed one never), reads answer what the
    object holds then. Integer times, so that calls often meet at equal times."""
    values = itertools.count(1)
    specs: list[tuple[float, Operation]] = []
    clock = [rng.randint(0, 3) for _ in range(clients)]
    for _ in range(operations):
        client = rng.randrange(clients)
        invoked = clock[client] + rng.randint(0, 2)
        completed = invoked + rng.randint(0, 5)
        clock[client] = completed
        key = f"k{rng.randrange(keys)}"
        outcome = rng.choices((OK, UNKNOWN, FAILED), weights=(90, 5, 5))[0]
        if kind == "register":
            name = rng.choice(("write", "read"))
            value: Hashable = next(values) if name == "write" else None
        else:
            name = rng.choice(("add", "remove", "read"))
            value = rng.choice(UNIVERSE) if name != "read" else None
        op = Operation(str(client), key, name, value, None, invoked, completed, outcome)
        takes_effect = outcome == OK or (outcome == UNKNOWN and rng.random() < 0.5)
        point = invoked + rng.random() * (completed - invoked) if takes_effect else math.inf
        specs.append((point, op))
    state: dict[str, Hashable] = {}
    history: list[Operation] = []
    for point, op in sorted(specs, key=lambda s: s[0]):
        if math.isinf(point):
            history.append(op)
            continue
        current = state.get(op.key, None if kind == "register" else frozenset())
        if op.kind == "read":
            op = dataclasses.replace(op, output=current)
        elif op.kind == "write":
            state[op.key] = op.input
        elif op.kind == "add":
            state[op.key] = frozenset(current) | {op.input}
        else:
            state[op.key] = frozenset(current) - {op.input}
        history.append(op)
    return history


def model_of(kind: str) -> Model:
    return register() if kind == "register" else set_model()


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
KINDS = st.sampled_from(("register", "set"))
SIZES = st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(0, 60))


@settings(max_examples=300, deadline=None)
@given(seed=SEEDS, kind=KINDS, sizes=SIZES)
def test_a_real_object_always_yields_a_linearizable_history(
    seed: int, kind: str, sizes: tuple[int, int, int]
) -> None:
    keys, clients, operations = sizes
    history = simulate(
        random.Random(seed), keys=keys, clients=clients, operations=operations, kind=kind
    )
    result = check(history, model_of(kind))
    assert result.linearizable, result.describe()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seed=SEEDS, kind=KINDS, sizes=SIZES, pick=st.integers(0, 10_000))
def test_a_read_of_something_never_written_is_caught(
    seed: int, kind: str, sizes: tuple[int, int, int], pick: int
) -> None:
    keys, clients, operations = sizes
    history = simulate(
        random.Random(seed), keys=keys, clients=clients, operations=operations, kind=kind
    )
    reads = [i for i, op in enumerate(history) if op.kind == "read" and op.outcome == OK]
    if not reads:
        return
    index = reads[pick % len(reads)]
    original = history[index]
    if kind == "register":
        corrupted = dataclasses.replace(original, output="never written")
    else:
        seen = frozenset(original.output)
        corrupted = dataclasses.replace(original, output=seen | {"never added"})
    history[index] = corrupted
    result = check(history, model_of(kind))
    assert not result.linearizable
    window = result.window
    assert window is not None and window.partition == corrupted.key
    assert corrupted in window.operations
    assert window.end == corrupted.completed


@settings(max_examples=200, deadline=None)
@given(seed=SEEDS, kind=KINDS, sizes=SIZES)
def test_a_stale_read_after_a_newer_completed_write_is_caught(
    seed: int, kind: str, sizes: tuple[int, int, int]
) -> None:
    keys, clients, operations = sizes
    history = simulate(
        random.Random(seed), keys=keys, clients=clients, operations=operations, kind=kind
    )
    after = max((op.completed for op in history), default=0.0) + 1
    if kind == "register":
        older = write(8, "older", after, after + 1, key="k0")
        newer = write(8, "newer", after + 2, after + 3, key="k0")
        stale = read(9, "older", after + 4, after + 5, key="k0")
    else:
        # An element no one else touches: added, removed, then seen again.
        older = call(8, "add", after, after + 1, value="fresh", key="k0")
        newer = call(8, "remove", after + 2, after + 3, value="fresh", key="k0")
        added = [op for op in history if op.key == "k0" and op.kind == "add"]
        state = frozenset(op.input for op in added if op.outcome != FAILED)
        stale = call(9, "read", after + 4, after + 5, seen=state | {"fresh"}, key="k0")
    result = check([*history, older, newer, stale], model_of(kind))
    assert not result.linearizable
    window = result.window
    assert window is not None and window.partition == "k0"
    assert stale in window.operations and newer in window.operations
    assert older not in window.operations and window.start >= newer.invoked


def brute_force(
    history: Sequence[Operation],
    model: Model,
    starts: Iterable[Hashable] | None = None,
    since: float = -math.inf,
) -> bool:
    """Linearizable by enumeration, from one of `starts` (the initial state by default): some of
    the unknown calls (and of those invoked before `since`) took effect, in some order that
    respects real time, which the model accepts."""
    ops = [
        op for op in history if op.outcome == OK or (op.outcome == UNKNOWN and op.kind != "read")
    ]
    maybe = [op for op in ops if op.outcome == UNKNOWN or op.invoked < since]
    for state0 in [model.init] if starts is None else starts:
        for chosen in itertools.product((False, True), repeat=len(maybe)):
            skipped = {id(op) for op, keep in zip(maybe, chosen, strict=True) if not keep}
            kept = [op for op in ops if id(op) not in skipped]
            for order in itertools.permutations(kept):
                if any(
                    later.returned < earlier.invoked
                    for i, earlier in enumerate(order)
                    for later in order[i + 1 :]
                ):
                    continue
                state = state0
                for op in order:
                    accepted, state = model.step(state, op)
                    if not accepted:
                        break
                else:
                    return True
    return False


def concrete_states(state: Hashable) -> list[Hashable]:
    """Every state an uncertain one (a window's start) stands for."""
    if isinstance(state, OneOf):
        return list(state.values)
    if isinstance(state, Between):
        free = sorted(state.upper - state.lower, key=repr)
        return [
            state.lower | {e for e, keep in zip(free, chosen, strict=True) if keep}
            for chosen in itertools.product((False, True), repeat=len(free))
        ]
    return [state]


@st.composite
def small_histories(draw: st.DrawFn, kind: str) -> list[Operation]:
    """Up to six calls on one key with outputs drawn at random: often not linearizable."""
    ops = []
    for index in range(draw(st.integers(1, 6))):
        invoked = draw(st.integers(0, 8))
        completed = invoked + draw(st.integers(0, 4))
        outcome = draw(st.sampled_from((OK, OK, OK, UNKNOWN, FAILED)))
        if kind == "register":
            name = draw(st.sampled_from(("write", "read")))
            value = index if name == "write" else None
            seen = draw(st.sampled_from((None, 0, 1, 2))) if name == "read" else None
        else:
            name = draw(st.sampled_from(("add", "remove", "read")))
            value = draw(st.sampled_from(("a", "b"))) if name != "read" else None
            subsets = (frozenset(), frozenset("a"), frozenset("b"), frozenset("ab"))
            seen = draw(st.sampled_from(subsets)) if name == "read" else None
        ops.append(
            call(index % 3, name, invoked, completed, value=value, seen=seen, outcome=outcome)
        )
    return ops


@settings(max_examples=400, deadline=None)
@given(data=st.data(), kind=KINDS)
def test_the_verdict_and_the_window_agree_with_brute_force(data: st.DataObject, kind: str) -> None:
    history = data.draw(small_histories(kind))
    model = model_of(kind)
    result = check(history, model)
    assert result.linearizable == brute_force(history, model), history
    if result.window is None:
        return
    # The window fails on its own, from every state its start stands for.
    window = result.window
    prefix = prefix_at(relevant(history, model), model, window.end)
    before = [op for op in prefix if op.invoked < window.start]
    assert model.uncertain is not None
    start = model.uncertain(model.init, before) if before else model.init
    states = concrete_states(start)
    assert not brute_force(window.operations, model, states, since=window.start), window.describe()
