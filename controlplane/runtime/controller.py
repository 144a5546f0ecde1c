"""The active controller inside a process: lease, in-memory image, and the event loop.

Like Kafka's QuorumController, the active controller keeps the metadata image in memory, turns
each event into records with the pure core, commits them through the one commit path, and only
then applies them to its image. Events are handled one batch at a time under a lock.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection

from controlplane.controller.dispatch import ReplayFailed
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import BrokerStatus, MetadataDelta, MetadataImage
from controlplane.models import Cluster
from controlplane.runtime.batch import NOTHING_WRITTEN, run_events, second_writes
from controlplane.runtime.batcher import (
    MAX_BATCH_EVENTS,
    EventBatcher,
    FairRLock,
    reset_connection,
)
from controlplane.runtime.bulk import statement_label
from controlplane.runtime.collector import collector_paused, freeze_long_lived
from controlplane.runtime.conversation import (
    AppliedWrite,
    ControllerAnswer,
    ControllerEvent,
    RequestKey,
)
from controlplane.runtime.fencing import FencingHoldOffWatch
from controlplane.runtime.ingress import (
    LagWindow,
    TimerLag,
)
from controlplane.runtime.kraft_log import commit_encoder
from controlplane.runtime.lease import (
    Lease,
    lease_acquire,
    lease_reclaim,
    lease_renew,
    lease_renew_between_commits,
    lease_resign,
    now_ms,
)
from controlplane.runtime.lease_keeper import LeaseKeeper
from controlplane.runtime.metadata_log import (
    DuplicateWrite,
    ProjectionsBehind,
    TablesBehind,
    applied_responses,
    built_ahead,
    commit_started,
    log_commit,
    log_committed,
    projections_built,
    projections_catch_up,
)
from controlplane.runtime.projections import load_image
from controlplane.runtime.request_ids import (
    collisions_announce,
    request_id_collisions,
)
from controlplane.runtime.sessions import SessionStore, session_store
from controlplane.runtime.standby import (
    ACTIVE,
    FOLLOW_MAX_RECORDS,
    STANDBY,
    StandbyImage,
    controller_node_report,
)
from controlplane.runtime.timer import ControllerTimer

logger = logging.getLogger("controlplane.controller")

refusal = ControllerAnswer.refusal


class ControllerRuntime(ControllerTimer):
    def __init__(
        self,
        *,
        node_id: str,
        controller_id: int,
        lease_ms: int,
        session_timeout_ms: int,
        sessions: SessionStore,
        on_activate: Callable[[Lease], None] | None = None,
        on_deactivate: Callable[[Lease], None] | None = None,
    ) -> None:
        self.node_id = node_id
        self.controller_id = controller_id
        self.lease_ms = lease_ms
        self.session_timeout_ms = session_timeout_ms
        self.sessions = sessions
        self.on_activate = on_activate
        self.on_deactivate = on_deactivate
        self.lease: Lease | None = None
        self.image: MetadataImage | None = None
        # Renews the lease from a thread of its own while a batch outlasts a third of it.
        self.lease_keeper = LeaseKeeper(
            lease_ms, lambda lease: lease_renew_between_commits(lease=lease, lease_ms=lease_ms)
        )
        self.activated_ms = 0
        self._lock = FairRLock()  # events, the timer and the jobs take turns, in order
        self._batcher: EventBatcher | None = None
        self.fencing_watch = FencingHoldOffWatch(sessions)
        # The controller's own ingress (queue delay, timer lateness), and what the timer last
        # measured of every ingress for the fencing rule (controlplane.runtime.ingress).
        self.ingress_lag = LagWindow(window_ms=session_timeout_ms)
        self.ingress_overload: str | None = None
        # When the session store was last found to have lost its sessions (Redis restarted):
        # a broker not heard since gets a full session from then, as from an activation.
        self.sessions_lost_ms = 0
        # When the next session lapses if unheard (the last round's answer): the next round.
        self.next_session_expiry_ms: int | None = None
        self.timer_lag = TimerLag()  # how late the fencing rounds decide (bounded commits)
        # Partitions may still have to move off fenced or shutting-down brokers (a commit moves
        # at most CP_MAX_PARTITION_CHANGES_PER_COMMIT): the fencing rounds go on with them at
        # once. Set on activation too: a controller that failed over mid-way finishes them.
        self.moves_pending = True
        # Set when a commit leaves moves pending (an unfencing's elections): the timer's next
        # round runs at once instead of after its interval, as Kafka elects in the unfencing's
        # own batch.
        self.timer_wakeup = threading.Event()
        # The tables' transactions of a bounded change's slices, left for the first commit
        # that is not deferred: the brokers follow the log, and wait for no tables.
        self.tables_behind = TablesBehind()
        self.standby = StandbyImage()  # followed while this controller is not the active one
        self._reported_role, self._reported_ms = "", 0  # the last position reported, and when

    # --- the lease ----------------------------------------------------------------------
    def is_active(self) -> bool:
        return self.lease is not None and self.lease.expires_ms > now_ms()

    def ensure_active(self, take_over_from: tuple[str, int] | None = None) -> Lease:
        """Hold a fresh lease, taking it over when free (or from a holder known dead,
        `take_over_from`); NOT_CONTROLLER otherwise."""
        with self._lock:
            now = now_ms()
            if self.lease is not None and self.lease.expires_ms - now > self.lease_ms // 2:
                return self.lease
            if self.lease is not None:
                renewed = lease_renew(lease=self.lease, lease_ms=self.lease_ms)
                if renewed is not None:
                    self.lease = renewed
                    return renewed
                self._deactivate("the lease lapsed or was taken over")
            acquired = lease_acquire(
                node_id=self.node_id,
                controller_id=self.controller_id,
                lease_ms=self.lease_ms,
                take_over_from=take_over_from,
            )
            if acquired is None:
                raise ApiError(Errors.NOT_CONTROLLER, "This node is not the active controller.")
            return self._activate(acquired)

    def resign(self) -> None:
        with self._lock:
            if self.lease is not None:
                lease_resign(lease=self.lease)
                self._deactivate("resigned")

    def follow_log(self) -> int:
        """A standby's round: keep its image current (controlplane.runtime.standby)."""
        if self.lease is not None:
            return 0
        try:
            replayed = self.standby.follow()
        except DatabaseError:
            raise  # the caller's loop logs it and tries again
        except Exception:  # a standby that cannot follow still takes over, from the tables
            logger.exception("standby could not follow the metadata log; it will load again")
            self.standby = StandbyImage()
            return 0
        # Where it stands, for the lag gauge and its checkpoints: at most every
        # REPORT_EVERY_MS while following, at once after a change of role.
        now = now_ms()
        if self._reported_role != STANDBY or now - self._reported_ms >= REPORT_EVERY_MS:
            self.standby.report(
                node_id=self.node_id,
                controller_id=self.controller_id,
                caught_up=replayed < FOLLOW_MAX_RECORDS,
            )
            self._reported_role, self._reported_ms = STANDBY, now
        return replayed

    def _activate(self, acquired: Lease) -> Lease:
        cluster = Cluster.objects.get(pk=1)
        # A hot standby applies only the records it has not seen; a cold one loads the tables.
        # Both stand where the tables do: when the last controller died between its commit's
        # two transactions, the tables (and so this image) trail the log, and are caught up
        # from it below, once the lease is held again.
        began = time.perf_counter()
        followed = self.standby.take(cluster.cluster_id, cluster.projected_offset)
        image = followed or load_image(cluster.cluster_id, cluster.projected_offset)
        how = "its standby image, caught up" if followed is not None else "the state tables"
        # Loading a large cluster's image may outlast the lease: hold on to it, unless another
        # controller took it over meanwhile (then this one stays standby).
        lease = lease_reclaim(lease=acquired, lease_ms=self.lease_ms)
        if lease is None:
            raise ApiError(
                Errors.NOT_CONTROLLER, "Another controller took over while this one loaded."
            )
        if image.last_offset < cluster.last_offset:
            # As long as a batch (the last controller died between a large commit's two
            # transactions): the lease is kept meanwhile, and renewed as the catch-up's
            # transaction ends.
            with self.lease_keeper.keeping(lease):
                caught_up, lease = projections_catch_up(
                    lease, image, cluster.last_offset, self.lease_ms
                )
            logger.warning(
                "the state tables stood at offset %d, behind the log's %d: caught up from its "
                "%d records",
                cluster.projected_offset,
                cluster.last_offset,
                caught_up,
            )
        self.image = image
        self.moves_pending = True
        freeze_long_lived()
        self.sessions.replace_mirror(b.status for b in self.image.all_brokers())
        self.lease = lease
        self.activated_ms = now_ms()
        logger.info(
            "controller %s active with epoch %d at offset %d (image from %s in %d ms)",
            self.node_id,
            lease.epoch,
            cluster.last_offset,
            how,
            (time.perf_counter() - began) * 1000,
        )
        controller_node_report(
            node_id=self.node_id,
            controller_id=self.controller_id,
            role=ACTIVE,
            last_offset=cluster.last_offset,
        )
        self._reported_role = ACTIVE
        if self.on_activate is not None:
            self.on_activate(lease)
        return lease

    def _deactivate(self, why: str) -> None:
        lease, self.lease, self.image = self.lease, None, None
        self.tables_behind.drop()  # the next controller catches the tables up from the log
        if lease is not None:
            logger.warning("controller %s epoch %d inactive: %s", self.node_id, lease.epoch, why)
            if self.on_deactivate is not None:
                self.on_deactivate(lease)

    # --- events -------------------------------------------------------------------------
    def handle(self, event: ControllerEvent) -> ControllerAnswer:
        return self.handle_batch([event])[0]

    def handle_batch(
        self,
        events: Sequence[ControllerEvent],
        on_logged: EarlyAnswers | None = None,
        *,
        more_follows: bool = False,
        answered_from_the_log: bool = False,
    ) -> list[ControllerAnswer]:
        """Handle `events` as one batch with one commit; answers each. With `on_logged`, the
        events answered once the log holds their records (`answered_once_logged`) are handed
        to it then, by their index in the batch, before the state tables follow. With
        `more_follows`, the caller sends another slice of the same change right after: the
        commit is shortened at the cost of the log's part (`log_commit`), and its tables wait
        (`TablesBehind`). With `answered_from_the_log`, the caller reads nothing of the tables
        for these answers (a bounded change's slices, the last one too): they may wait."""
        with self._lock:
            try:
                lease = self.ensure_active()
            except ApiError as error:
                return [refusal(error) for _ in events]
            except DatabaseError:
                logger.exception("controller could not reach the database")
                return [refusal(_unavailable()) for _ in events]
            assert self.image is not None
            with collector_paused(), self.lease_keeper.keeping(lease):
                return self._process(
                    lease, self.image, events, on_logged, (more_follows, answered_from_the_log)
                )

    def _process(
        self,
        lease: Lease,
        image: MetadataImage,
        events: Sequence[ControllerEvent],
        on_logged: EarlyAnswers | None = None,
        follows: tuple[bool, bool] = (False, False),
    ) -> list[ControllerAnswer]:
        started = time.perf_counter()
        more_follows, answered_from_the_log = follows
        now = now_ms()
        self._note_queue_delay(events, now)
        prior = _applied_responses(events)  # every principal's writes of the batch's ids
        collisions = request_id_collisions(events, prior)
        failed: dict[int, ControllerAnswer] = {}
        tables_behind = False
        while True:
            delta, contacts, answers, writes = self._run(image, events, now, prior, failed)
            handled = time.perf_counter()
            statements = _StatementCounter()
            deferred = self._defers_tables(events, more_follows, answered_from_the_log)
            try:
                with connection.execute_wrapper(statements):
                    self.lease = log_commit(
                        lease=lease,
                        delta=delta,
                        writes=writes,
                        lease_ms=self.lease_ms,
                        kafka_encoder=commit_encoder(image),
                        on_logged=None
                        if on_logged is None
                        else functools.partial(_answer_logged, on_logged, events, answers, now),
                        # a bounded change's next slice (a fencing round's) comes at once
                        more_follows=more_follows or _moves_pending(answers),
                        behind=self.tables_behind,
                        defer_tables=deferred,
                    )
                break
            except ProjectionsBehind as behind:
                # The log holds the batch: its answers stand. The tables follow when the
                # image is loaded again (the next controller to take over catches them up).
                logger.error("committed to the log, not the tables; reloading: %s", behind)
                tables_behind = True
                break
            except DuplicateWrite as duplicate:
                # Never a silent second write: the batch starts over without those events.
                logger.error("refused a second write of a request id: %s", duplicate.message)
                refused = second_writes(writes, duplicate)
                if not refused.keys() - failed.keys():
                    raise  # nothing left to refuse: a bug, never a loop
                failed.update(refused)
            except ApiError as error:
                # Fenced (nothing written), or CommitOutcomeUnknown: REQUEST_TIMED_OUT, never
                # "not applied" for a commit that may have been (the image reloads either way).
                self._deactivate(error.message or error.error.name)
                return [refusal(error) for _ in events]
            except (DatabaseError, psycopg.Error):
                # Before the COMMIT: the transaction rolled back, nothing of the batch written.
                logger.exception("commit failed; reloading the image on the next event")
                self._deactivate("commit failed")
                return [refusal(_unavailable()) for _ in events]
            except Exception:
                logger.exception("commit failed (rolled back); reloading the image")
                self._deactivate("commit failed")
                return [refusal(NOTHING_WRITTEN) for _ in events]
        if deferred:
            self._note_slices(more_follows, answered_from_the_log)
        collisions_announce(collisions)  # committed: the senders' retries will not collide again
        answers = [
            dataclasses.replace(answer, handled_ms=now, ahead_of_tables=deferred)
            for answer in answers
        ]
        if tables_behind:
            self._deactivate("the state tables could not follow the log")
            return answers
        committed = time.perf_counter()
        image.apply(delta)
        if len(delta.replayed) >= LARGE_COMMIT_RECORDS:
            gc.freeze()  # the image grew: keep the collector off it (see freeze_long_lived)
            transaction_began = commit_started.get()
            logged = log_committed.get()
            logger.info(
                "committed %d records of %d event(s): handled in %d ms, encoded in %d ms, "
                "the log's transaction of %d ms (the brokers woken), the tables' of %d ms, "
                "%d SQL statements, image applied in %d ms (%s)",
                len(delta.replayed),
                len(events),
                (handled - started) * 1000,
                (transaction_began - handled) * 1000,
                (logged - transaction_began) * 1000,
                (committed - logged) * 1000,
                statements.count,
                (time.perf_counter() - committed) * 1000,
                "; ".join(
                    [
                        *_queue_wait(events, now),
                        *_left_for_later(self.tables_behind, deferred),
                        f"{built_ahead.get()} of the tables' statements built during the log's",
                        f"projections built in {projections_built.get() * 1000:.0f} ms while "
                        "the statements ran",
                        *statements.timings,
                    ]
                ),
            )
        if _moves_pending(answers):
            self.moves_pending = True
            self.timer_wakeup.set()
        for broker_id in contacts:
            self.sessions.touch(broker_id, now_ms=now, metadata_offset=-1)
        if delta.changed_brokers:
            self._mirror(
                {i: None if b is None else b.status for i, b in delta.changed_brokers.items()}
            )
        return answers

    def _defers_tables(
        self,
        events: Sequence[ControllerEvent],
        more_follows: bool,
        answered_from_the_log: bool,
    ) -> bool:
        """Whether this batch's tables' transaction waits (`TablesBehind`): while a bounded
        change's slices commit and nobody waits for the tables to answer. The caller vouches
        for the slices it sends (`more_follows`, `answered_from_the_log`: their answers are its
        own); other batches wait when every event is answered from the log alone (heartbeats,
        the timer's rounds, writes a broker forwarded) and they come while tables wait
        already. The timer's own bounded changes (a fencing's or a controlled shutdown's moves)
        write their tables as they go: how soon the API shows a cluster converging after a mass
        fencing depends on them (`make bench-converge`). Any other batch
        writes the tables behind before its own: an admin write, a registration, a heartbeat
        when no change is under way, anything answered from the tables."""
        if settings.CP_TABLES_BEHIND_MAX_RECORDS <= 0:
            return False
        if more_follows or answered_from_the_log:
            return True
        if not all(_answered_from_the_log(event) for event in events):
            return False
        return bool(self.tables_behind)

    def write_tables_behind(self, *, all_of_them: bool = False) -> bool:
        """The timer's turn at the tables left for later: the oldest commit's tables'
        transaction, in a turn of the controller of its own (`all_of_them`: every one), when
        they are due (`_tables_due`). Answers whether more are due now."""
        behind = self.tables_behind
        if not (all_of_them or self._tables_due()):
            return False
        with self._lock:
            lease = self.lease
            if lease is None or not behind:
                return False
            try:
                with collector_paused(), self.lease_keeper.keeping(lease):
                    self.lease = behind.write(
                        lease, self.lease_ms, commits=None if all_of_them else 1
                    )
            except ProjectionsBehind as failed:
                logger.error("the tables could not follow the log; reloading: %s", failed)
                self._deactivate("the state tables could not follow the log")
                return False
            if not behind and self.image is not None:
                logger.info(
                    "the tables left for later caught up with the log at offset %d",
                    self.image.last_offset,
                )
            return self._tables_due()

    def _tables_due(self) -> bool:
        """Whether the timer writes the tables left for later now: once no slice is promised,
        or a promised one did not come within `CP_TABLES_BEHIND_IDLE_MS`, or while more than
        `CP_TABLES_BEHIND_MAX_RECORDS` records wait (then a slice and a commit's tables take
        turns)."""
        behind = self.tables_behind
        return bool(behind) and (
            not behind.slice_promised
            or behind.idle_ms() >= settings.CP_TABLES_BEHIND_IDLE_MS
            or behind.records > settings.CP_TABLES_BEHIND_MAX_RECORDS
        )

    def _note_slices(self, more_follows: bool, answered_from_the_log: bool) -> None:
        """Whether the sender of the slices promised another after this deferred batch
        (`more_follows`), until its last slice; a batch between two slices (heartbeats)
        changes nothing."""
        if more_follows:
            self.tables_behind.slice_promised = True
        elif answered_from_the_log:
            self.tables_behind.slice_promised = False

    def _run(
        self,
        image: MetadataImage,
        events: Sequence[ControllerEvent],
        now: int,
        prior: dict[RequestKey, ControllerAnswer],
        failed: dict[int, ControllerAnswer],
    ) -> tuple[MetadataDelta, list[int], list[ControllerAnswer], list[AppliedWrite]]:
        """The batch's records and answers, leaving out the events in `failed`."""
        while True:
            env = ControllerEnv(
                now_ms=now,
                activated_ms=max(self.activated_ms, self.sessions_lost_ms),
                sessions=self.sessions.snapshot(),
                session_timeout_ms=self.session_timeout_ms,
                static_configs=settings.CP_STATIC_BROKER_CONFIGS,
                ingress_overload=self.ingress_overload,
                fencing_hold_off_since_ms=self.fencing_watch.since_ms,
                fencing_hold_off_max_ms=settings.CP_FENCING_HOLD_OFF_MAX_MS,
                fencing_hold_off_min_brokers=settings.CP_FENCING_HOLD_OFF_MIN_BROKERS,
                max_partition_changes=settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT,
                max_shutdown_changes=settings.CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT,
            )
            try:
                return run_events(image, events, env, now=now, prior=prior, failed=failed)
            except ReplayFailed as failure:
                # Never half-applied: the batch starts over from the image without that event.
                logger.error("refused event %d of the batch: %s", failure.index, failure)
                failed[failure.index] = refusal(
                    ApiError(
                        Errors.UNKNOWN_SERVER_ERROR,
                        "The controller could not apply this request; nothing of it was written.",
                    )
                )

    def _note_queue_delay(self, events: Sequence[ControllerEvent], now: int) -> None:
        """How long the oldest of these events waited for the controller since it was queued
        (the channel's or the batcher's `queued_ms`; the timer's own events carry none)."""
        oldest = _oldest_queued(events)
        if oldest is not None:
            self.ingress_lag.record("the controller's queue", now - oldest, now)

    def _mirror(self, changed: dict[int, BrokerStatus | None]) -> None:
        try:
            self.sessions.mirror(changed)
        except Exception:  # the mirror is a cache: heartbeats fall back to the brokers table
            logger.warning("could not mirror broker status to the session store", exc_info=True)

    # --- the event queue ------------------------------------------------------------------
    def submit(self, event: ControllerEvent) -> ControllerAnswer:
        """Handle an event together with whatever else is waiting (one batch, one commit).

        Consumers of the controller queue run in many threads; each hands its event to the one
        thread that turns waiting events into a batch, as Kafka's QuorumController does with
        its event queue. Falls back to handling the event alone when no batcher runs.
        """
        batcher = self._batcher
        if batcher is None:
            return self.handle(event)
        return batcher.submit(event)

    def start_batching(self, *, max_batch: int = MAX_BATCH_EVENTS) -> None:
        with self._lock:
            if self._batcher is None:
                self._batcher = EventBatcher(self.handle_batch, max_batch=max_batch)

    def start_channel(self, url: str, key_prefix: str) -> threading.Thread:
        """Serve the request channel (controlplane.runtime.channel): the active controller only."""
        from controlplane.runtime.channel import ChannelConsumer

        def handle_batch(
            events: Sequence[ControllerEvent], on_logged: EarlyAnswers | None = None
        ) -> list[ControllerAnswer]:
            answers = self.handle_batch(events, on_logged)
            if connection.errors_occurred:
                reset_connection()
            return answers

        return ChannelConsumer(
            url, handle_batch, key_prefix=key_prefix, on_failure=reset_connection
        ).start()

    def stop_batching(self) -> None:
        batcher, self._batcher = self._batcher, None
        if batcher is not None:
            batcher.stop()


