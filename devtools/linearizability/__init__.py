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

from devtools.linearizability.models import Between, OneOf, register, set_model
from devtools.linearizability.operations import (
    FAILED,
    OK,
    UNKNOWN,
    Model,
    Operation,
    Outcome,
    State,
    Step,
)
from devtools.linearizability.search import DEFAULT_BUDGET, BudgetExceeded, linearizable
from devtools.linearizability.verdict import CheckResult, check
from devtools.linearizability.windows import Window, prefix_at, relevant, smallest_window

__all__ = [
    "DEFAULT_BUDGET",
    "FAILED",
    "OK",
    "UNKNOWN",
    "Between",
    "BudgetExceeded",
    "CheckResult",
    "Model",
    "OneOf",
    "Operation",
    "Outcome",
    "State",
    "Step",
    "Window",
    "check",
    "linearizable",
    "prefix_at",
    "register",
    "relevant",
    "set_model",
    "smallest_window",
]
