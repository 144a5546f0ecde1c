"""Keeps the active controller's lease while one batch runs for longer than a third of it.

The lease is renewed before a batch (`ControllerRuntime.ensure_active`) and by every commit, in
its transaction. A batch that takes longer than a whole lease (one report naming a million
partitions: its handler alone runs for seconds) would find the lease lapsed at its commit and be
refused whole, however healthy its controller. Kafka's controller keeps its quorum leadership
from the Raft client's own thread while its event handler works; this thread does the same for
the lease: while a batch runs, it renews the lease every third of one, under the condition every
renewal has (the holder and the epoch still this controller's, the lease not lapsed), so it never
takes back a lease another controller took over. A renewal never shortens the lease (a commit
may have renewed it since).

What it does not keep: a process that is paused or dead renews nothing, so a standby takes over
after one lease as ever; and one batch is kept for at most `MAX_KEPT_LEASES` leases, after which
the lease lapses: a handler stuck in a loop cannot hold the cluster's only writer forever.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator

from django.db import connection

from controlplane.runtime.lease import Lease

logger = logging.getLogger(__name__)

# One batch keeps the lease for at most this many leases (a minute at the default 6 s lease).
MAX_KEPT_LEASES = 10

# The thread ends after this many looks find no batch (a lease and a third).
IDLE_POLLS = 16

Renew = Callable[[Lease], "Lease | None"]


@dataclasses.dataclass(slots=True)
class _Batch:
    lease: Lease
    started: float  # monotonic seconds
    renewed: float  # when the lease was last renewed for it (its start at first)
    done: bool = False  # no more renewals for it: given up, or the lease was lost


class LeaseKeeper:
    """Renews the lease every `lease_ms / 3` while a batch runs (`keeping`), from a thread of its
    own with its own database connection (held only while a long batch runs). `renew` answers
    the renewed lease, None when the lease is no longer this controller's, or the lease it was
    given when it did not renew it (one of the batch's transactions holds the cluster row and
    renews the lease as it ends).

    A batch only sets an attribute as it begins and ends: the thread looks four times a renewal
    interval (every half second at the default lease), so a batch's first renewal comes at most
    5/12 of a lease after it began, and a batch begins with over half a lease left
    (`ControllerRuntime.ensure_active`)."""

    def __init__(self, lease_ms: int, renew: Renew) -> None:
        self.interval_s = lease_ms / 3000
        self.max_s = MAX_KEPT_LEASES * lease_ms / 1000
        self._renew = renew
        self._batch: _Batch | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the thread's start and end against a batch's start
        self.renewals = 0  # how many times a long batch had its lease renewed

    @contextlib.contextmanager
    def keeping(self, lease: Lease) -> Iterator[None]:
        """The lease kept while the block runs (one batch: handle, commit, apply)."""
        now = time.monotonic()
        with self._lock:
            self._batch = _Batch(lease, now, now)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="controller-lease-keeper", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            self._batch = None

    def _run(self) -> None:
        connected, idle = False, 0
        while True:
            time.sleep(self.interval_s / 4)
            batch = self._batch
            if batch is not None and not batch.done:
                idle = 0
                if self._due(batch):
                    connected = self._renew_for(batch)
                continue
            if connected:  # no connection held between long batches
                connection.close()
                connected = False
            idle += 1
            with self._lock:  # idle for a while: the thread ends, the next batch starts one
                if idle >= IDLE_POLLS and self._batch is None:
                    self._thread = None
                    return

    def _due(self, batch: _Batch) -> bool:
        now = time.monotonic()
        if now - batch.started >= self.max_s:
            logger.error(
                "a batch has run for %.0f s: the controller lease is no longer kept",
                now - batch.started,
            )
            batch.done = True
            return False
        return now - batch.renewed >= self.interval_s

    def _renew_for(self, batch: _Batch) -> bool:
        """Renew the batch's lease; whether this thread still holds a connection."""
        try:
            renewed = self._renew(batch.lease)
        except Exception:  # the database unreachable: tried again a third of a lease on
            logger.warning("could not renew the controller lease", exc_info=True)
            connection.close()  # this thread's own: the next renewal connects afresh
            batch.renewed = time.monotonic()
            return False
        if renewed is None:  # lapsed or taken over: the commit's fence refuses the batch
            batch.done = True
            return True
        batch.renewed = time.monotonic()
        if renewed is batch.lease:  # a commit holds the row: it renews the lease as it ends
            return True
        self.renewals += 1
        logger.info(
            "a batch running for %.1f s: the controller lease (epoch %d) renewed",
            batch.renewed - batch.started,
            batch.lease.epoch,
        )
        return True
