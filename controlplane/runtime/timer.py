"""The active controller's timer: its fencing rounds and the apps' periodic jobs.

Kafka's QuorumController schedules its periodic work (fencing brokers whose session lapsed, the
elections left over) as deferred events on its own queue; here one thread runs the fencing
rounds, each due when the next session lapses, and another runs the apps' jobs, so that a job's
commits never hold up a fencing round. Both take the controller's fair lock like any event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.db import close_old_connections

from controlplane.runtime.batcher import FairRLock
from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent
from controlplane.runtime.fencing import FencingHoldOffWatch
from controlplane.runtime.ingress import (
    LagWindow,
    TimerLag,
    ingress_overload,
    listener_lags,
    stale_reports,
)
from controlplane.runtime.lease import now_ms
from controlplane.runtime.plugins import add_once
from controlplane.runtime.sessions import SessionStore

if TYPE_CHECKING:
    from controlplane.runtime.controller import ControllerRuntime

logger = logging.getLogger("controlplane.controller")

TIMER_LATE_LOGGED_MS = 250  # fencing rounds this late are logged (the benchmarks read them)
MIN_TIMER_WAIT_S = 0.005  # a round due now still lets other events take the lock first
STOP_POLL_S = 0.1  # how soon a sleeping timer notices that it must stop
# How often the sleeping timer looks at the tables left for later (a bounded change's,
# controlplane.runtime.metadata_log.TablesBehind): whether the change's slices stopped coming.
TABLES_BEHIND_POLL_S = 0.05

# Work the active controller does besides fencing, in its jobs thread (apps register theirs in
# ready()).
TIMER_JOBS: list[Callable[[ControllerRuntime], None]] = []


def register_timer_job(job: Callable[[ControllerRuntime], None]) -> None:
    add_once(TIMER_JOBS, job)


def start_timer_thread(runtime: ControllerRuntime) -> threading.Event:
    stop = threading.Event()
    thread = threading.Thread(
        target=runtime.run_forever, args=(stop,), name="controller-timer", daemon=True
    )
    thread.start()
    return stop


class ControllerTimer:
    """The timer's half of the controller runtime (controlplane.runtime.controller), which
    holds the state it reads and sets below."""

    _lock: FairRLock
    sessions: SessionStore
    session_timeout_ms: int
    activated_ms: int
    sessions_lost_ms: int
    moves_pending: bool
    next_session_expiry_ms: int | None
    timer_wakeup: threading.Event
    timer_lag: TimerLag
    ingress_lag: LagWindow
    ingress_overload: str | None
    fencing_watch: FencingHoldOffWatch

    def is_active(self) -> bool:
        raise NotImplementedError

    def write_tables_behind(self, *, all_of_them: bool = False) -> bool:
        raise NotImplementedError

    def handle(self, event: ControllerEvent) -> ControllerAnswer:
        raise NotImplementedError

    def run_forever(self, stop: threading.Event, interval_s: float = 0.5) -> None:
        """Renew or take the lease, then fence brokers whose session lapsed; repeat. The apps'
        jobs (applying AlterReplicaState reports, elections, snapshots) run in a thread of
        their own (`run_jobs_forever`), so that a job's commits never hold up a fencing round.

        How late each round decides is measured, from when it was due (the end of the round
        before, plus the interval) to when it holds the controller (its scheduling and its wait
        behind a commit under way): a starved or paused controller's lateness is its own, never
        the brokers' (controlplane.runtime.ingress), and the worst of it is the timer's lag
        (`timer_lag`) that bounded commits keep small."""
        jobs = threading.Thread(
            target=self.run_jobs_forever, args=(stop, interval_s), name="controller-jobs"
        )
        jobs.daemon = True
        jobs.start()
        due: float | None = None
        while not stop.is_set():
            try:
                close_old_connections()
                self.fence_round(due)
            except Exception:
                logger.exception("controller timer failed")
            wait_s = self.next_round_in_s(interval_s)
            due = time.monotonic() + wait_s
            if self._wait_for_next_round(stop, wait_s):
                due = time.monotonic()  # woken early: due now, not late

    def _wait_for_next_round(self, stop: threading.Event, wait_s: float) -> bool:
        """Sleep until the next round is due, `stop`, or a commit left moves pending (True);
        meanwhile, write the tables a bounded change left for later once its slices stopped
        coming."""
        deadline = time.monotonic() + wait_s
        woken = False
        while not stop.is_set():
            self._write_tables_behind(stop, deadline)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if self.timer_wakeup.wait(min(left, STOP_POLL_S, TABLES_BEHIND_POLL_S)):
                woken = True
                break
        self.timer_wakeup.clear()
        return woken

    def _write_tables_behind(self, stop: threading.Event, deadline: float) -> None:
        """One commit's tables per turn of the controller (heartbeats get in between), until
        none wait, `stop`, or the next round is due."""
        try:
            while (
                not stop.is_set()
                and time.monotonic() < deadline
                and not self.timer_wakeup.is_set()
                and self.write_tables_behind()
            ):
                pass
        except Exception:
            logger.exception("the controller timer could not write the tables left for later")

    def next_round_in_s(self, interval_s: float) -> float:
        """Now while moves are left over (other events go in between: the lock is fair), else
        when the next session lapses (as Kafka schedules it), `interval_s` at the latest."""
        if self.moves_pending:
            return 0.0
        if self.next_session_expiry_ms is None:
            return interval_s
        until_s = (self.next_session_expiry_ms - now_ms()) / 1000
        return min(interval_s, max(MIN_TIMER_WAIT_S, until_s))

    def run_jobs_forever(self, stop: threading.Event, interval_s: float = 0.5) -> None:
        while not stop.wait(interval_s):
            try:
                close_old_connections()
                self.run_jobs()
            except Exception:
                logger.exception("controller jobs failed")

    def tick(self) -> None:
        """One round of the timer and of the jobs, in this thread (tests, tools), and every
        table left for later written."""
        self.fence_round()
        self.run_jobs()
        self.write_tables_behind(all_of_them=True)

    def fence_round(self, due: float | None = None) -> None:
        """Fence the stale brokers (or hold off); `due` (monotonic) is when this round was due,
        for its lateness."""
        self.measure_ingress(now_ms())
        with self._lock:  # reentrant: the event's handling takes it again
            if due is not None:
                late_ms = max(0.0, (time.monotonic() - due) * 1000)
                self.timer_lag.record(late_ms)
                self.ingress_lag.record("the controller's timer", late_ms, now_ms())
                if late_ms >= TIMER_LATE_LOGGED_MS:
                    logger.info("the fencing round ran %d ms late", late_ms)
            payload = {"continue_moves": self.moves_pending}
            response = self.handle(ControllerEvent("FenceStaleBrokers", payload)).response
            if response.get("error_code") == 0:
                self.moves_pending = bool(response.get("moves_pending"))
                self.next_session_expiry_ms = response.get("next_session_expiry_ms")
        if response.get("fenced_brokers"):
            logger.info("fenced brokers whose session lapsed: %s", response["fenced_brokers"])
        if "held_off" in response:
            self.fencing_watch.observe(response, now_ms())

    def run_jobs(self) -> None:
        """The apps' periodic work on the active controller (apps register theirs in ready())."""
        if self.is_active():
            for job in TIMER_JOBS:
                job(cast("ControllerRuntime", self))

    def measure_ingress(self, now: int) -> None:
        """What the fencing rule needs to know of the controller's own hearing: a store that
        lost its sessions (the brokers were not silent: they get a full session from now), and
        the worst ingress lag within the last session, over its bound."""
        if self.sessions.mark_sessions():
            self.sessions_lost_ms = now
            if self.activated_ms:
                logger.warning(
                    "the session store lost its sessions (restarted?): every broker not heard "
                    "since gets a full session from now"
                )
        reports = listener_lags()
        listeners = reports.all()
        reports.forget(stale_reports(listeners, now_ms=now))
        self.ingress_overload = ingress_overload(
            own=self.ingress_lag.worst(now),
            listeners=listeners,
            now_ms=now,
            window_ms=self.session_timeout_ms,
            bound_ms=settings.CP_FENCING_OVERLOAD_LAG_MS,
        )
