"""A linearizability checker: Wing & Gong's search with Lowe's memoization, as Porcupine does it.

Pure Python, no Django, no third-party package: the fault campaign records every admin write and
every read of the same keys (`devtools.history`) and proves here that what the clients saw could
have come from one copy of each object changing at one instant inside each call.

**History.** An `Operation` is one client call: its key, its kind (a register's `write` / `read`,
a set's `add` / `remove` / `read`), its input and output, when it was invoked and when its answer
came (`time.monotonic()` seconds), and its outcome:

- `ok`: answered; it took effect at one instant inside [invoked, completed];
- `failed`: a definite refusal, it had no effect: left out of the check;
- `unknown`: timed out or given up: it may or may not have taken effect, at any instant after it
  was invoked, so it is checked with a completion of +infinity (Porcupine's and Knossos' `info`
  operations). An unknown read says nothing and is left out; an unknown write must be one the
  model accepts in any state (a write, an add, a remove always are).

Operation a precedes b in real time when a's completion (+infinity when unknown) is before b's
invocation; equal times are concurrent.

**Models** are data (`Model`): an initial state, `step(state, op) -> (ok, next state)`, which
operations only read, and a partition function (by key by default: P-compositionality, each
key's history is checked on its own, which is what makes long histories cheap). `register()`
(write sets the value; a read returns the current one; `init` None means "not set") and
`set_model()` (add, remove, read returns the whole set as a frozenset) are provided.

Unknown writes cost: one still pending may or may not have been applied at every later point,
so a search that must be exhaustive (a history that is not linearizable) can double its work
with each. Two things keep that in hand. A model's `invisible` leaves out the unknown writes no
read could have seen (a register write whose value no read answered after it was invoked; a
set add of an element no later read showed, a remove of one no later read missed): had one
taken effect, no read fell between it and the next write of the same thing, so the history is
linearizable with it iff without it. And a search remembers at most `budget` configurations
(`DEFAULT_BUDGET`); past it the partition is reported inconclusive (`CheckResult.inconclusive`,
and `linearizable` is False: nothing was proven), never guessed.

**The check** (`check`) is Porcupine's `checkSingle`, iterative: the calls and returns of one
partition's operations, sorted by time (a call before a return at equal times), form a doubly
linked list; the search linearizes the first call it can (the model accepts it and the pair
(linearized bitset, state) is not in the cache), lifts the call and its return out of the list,
and starts again from the head; reaching a return whose call is not linearized, it takes back
the last linearized call (unlift) and tries the next. The list emptied: linearizable; nothing
left to take back: not.

**The smallest non-linearizable window**, for each partition that fails, is defined as follows.

- The prefix at time E is what was known at E: the operations invoked at or before E, those not
  answered by E being pending (unknown outcome; a pending read is left out). If the history fails,
  some prefix fails, and every later prefix fails too: the window's **end** is the earliest
  completion time E at which the prefix fails (binary search on completion times). The operation
  answered at E is the one no linearization can explain.
- The window starting at S (S an invocation time of the prefix at E) holds the prefix's
  operations not answered before S (completed >= S, pending ones too); those invoked before S
  (straddling S) are optional, as they may have taken effect before S. Everything that happened
  before S is forgotten: the window starts from `model.uncertain(init, ops invoked before S)`, a
  state standing for every state the object could be in after any of those operations, applied
  in any order (a register: any value written before S, or the initial one; a set: anything
  between the initial elements never removed and every element added). The window **fails**
  when no linearization of it exists from that state. The window at the first invocation is the
  whole prefix from the initial state, so it fails; if the window at S fails, so does every
  window starting earlier (its operations and start states include those of the later one).
  The window's **start** is the latest S whose window fails (binary search). A failing window is
  a proof on its own: whatever the earlier operations did, these cannot be linearized, so the
  history is not linearizable.
- A model without `uncertain` keeps the whole prefix (start = its first invocation).
- Only proven verdicts move the window: a search out of budget counts as "not shown to fail",
  so the window may come out larger, never unsound.

`check` returns a `CheckResult`: linearizable or not, operations checked, each partition's
history length, the longest, and the failing windows (shortest first), each with `describe()`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
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


# --- a register: write sets the value, read returns it -----------------------------------------


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
        return "one of " + _show(state.values)
    return _show(state)


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


# --- a set: add and remove an element, read returns the whole set -----------------------------


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
        return f"any set between {_show(state.lower)} and {_show(state.upper)}"
    return _show(state)


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


# --- the search ------------------------------------------------------------------------------

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


def _proven_not(
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


# --- windows ---------------------------------------------------------------------------------


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
    """The smallest non-linearizable window of one partition (see the module's docstring)."""

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
        call = f"{op.kind}({'' if op.input is None and op.kind == 'read' else _show(op.input)})"
        answer = f" -> {_show(op.output)}" if op.kind == "read" else ""
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
        if _proven_not(prefix_at(ops, model, ends[middle]), model, model.init, budget=budget):
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
        if _proven_not(inside, model, state, optional, budget):
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


# --- the check -------------------------------------------------------------------------------


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


def _show(value: object, most: int = 12) -> str:
    if isinstance(value, frozenset | set):
        shown = sorted(repr(v) for v in value)
        more = f", ... ({len(shown)} in all)" if len(shown) > most else ""
        return "{" + ", ".join(shown[:most]) + more + "}"
    return repr(value)