# The controller's own rounds and the brokers' heartbeats: answered from the image and the log
# (a broker reads the metadata through the log), never from the state tables.
ANSWERED_FROM_THE_LOG = frozenset({"BrokerHeartbeat", "FenceStaleBrokers"})


def _answered_from_the_log(event: ControllerEvent) -> bool:
    return event.api in ANSWERED_FROM_THE_LOG or event.answered_once_logged


def _moves_pending(answers: Sequence[ControllerAnswer]) -> bool:
    return any(answer.notes.get("moves_pending") for answer in answers)


LARGE_COMMIT_RECORDS = 1000  # commits this large are logged with their timings


class _StatementCounter:
    """Counts the SQL statements of a commit (they must not grow with its size)."""

    def __init__(self) -> None:
        self.count = 0
        self.timings: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.count += 1
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self.timings.append(f"{statement_label(sql)}={elapsed:.0f}ms")


# The answers of a batch given as soon as the log holds it, by the events' index in the batch.
EarlyAnswers = Callable[[Mapping[int, ControllerAnswer]], None]


def _oldest_queued(events: Sequence[ControllerEvent]) -> int | None:
    """When the batch's oldest event was queued for the controller (on the request channel or
    through the batcher; the timer's own events carry no `queued_ms`)."""
    queued = [e.queued_ms for e in events if e.queued_ms is not None]
    return min(queued) if queued else None


