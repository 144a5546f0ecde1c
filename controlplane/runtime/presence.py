"""A controller's presence: its own PostgreSQL session, named after it, for as long as it runs.

The lease alone makes a standby wait out the rest of a dead controller's lease (up to a whole
lease) after a kill -9. PostgreSQL ends a session the moment its client's connection closes, and
the operating system closes a dead process's connections at once: so each `run_controller`
process keeps one idle session named `cp-controller <node id>` (its `application_name`), and a
standby that has seen the lease holder's session and then finds it gone takes the lease over at
once (`lease_acquire(take_over_from=...)`), a new epoch as ever.

Safety never rests on this: every commit checks the epoch and holder under the cluster row's
lock, so a holder that was only cut off from its session (a network fault) is fenced by the new
epoch as by a lapsed lease, and exits. A holder the standby never saw present (the embedded web
process, a controller that could not open its session, or SQLite, which has no sessions to see)
is waited out to its lease's end, as before; so is a paused one (SIGSTOP), whose session stays.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from django.db import connection

from controlplane.models import Cluster

logger = logging.getLogger("controlplane.controller")

PREFIX = "cp-controller "
NAME_MAX = 63  # PostgreSQL keeps the first NAMEDATALEN - 1 bytes of an application_name
POLL_S = 0.1  # how often a standby looks for its holder's session
KEEP_S = 1.0  # how often a controller checks its own session is still there


def presence_name(node_id: str) -> str:
    return (PREFIX + node_id)[:NAME_MAX]  # node ids are ASCII: characters are bytes


def supported() -> bool:
    return connection.vendor == "postgresql"


class Presence:
    """This process's named session, and, while it is a standby, its view of the lease holder's.

    The session is kept by a thread of its own (`start`): it checks it every `KEEP_S` and opens
    it again when it was lost (PostgreSQL restarted), so a controller's presence outlives a
    database restart. A standby that finds its own session gone (the same restart ended every
    session) forgets the holder it saw: it takes over only from a holder it sees present again
    and then gone, never because a restart ended both."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.seen: tuple[str, int] | None = None  # the holder and epoch last seen present
        self._session: Any = None
        self._thread: threading.Thread | None = None
        self._failing = False

    # --- this process's session (the keeper thread's) ---------------------------------------
    def start(self, stop: threading.Event) -> bool:
        """Open the session and keep it until `stop` (False on SQLite: nothing to keep)."""
        if not supported():
            return False
        self.ensure()
        self._thread = threading.Thread(
            target=self._keep, args=(stop,), name="controller-presence", daemon=True
        )
        self._thread.start()
        return True

    def _keep(self, stop: threading.Event) -> None:
        while not stop.wait(KEEP_S):
            if self.ensure():
                try:
                    self._session.execute("SELECT 1")
                except Exception:  # lost: opened again on the next turn
                    self.close()
        self.close()

    def ensure(self) -> bool:
        """Open the session if it is not open; True when it is."""
        if self._session is not None and not self._session.closed:
            return True
        import psycopg  # PostgreSQL deployments only

        params = dict(connection.get_connection_params())
        params.pop("cursor_factory", None)
        params.pop("context", None)
        params["application_name"] = presence_name(self.node_id)
        params.setdefault("connect_timeout", 5)
        try:
            self._session = psycopg.connect(**params, autocommit=True)
        except psycopg.Error as failure:
            if not self._failing:  # once per outage, not once a second
                logger.warning("cannot open this controller's presence session: %s", failure)
            self._failing = True
            return False
        self._failing = False
        return True

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):  # a lost session has nothing to close
                session.close()

    # --- the holder's (a standby's view, on its own Django connection) ----------------------
    def holder_gone(self) -> tuple[str, int] | None:
        """The holder and epoch to take the lease over from: a holder seen present under this
        epoch whose session has ended since, while this process's own session lasted. None
        while it is present, never seen, or this process holds the lease."""
        if not supported():
            return None
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT c.lease_holder, c.controller_epoch,"
                f" EXISTS (SELECT 1 FROM pg_stat_activity a"
                f"  WHERE a.datname = current_database()"
                f"  AND a.application_name = left(%s || c.lease_holder, {NAME_MAX})),"
                f" EXISTS (SELECT 1 FROM pg_stat_activity a"
                f"  WHERE a.datname = current_database() AND a.application_name = %s)"
                f" FROM {Cluster._meta.db_table} c WHERE c.id = 1",
                [PREFIX, presence_name(self.node_id)],
            )
            row = cursor.fetchone()
        if row is None:
            return None
        holder, epoch, present, own = str(row[0] or ""), int(row[1]), bool(row[2]), bool(row[3])
        if not own:  # not open yet, or ended with every other session: nothing is known
            self.seen = None
            return None
        if not holder or holder == self.node_id:
            return None
        if present:
            self.seen = (holder, epoch)
            return None
        return (holder, epoch) if self.seen == (holder, epoch) else None
