"""A commit's statements run by a thread of their own while the committing thread builds the
next ones.

A 100,000-partition commit spent about 1.0 s building its projections' rows in Python and then
1.4 s with PostgreSQL running its statements, one after the other. Here the statements go to the
server as soon as each is built: while it appends the log's rows, the committing thread encodes
the Kafka batches; in the tables' transaction, while it updates the partitions, the thread builds
the health figures and the timeline's moves, and so on. The statements still run one at a time,
in order, in the transaction at hand (the log's, then the tables'), on the committing thread's
own connection (this thread borrows it: `connection` is the committer's there), and the first
error stops the rest and is raised to the committer, which rolls back.

Django's `connection` is per thread, so the writer installs the committer's connection object
as its own (`connections[alias] = ...`, allowed by `inc_thread_sharing`), and runs in a copy
of the committer's context (the single-writer guard's `commit_scope` is a context variable). The
committer touches the database only through the writer until it is done (building rows reads
the image, not the database); psycopg serializes a connection's use anyway.

While the committing thread builds, the session may have nothing to run: PostgreSQL would see
it idle in its transaction, and the controller's sessions end after half a lease of that
(`idle_in_transaction_session_timeout`, run_controller), which is how a paused controller lets
go of the cluster row. So while it waits for the next write, the writer asks the server
`SELECT 1` every `keepalive_s` on the raw connection (no statement counter or query log sees
it): a paused process sends nothing, and its session still ends as before.

The writer needs the GIL back each time the server answers it, while the committing thread
builds: the controller process runs with a short GIL switch interval for that
(`controlplane.runtime.controller.tune_controller_process`).

Off PostgreSQL (the embedded SQLite) the writes run inline.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from types import TracebackType

from django.db import DEFAULT_DB_ALIAS, connection, connections

Write = Callable[[], None]


class WriteBehind:
    """`submit` writes in order; leaving the block waits for them and raises the first error."""

    def __init__(self, *, keepalive_s: float | None = None) -> None:
        self._inline = connection.vendor != "postgresql"
        self.keepalive_s = keepalive_s if keepalive_s is not None else _keepalive_s()
        self.keepalives = 0
        self._writes: queue.SimpleQueue[Write | None] = queue.SimpleQueue()
        # Each counted by one thread only (the committer submits, the writer runs): no update
        # is lost between them.
        self._submitted = 0
        self._ran = 0
        self.error: BaseException | None = None
        self._connection = connections[DEFAULT_DB_ALIAS]
        self._thread: threading.Thread | None = None

    def __enter__(self) -> WriteBehind:
        if not self._inline:
            self._connection.inc_thread_sharing()
            context = contextvars.copy_context()
            self._thread = threading.Thread(
                target=context.run, args=(self._run,), name="commit-writer", daemon=True
            )
            self._thread.start()
        return self

    def submit(self, write: Write) -> None:
        if self._inline:
            write()
        elif self.error is None:
            self._submitted += 1
            self._writes.put(write)

    def busy(self) -> bool:
        """Whether the server still has statements of this writer to run: while it does, the
        committing thread may build what comes after at no cost to this transaction."""
        return self._ran < self._submitted and self.error is None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._thread is None:
            return
        self._writes.put(None)
        self._thread.join()
        self._connection.dec_thread_sharing()
        if exc is None and self.error is not None:
            raise self.error

    def _run(self) -> None:
        connections[DEFAULT_DB_ALIAS] = self._connection  # `connection` is the committer's
        while True:
            try:
                write = self._writes.get(timeout=self.keepalive_s)
            except queue.Empty:
                self._keep_alive()
                continue
            if write is None:
                return
            if self.error is not None:
                continue  # the transaction is lost: drain, run nothing more
            try:
                write()
            except BaseException as error:  # raised again in the committing thread
                self.error = error
            finally:
                self._ran += 1

    def _keep_alive(self) -> None:
        if self.error is not None:
            return
        try:
            self._connection.connection.execute("SELECT 1")
            self.keepalives += 1
        except BaseException as error:  # the session is gone: the commit fails
            self.error = error


def _keepalive_s() -> float:
    """A third of the idle time run_controller allows a session in its transaction."""
    from django.conf import settings

    return max(0.1, settings.CP_LEASE_MS / 2 / 3 / 1000)