def _queue_wait(events: Sequence[ControllerEvent], now: int) -> list[str]:
    """For the log line of a large commit: how long its oldest event waited for the
    controller, where an answer's time went before the controller handled it."""
    oldest = _oldest_queued(events)
    return [] if oldest is None else [f"queued {now - oldest} ms before the controller took it"]


def _left_for_later(behind: TablesBehind, deferred: bool) -> list[str]:
    """For the log line of a large commit: the tables' transactions it left for later."""
    if not deferred:
        return []
    return [f"its tables left for later with {len(behind) - 1} commit(s) before it"]


def _answer_logged(
    on_logged: EarlyAnswers,
    events: Sequence[ControllerEvent],
    answers: Sequence[ControllerAnswer],
    now: int,
) -> None:
    """Hand `on_logged` the answers of the events answered once the log holds them."""
    early = {
        i: dataclasses.replace(answers[i], handled_ms=now, ahead_of_tables=True)
        for i, event in enumerate(events)
        if event.answered_once_logged
    }
    if not early:
        return
    try:
        on_logged(early)
    except Exception:  # they are answered with the rest, once the tables follow
        logger.exception("could not answer %d write(s) once logged", len(early))


def _applied_responses(events: Sequence[ControllerEvent]) -> dict[RequestKey, ControllerAnswer]:
    """The stored answers of the batch's request ids, every principal's (one query)."""
    return applied_responses([e.context.request_id for e in events if e.remembered])


