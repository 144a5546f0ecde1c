"""How the apps plug into the runtime, which imports no app.

Each registry (the projections, the controller's timer jobs, the fencing and request id
listeners, the commit's audit trail, the scrape collectors, the RPC auditors) has a
`register_*` function beside it, and the apps call those from their `AppConfig.ready()` only.
`ready()` may run again (a test or a management command setting Django up a second time), so
registering is idempotent: the rule is `add_once`.
"""

from __future__ import annotations

import functools
import types
from typing import TypeVar

Entry = TypeVar("Entry")

# What is registered as itself; anything else (a projection, a collector, the audit trail) is an
# instance that ready() builds afresh each time, the same plug-in whenever its class is.
FUNCTION_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    functools.partial,
)


def add_once(entries: list[Entry], entry: Entry) -> bool:
    """Append `entry` unless it is registered already; whether it was appended."""
    if any(is_same_plugin(entry, present) for present in entries):
        return False
    entries.append(entry)
    return True


def is_same_plugin(entry: object, present: object) -> bool:
    """The same function (or bound method), or an instance of the same class."""
    if entry is present or entry == present:
        return True
    return not isinstance(entry, FUNCTION_TYPES) and type(entry) is type(present)
