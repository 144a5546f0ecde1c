"""Read-your-writes in a process that relayed a write answered before the state tables followed.

The controller answers a write a broker forwarded (an Envelope, KIP-590) once the log holds it,
as Kafka's controller answers once its quorum committed: that client reads through brokers,
which follow the log, not the tables (controlplane.runtime.metadata_log: a commit is the log's
transaction, then the tables'). A read the same process then serves from the tables (a
forwarded ListPartitionReassignments, any read RPC) first waits here until the tables reached
the highest offset it relayed such an answer for: the tables' notice, or the cluster row itself
(a notice sent before this process listened). The wait is bounded: when the tables cannot follow
(the controller lost them; the next one catches them up), the read is served as they stand.
"""

from __future__ import annotations

import logging
import threading
import time

from django.db import connection

from controlplane.runtime.notifier import notifier

logger = logging.getLogger(__name__)

LONGEST_WAIT_S = 5.0
NOTICE_WAIT_S = 0.1  # between two looks at the cluster row


class TablesBarrier:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._relayed = -1  # the highest offset of an answer relayed ahead of the tables

    @property
    def relayed(self) -> int:
        return self._relayed

    def note(self, offset: int) -> None:
        """A write answered ahead of the tables, through the log's `offset`, was relayed."""
        with self._lock:
            self._relayed = max(self._relayed, offset)

    def wait(self, longest_s: float = LONGEST_WAIT_S) -> bool:
        """Wait until the tables reached every answer relayed ahead of them; False when they
        did not within `longest_s` (the read then goes on, and the target is dropped)."""
        target = self._relayed
        if target < 0 or notifier.tables_offset >= target:
            return True
        deadline = time.monotonic() + longest_s
        while True:
            if _projected_offset() >= target:
                notifier.bump_tables(target)  # the notice came before this process listened
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if notifier.wait_tables_offset(target, min(NOTICE_WAIT_S, left)):
                return True
        logger.warning(
            "the state tables did not reach offset %d within %.1f s; reading them as they stand",
            target,
            longest_s,
        )
        with self._lock:
            if self._relayed == target:
                self._relayed = -1
        return False


def _projected_offset() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT projected_offset FROM cp_cluster WHERE id = 1")
        row = cursor.fetchone()
    return -1 if row is None else int(row[0])


tables_barrier = TablesBarrier()