def _unavailable() -> ApiError:
    return ApiError(Errors.NOT_CONTROLLER, "The controller cannot reach the metadata store.")


REPORT_EVERY_MS = 500  # a standby's position reports: the lag gauge is at most this stale


_runtime: ControllerRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> ControllerRuntime:
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = ControllerRuntime(
                    node_id=settings.CP_NODE_ID,
                    controller_id=settings.CP_CONTROLLER_ID,
                    lease_ms=settings.CP_LEASE_MS,
                    session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
                    sessions=session_store(),
                )
    return _runtime


def tune_controller_process() -> None:
    """Settings of a process whose work is the active controller's (run_controller).

    The GIL switch interval (`CP_CONTROLLER_GIL_SWITCH_INTERVAL_MS`): while a commit's thread
    builds the next statement's rows, its writer thread (controlplane.runtime.write_behind)
    needs the GIL back each time PostgreSQL answers, and waits out the switch interval for it.
    A 4,001-record controlled shutdown commit: a transaction of 132-135 ms at 1 ms, 139-163 at 5."""
    sys.setswitchinterval(settings.CP_CONTROLLER_GIL_SWITCH_INTERVAL_MS / 1000)


def reset_runtime() -> None:
    """Forget this process's controller (tests start each case from a clean database)."""
    global _runtime
    if _runtime is not None:
        _runtime.stop_batching()
    _runtime = None
