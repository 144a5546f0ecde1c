"""The single writer, enforced: the metadata log and its projections change only in `log_commit`.

Views, services and tasks read the state tables; every change is a record the controller commits
(docs/architecture/design.md, "The rules that keep it sound"). `guard_connections()` installs a
database wrapper that refuses, with `ProjectionWriteOutsideCommit`, any INSERT, UPDATE or DELETE of
those tables outside the commit, so a view that wrote `Topic.objects.create(...)` fails its tests
instead of forking the state from the log. The test suite installs it for every connection.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from collections.abc import Iterator
from typing import Any

from django.db import connections
from django.db.backends.signals import connection_created

LOG_TABLES = frozenset({"cp_metadata_record", "cp_kafka_batch", "cp_applied_request"})
# COPY ... FROM too: large commits copy their rows (controlplane.runtime.bulk).
_WRITE = re.compile(
    r'^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|COPY)\s+"?(\w+)"?(?!.*\bTO\s+STDOUT)',
    re.IGNORECASE | re.DOTALL,
)
_writing: contextvars.ContextVar[bool] = contextvars.ContextVar("projection_writes", default=False)
_retaining: contextvars.ContextVar[bool] = contextvars.ContextVar("log_retention", default=False)
_DELETE_LOG = re.compile(
    r'^\s*DELETE\s+FROM\s+"?(?:cp_metadata_record|cp_kafka_batch)"?\s', re.IGNORECASE
)


class ProjectionWriteOutsideCommit(AssertionError):
    """A write to the metadata log or a projection table that did not come from `log_commit`."""


@contextlib.contextmanager
def commit_scope() -> Iterator[None]:
    """The one place the log and the projections are written (`metadata_log.log_commit`)."""
    token = _writing.set(True)
    try:
        yield
    finally:
        _writing.reset(token)


@contextlib.contextmanager
def retention_scope() -> Iterator[None]:
    """Log retention (controlplane.runtime.snapshots): the records before the oldest kept
    snapshot are deleted. Only a DELETE of metadata records (and their Kafka batches) is let
    through here; every other write of the log and the projections is still refused."""
    token = _retaining.set(True)
    try:
        yield
    finally:
        _retaining.reset(token)


# A test that tampers with a table on purpose (to show a check finds it) says so with this.
projection_writes_allowed = commit_scope


@functools.cache
def guarded_tables() -> frozenset[str]:
    from controlplane.runtime.projections import PROJECTIONS

    return LOG_TABLES.union(*(p.tables for p in PROJECTIONS.values()))


def _guard(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    match = _WRITE.match(sql)
    if (
        match
        and not _writing.get()
        and match.group(1) in guarded_tables()
        and not (_retaining.get() and _DELETE_LOG.match(sql))
    ):
        raise ProjectionWriteOutsideCommit(
            f"{match.group(1)} is written only by the controller's commit (log_commit): {sql[:80]}"
        )
    return execute(sql, params, many, context)


def _install(sender: Any, connection: Any, **kwargs: Any) -> None:
    if _guard in connection.execute_wrappers:
        return
    connection.execute_wrappers.append(_guard)
    # Emptying the whole database between tests (Django's flush) is the harness, not a writer.
    flush = connection.ops.execute_sql_flush

    def execute_sql_flush(sql_list: Any) -> Any:
        with commit_scope():
            return flush(sql_list)

    connection.ops.execute_sql_flush = execute_sql_flush


def guard_connections() -> None:
    """Refuse writes to the log and the projections outside the commit on every connection of
    this process, open or to come."""
    connection_created.connect(_install)
    for connection in connections.all(initialized_only=True):
        _install(None, connection)
