"""Log directories (JBOD) failing and coming back, as a broker reports them (KIP-589).

Each broker has `log_dirs` log directories (uuids kept across incarnations and registered with
each) and keeps each of its replicas in one of them: directory `crc32("topic:partition") %
log_dirs`, the same on every broker (`replicas_in`). Then, as a real broker would:

* `fail(id, dir)`: the directory fails. The broker names every replica it holds there in ONE
  AlterReplicaState (`POST /internal/v1/alter-replica-state`), retried with the same request id
  and backoff on 503 NOT_CONTROLLER, 5xx and connection errors, sent again with its new epoch
  when it re-registered meanwhile (STALE_BROKER_EPOCH) or later restarts with the directory still
  failed; its heartbeats report the directory in `offline_log_dirs`. It waits until the metadata
  shows the replicas offline.
* `repair(id, dir)`: the directory works again. For every partition whose replica there is
  offline or out of the ISR, the partition's current leader (when it is one of this simulator's
  brokers) sends AlterPartition taking the replica back into the ISR, with the leader and
  partition epochs the follower knows; FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION and other
  answers of stale metadata make it catch up with the log and try again. It waits until every
  replica there is back in the ISR and no longer offline. A partition with no leader cannot take
  a replica back (only a new incarnation of the broker clears its offline replicas then).
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from controlplane.controller.errors import Errors
from controlplane.controller.records import NO_LEADER
from simulator.aio import wait_until
from simulator.client import (
    ALTER_PARTITION_PATH,
    ALTER_REPLICA_STATE_PATH,
    Backoff,
    ControllerClient,
    Refused,
    Transient,
    dumps,
    error_name,
    until_answered,
)
from simulator.follower import MetadataFollower
from simulator.lifecycle import Lifecycle
from simulator.logdir_requests import (
    LogDirResult,
    TopicPartition,
    alter_partition_request,
    alter_replica_state_request,
    log_dir_summary,
    rejoin_outcome,
    still_out_of_isr,
    take_report_answer,
)
from simulator.metadata import PartitionView
from simulator.state import (
    BrokerState,
    LiveBroker,
    SimulatorCounters,
    logger,
    progress_reporter,
)

# AlterPartition answers that mean "your metadata is stale": catch up with the log, try again.
STALE_METADATA_ERRORS = frozenset(
    {
        Errors.FENCED_LEADER_EPOCH,
        Errors.INVALID_UPDATE_VERSION,
        Errors.INVALID_REQUEST,  # the sender is not the leader (any more)
        Errors.NOT_CONTROLLER,  # epochs from the future: the controller lags behind
        Errors.NOT_LEADER_OR_FOLLOWER,
    }
)
_STALE_NAMES = frozenset(error.name for error in STALE_METADATA_ERRORS)
# How long a restarted broker takes at most to report its still-failed directories again.
_REREPORT_TIMEOUT_S = 60.0

Say = Callable[[str], None]


class LogDirs:
    """Failing and repairing the brokers' log directories."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        client: ControllerClient,
        follower: MetadataFollower,
        counters: SimulatorCounters,
        *,
        per_broker: int,
    ) -> None:
        self.lifecycle = lifecycle
        self.client = client
        self.follower = follower
        self.counters = counters
        self.per_broker = per_broker

    # --- where replicas live --------------------------------------------------------------------
    def index_of(self, topic: str, partition: int) -> int:
        """Which of a broker's log directories holds its replica of a partition."""
        return zlib.crc32(f"{topic}:{partition}".encode()) % self.per_broker

    def replicas_in(self, broker_id: int, dir_index: int) -> list[PartitionView]:
        """The partitions whose replica on `broker_id` lives in its log dir `dir_index`."""
        _check_dir(self.lifecycle.get(broker_id), dir_index)
        return [
            view
            for view in self.follower.view.partitions(broker_id=broker_id)
            if self.index_of(view.topic, view.partition) == dir_index
        ]

    # --- a directory fails ----------------------------------------------------------------------
    async def fail(
        self,
        broker_id: int,
        dir_index: int,
        *,
        timeout_s: float,
        wait_applied: bool,
        progress: Callable[[str], None] | None,
    ) -> LogDirResult:
        broker = self.lifecycle.get(broker_id)
        _check_dir(broker, dir_index)
        say = progress_reporter(progress)
        async with broker.dir_lock:
            started = time.monotonic()
            deadline = started + timeout_s
            _mark_failed(broker, dir_index)
            say(
                f"broker {broker_id}: log dir {dir_index} ({broker.state.log_dirs[dir_index]}) "
                "failed; reporting its replicas offline (AlterReplicaState)"
            )
            result = await self._report_offline(broker, dir_index, deadline, say)
            if result.error is None and wait_applied and result.done:
                await self._await_offline(result, deadline, say)
            elif result.error is None and not result.done:
                result.applied = True  # nothing was there to report
            result.elapsed_s = time.monotonic() - started
            say(log_dir_summary(result))
            return result

    async def _await_offline(self, result: LogDirResult, deadline: float, say: Say) -> None:
        say(
            f"broker {result.broker_id}: the controller accepted {len(result.done)} of "
            f"{len(result.partitions)} replicas; waiting for the metadata to show them offline"
        )
        result.applied = await wait_until(
            lambda: self._all_offline(result.broker_id, result.done),
            max(0.0, deadline - time.monotonic()),
        )
        if not result.applied:
            result.error = "timed out waiting for the controller to apply the report"

    def _all_offline(self, broker_id: int, named: Sequence[TopicPartition]) -> bool:
        for topic, index in named:
            view = self.follower.view.partition(topic, index)
            if view is not None and broker_id not in view.offline_replicas:
                return False
        return True

    def on_registered(self, broker: LiveBroker) -> None:
        """A restarted broker whose directory is still broken reports its replicas there offline
        again: registering afresh cleared the controller's offline marks."""
        if broker.state.failed_log_dirs:
            self.lifecycle.spawn(
                self._report_after_registration(broker), f"report-{broker.state.broker_id}"
            )

    async def _report_after_registration(self, broker: LiveBroker) -> None:
        """Once the new incarnation has read the log up to its registration (as a starting
        broker would), each failed directory not yet reported with its epoch is."""
        state = broker.state
        epoch = state.epoch
        await wait_until(lambda: self.follower.offset >= (epoch or 0), _REREPORT_TIMEOUT_S)
        async with broker.dir_lock:
            for dir_index in state.failed_log_dirs:
                if state.epoch is None or broker.reported_epochs.get(dir_index) == state.epoch:
                    continue
                result = await self._report_offline(
                    broker,
                    dir_index,
                    time.monotonic() + _REREPORT_TIMEOUT_S,
                    progress_reporter(None),
                )
                logger.info("%s", log_dir_summary(result))

    async def _report_offline(
        self, broker: LiveBroker, dir_index: int, deadline: float, say: Say
    ) -> LogDirResult:
        """One AlterReplicaState naming every replica in the directory, until accepted; sent
        anew with the next epoch when the broker's epoch turned out stale."""
        state = broker.state
        result = LogDirResult("fail", state.broker_id, dir_index, state.log_dirs[dir_index])
        stale_epoch: int | None = None
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while not state.shut_down:
            if state.epoch is None or state.epoch == stale_epoch:
                if not await self._await_registration(state, stale_epoch, deadline, say):
                    result.error = "timed out waiting for the broker to register"
                    return result
                continue
            epoch = state.epoch
            if await self._report_with(broker, epoch, dir_index, deadline, backoff, result, say):
                return result
            stale_epoch = epoch
        result.error = "the broker is shut down"
        return result

    async def _report_with(
        self,
        broker: LiveBroker,
        epoch: int,
        dir_index: int,
        deadline: float,
        backoff: Backoff,
        result: LogDirResult,
        say: Say,
    ) -> bool:
        """The report with the broker's `epoch`. False when that epoch turned out stale (report
        again once registered anew); True when done: accepted, nothing to report, or failed
        for good (`result.error`)."""
        state = broker.state
        # Name every replica the broker holds there: read the log up to now first.
        await self.follower.sync(_sync_budget(deadline))
        replicas = self.replicas_in(state.broker_id, dir_index)
        result.partitions = [(v.topic, v.partition) for v in replicas]
        result.broker_epoch = epoch
        if not replicas:
            say(
                f"broker {state.broker_id}: log dir {dir_index} holds no replica; nothing to report"
            )
            broker.reported_epochs[dir_index] = epoch
            return True
        request = alter_replica_state_request(state, epoch, dir_index, replicas)
        request_id = self.lifecycle.next_request_id(broker, "ars")
        try:
            answer = await self._send_report(
                broker, request, request_id, deadline, backoff, result, say
            )
        except Transient as error:
            result.error = f"gave up: {error.kind}"
            return True
        except Refused as error:
            result.error = str(error)
            return True
        code = answer.get("error_code")
        if code == Errors.STALE_BROKER_EPOCH:
            self.lifecycle.failed(broker, "AlterReplicaState STALE_BROKER_EPOCH", answer)
            say(
                f"broker {state.broker_id}: epoch {epoch} is stale; reporting again once it "
                "registered anew"
            )
            return False
        if code != Errors.NONE:
            self.lifecycle.failed(broker, f"AlterReplicaState {error_name(code)}", answer)
            result.error = f"{error_name(code)}: {answer.get('error_message')}"
            return True
        backoff.reset()
        take_report_answer(result, answer, request, request_id)
        state.replica_reports += 1
        broker.reported_epochs[dir_index] = epoch
        return True

    async def _await_registration(
        self, state: BrokerState, stale_epoch: int | None, deadline: float, say: Say
    ) -> bool:
        """Wait for a registration to report with: an epoch other than `stale_epoch` (or the
        broker shut down). False at the deadline."""
        say(f"broker {state.broker_id}: waiting for a registration to report with")
        return await wait_until(
            lambda: state.shut_down or state.epoch not in (None, stale_epoch),
            max(0.0, deadline - time.monotonic()),
        )

    async def _send_report(
        self,
        broker: LiveBroker,
        request: dict[str, Any],
        request_id: str,
        deadline: float,
        backoff: Backoff,
        result: LogDirResult,
        say: Say,
    ) -> dict[str, Any]:
        """The AlterReplicaState until answered. The same request id on every retry: the
        controller applies it once. Raises Transient at the deadline, Refused when refused."""
        broker_id = broker.state.broker_id
        body = dumps(request)

        async def attempt() -> dict[str, Any]:
            result.attempts += 1
            answer = await self.client.post(ALTER_REPLICA_STATE_PATH, body, request_id, broker_id)
            if answer.get("error_code") == Errors.NOT_CONTROLLER:
                raise Transient("NOT_CONTROLLER")
            return answer

        def count(error: Transient) -> None:
            self.lifecycle.failed(broker, f"AlterReplicaState {error.kind}")
            self.counters.retries += 1

        def announce(error: Transient, delay: float) -> None:
            say(f"broker {broker_id}: AlterReplicaState: {error.kind}; retrying in {delay:.1f} s")

        try:
            return await until_answered(
                attempt, deadline=deadline, backoff=backoff, on_transient=count, on_retry=announce
            )
        except Refused as error:
            self.lifecycle.failed(broker, f"AlterReplicaState {error}")
            raise

    # --- a directory is repaired ----------------------------------------------------------------
    async def repair(
        self,
        broker_id: int,
        dir_index: int,
        *,
        timeout_s: float,
        progress: Callable[[str], None] | None,
    ) -> LogDirResult:
        broker = self.lifecycle.get(broker_id)
        _check_dir(broker, dir_index)
        say = progress_reporter(progress)
        async with broker.dir_lock:
            started = time.monotonic()
            state = broker.state
            result = LogDirResult(
                "repair", broker_id, dir_index, state.log_dirs[dir_index], broker_epoch=state.epoch
            )
            _mark_repaired(broker, dir_index)
            say(
                f"broker {broker_id}: log dir {dir_index} ({state.log_dirs[dir_index]}) repaired; "
                "its replicas rejoin the ISR through their leaders (AlterPartition)"
            )
            await self._rejoin(broker, dir_index, result, started + timeout_s, say)
            result.elapsed_s = time.monotonic() - started
            say(log_dir_summary(result))
            return result

    async def _rejoin(
        self, broker: LiveBroker, dir_index: int, result: LogDirResult, deadline: float, say: Say
    ) -> None:
        """Rounds of AlterPartition from the leaders until every replica is back in the ISR."""
        joiner = broker.state.broker_id
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        await self.follower.sync(_sync_budget(deadline))
        lagging = self._lagging(joiner, dir_index)
        result.partitions = [(v.topic, v.partition) for v in lagging]
        say(f"broker {joiner}: {len(lagging)} replicas to take back into the ISR")
        while True:
            left = {(v.topic, v.partition) for v in lagging}
            result.done = [tp for tp in result.partitions if tp not in left]
            if not lagging:
                result.pending = {}
                result.applied = True
                return
            waiting, by_leader = self._leaders_to_ask(broker, lagging)
            progressed, stale = await self._ask_leaders(by_leader, joiner, waiting, result)
            result.pending = waiting
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.error = still_out_of_isr(waiting)
                return
            if progressed or stale:
                say(
                    f"broker {joiner}: {len(lagging) - len(waiting)} replicas taken back into "
                    f"the ISR this round, {len(waiting)} to go"
                    + (" (stale metadata: catching up with the log)" if stale else "")
                )
            if not progressed:
                await asyncio.sleep(min(remaining, backoff.next()))
            else:
                backoff.reset()
            await self.follower.sync(_sync_budget(deadline))
            lagging = self._lagging(joiner, dir_index)

    def _lagging(self, joiner: int, dir_index: int) -> list[PartitionView]:
        """The directory's partitions where the joiner is offline or out of the ISR."""
        return [
            view
            for view in self.replicas_in(joiner, dir_index)
            if joiner in view.offline_replicas or joiner not in view.isr
        ]

    def _leaders_to_ask(
        self, broker: LiveBroker, lagging: list[PartitionView]
    ) -> tuple[dict[TopicPartition, str], dict[int, list[PartitionView]]]:
        """Which leader to ask for each partition, and why the others must wait."""
        waiting: dict[TopicPartition, str] = {}
        by_leader: dict[int, list[PartitionView]] = {}
        for view in lagging:
            why_not = self._why_leader_cannot_ask(broker, view.leader)
            if why_not is None:
                by_leader.setdefault(view.leader, []).append(view)
            else:
                waiting[(view.topic, view.partition)] = why_not
        return waiting, by_leader

    def _why_leader_cannot_ask(self, joiner: LiveBroker, leader_id: int) -> str | None:
        leader = self.lifecycle.brokers.get(leader_id)
        if leader_id == NO_LEADER:
            return "no leader (only a restart of the broker clears it)"
        if leader is None:
            return f"leader {leader_id} is not a simulated broker"
        if not leader.state.registered or leader.state.epoch is None:
            return f"leader {leader_id} is not registered"
        if not joiner.state.unfenced:
            return f"broker {joiner.state.broker_id} is fenced: not eligible for the ISR"
        return None

    async def _ask_leaders(
        self,
        by_leader: dict[int, list[PartitionView]],
        joiner: int,
        waiting: dict[TopicPartition, str],
        result: LogDirResult,
    ) -> tuple[bool, bool]:
        """One AlterPartition per leader; what stays out goes to `waiting` with why. Returns
        (some replica got back in, some answer said the metadata is stale)."""
        progressed = stale = False
        for leader_id, views in sorted(by_leader.items()):
            outcome = await self._alter_partition(self.lifecycle.brokers[leader_id], views, joiner)
            result.attempts += 1
            for view in views:
                tp = (view.topic, view.partition)
                error = outcome.get(tp, "no answer")
                if error is None:
                    progressed = True
                else:
                    waiting[tp] = error
                    stale = stale or error in _STALE_NAMES
        return progressed, stale

    async def _alter_partition(
        self, leader: LiveBroker, views: list[PartitionView], joiner: int
    ) -> dict[TopicPartition, str | None]:
        """The leader's AlterPartition adding `joiner` to each partition's ISR, with the epochs
        the follower knows. Per partition: None when the joiner is in the ISR now, else why not.
        """
        state = leader.state
        everything = [(v.topic, v.partition) for v in views]
        body = dumps(alter_partition_request(state, views, joiner))
        request_id = self.lifecycle.next_request_id(leader, "ap")
        try:
            answer = await self.client.post(ALTER_PARTITION_PATH, body, request_id, state.broker_id)
        except (Transient, Refused) as error:
            self.lifecycle.failed(leader, f"AlterPartition {error}")
            return dict.fromkeys(everything, f"AlterPartition {error}")
        code = answer.get("error_code")
        if code != Errors.NONE:
            self.lifecycle.failed(leader, f"AlterPartition {error_name(code)}", answer)
            return dict.fromkeys(everything, error_name(code))
        return rejoin_outcome(answer, joiner, state.broker_id)


def _check_dir(broker: LiveBroker, dir_index: int) -> None:
    count = len(broker.state.log_dirs)
    if not 0 <= dir_index < count:
        raise ValueError(
            f"broker {broker.state.broker_id} has log dirs 0..{count - 1}, not {dir_index}"
        )


def _mark_failed(broker: LiveBroker, dir_index: int) -> None:
    state = broker.state
    if dir_index not in state.failed_log_dirs:
        state.failed_log_dirs = tuple(sorted((*state.failed_log_dirs, dir_index)))
        if state.epoch is not None:
            broker.wake.set()  # heartbeat now, with the directory offline


def _mark_repaired(broker: LiveBroker, dir_index: int) -> None:
    state = broker.state
    if dir_index in state.failed_log_dirs:
        state.failed_log_dirs = tuple(d for d in state.failed_log_dirs if d != dir_index)
        if state.epoch is not None:
            broker.wake.set()  # heartbeat now, without the directory
    broker.reported_epochs.pop(dir_index, None)


def _sync_budget(deadline: float) -> float:
    """How long to wait for the follower before acting: half a second at least, ten at most."""
    return max(0.5, min(10.0, deadline - time.monotonic()))
