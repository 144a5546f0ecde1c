"""Each simulated broker's lifecycle, as Kafka's BrokerLifecycleManager runs it against KRaft.

* it registers (`POST /internal/v1/broker-registration`) with a fresh incarnation id and starts
  fenced; the answer's `broker_epoch` is the offset of its RegisterBrokerRecord;
* it heartbeats every `heartbeat_interval_ms` with `current_metadata_offset` = how far the
  follower has read the metadata log, `want_fence` while it has not read up to its own epoch,
  and asks to be unfenced (`want_fence=false`) once it has; it heartbeats at once when the log
  reaches its epoch;
* on STALE_BROKER_EPOCH (77) it registers again as a new incarnation (Kafka restarts the broker);
* on DUPLICATE_BROKER_REGISTRATION it retries until the old incarnation's session lapses;
* HTTP 503 (NOT_CONTROLLER, honouring `Retry-After`), 504, other 5xx, timeouts and connection
  errors are retried with jittered exponential backoff (at most one heartbeat interval for
  heartbeats, so a transient blip never costs a session);
* controlled shutdown: heartbeats with `want_shut_down=true` until `should_shut_down`, then stop.

Per-broker controls, all from the simulator's event loop: `stop_heartbeats(id)` (the broker goes
silent; the controller fences it once its session lapses), `resume(id)`, `await shutdown(id)`
(controlled shutdown), `await shutdown_all()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from controlplane.controller.brokers.control import BROKER_POD, CANARY_BROKER_POD
from controlplane.controller.errors import Errors
from simulator.aio import cancel_until_done
from simulator.client import (
    HEARTBEAT_PATH,
    REGISTRATION_PATH,
    Backoff,
    ControllerClient,
    Refused,
    Transient,
    dumps,
    error_name,
)
from simulator.follower import MetadataFollower
from simulator.state import (
    BrokerPhase,
    BrokerState,
    LiveBroker,
    SimulatorCounters,
    logger,
)


def new_brokers(
    *,
    first_id: int,
    brokers: int,
    canary: int,
    racks: int,
    log_dirs: int,
    software_version: str | None = None,
    canary_software_version: str | None = None,
) -> dict[int, LiveBroker]:
    """`brokers` regular brokers then `canary` canary ones (pod `canary-broker`, KIP-1095), ids
    from `first_id`, racks `rack-0 .. rack-{racks-1}` round robin over the ids (0: no rack),
    each with `log_dirs` log directories whose uuids it keeps across incarnations. They report
    `software_version` (the canary ones `canary_software_version`, by default the same) at
    registration; None reports none."""
    made: dict[int, LiveBroker] = {}
    for index in range(brokers + canary):
        broker_id = first_id + index
        is_regular = index < brokers
        made[broker_id] = LiveBroker(
            BrokerState(
                broker_id=broker_id,
                pod=BROKER_POD if is_regular else CANARY_BROKER_POD,
                rack=f"rack-{index % racks}" if racks else None,
                incarnation_id=str(uuid.uuid4()),
                software_version=software_version
                if is_regular or canary_software_version is None
                else canary_software_version,
                log_dirs=tuple(str(uuid.uuid4()) for _ in range(log_dirs)),
            )
        )
    return made


class Lifecycle:
    """Every broker's register/heartbeat loop, the controls, and the bookkeeping the other
    concerns (log dirs, forwarding) share: failures, request ids, background tasks."""

    def __init__(
        self,
        brokers: dict[int, LiveBroker],
        client: ControllerClient,
        follower: MetadataFollower,
        counters: SimulatorCounters,
        *,
        heartbeat_interval_s: float,
        listener_host: str,
        listener_base_port: int,
        on_registered: Callable[[LiveBroker], None],
    ) -> None:
        self.brokers = brokers
        self.client = client
        self.follower = follower
        self.counters = counters
        self.heartbeat_interval_s = heartbeat_interval_s
        self.listener_host = listener_host
        self.listener_base_port = listener_base_port
        # Told of every registration (the log-dir concern re-reports failed directories then).
        self.on_registered = on_registered
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def client_id(self) -> str:
        return self.client.client_id

    @property
    def ids(self) -> list[int]:
        return sorted(self.brokers)

    def get(self, broker_id: int) -> LiveBroker:
        try:
            return self.brokers[broker_id]
        except KeyError:
            raise KeyError(f"No simulated broker {broker_id} (have {self.ids}).") from None

    # --- start and stop -------------------------------------------------------------------------
    def start_all(self) -> None:
        # Spread the first registrations a little: a fleet must not arrive in one burst.
        spread = min(self.heartbeat_interval_s, 0.5) if len(self.brokers) > 1 else 0.0
        for broker in self.brokers.values():
            self.launch(broker, first_delay_s=random.uniform(0, spread))

    def launch(self, broker: LiveBroker, *, first_delay_s: float) -> None:
        broker.state.phase = BrokerPhase.STARTING
        broker.task = asyncio.create_task(
            self._run(broker, first_delay_s), name=f"broker-{broker.state.broker_id}"
        )

    def tasks(self) -> list[asyncio.Task[Any]]:
        """Every task running for the brokers: their loops and the background work."""
        running: list[asyncio.Task[Any]] = [b.task for b in self.brokers.values() if b.task]
        return [*running, *self._background]

    def mark_stopped(self) -> None:
        """After close(): brokers that were running stopped without a controlled shutdown."""
        for broker in self.brokers.values():
            if not broker.state.shut_down and broker.state.phase is not BrokerPhase.NOT_RUNNING:
                self.finish(broker, clean=False)

    def spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.create_task(coroutine, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- controls -------------------------------------------------------------------------------
    def stop_heartbeats(self, broker_id: int) -> None:
        broker = self.get(broker_id)
        broker.state.silent = True
        logger.info("broker %d: heartbeats stopped", broker_id)

    def resume(self, broker_id: int) -> None:
        broker = self.get(broker_id)
        if broker.state.shut_down:
            self._restart(broker)
            return
        broker.state.silent = False
        broker.wake.set()
        logger.info("broker %d: heartbeats resumed", broker_id)

    def _restart(self, broker: LiveBroker) -> None:
        """A broker that was shut down starts again as a new incarnation (a restarted broker
        process), registering afresh."""
        state = broker.state
        state.incarnation_id = str(uuid.uuid4())
        state.epoch = None
        state.fenced = None
        state.caught_up = False
        state.silent = False
        state.want_shut_down = False
        state.clean_shutdown = None
        broker.done = asyncio.Event()
        broker.awaiting_offset = None
        self.launch(broker, first_delay_s=0.0)
        logger.info("broker %d: restarted as incarnation %s", state.broker_id, state.incarnation_id)

    async def shutdown(self, broker_id: int, timeout_s: float | None) -> bool:
        broker = self.get(broker_id)
        if broker.state.shut_down:
            return bool(broker.state.clean_shutdown)
        if broker.task is None or broker.task.done():  # never started: nothing to hand over
            self.finish(broker, clean=True)
            return True
        broker.state.want_shut_down = True
        broker.state.silent = False
        broker.wake.set()
        try:
            await asyncio.wait_for(broker.done.wait(), timeout_s)
        except TimeoutError:
            logger.warning("broker %d: controlled shutdown timed out; stopping", broker_id)
            if broker.task is not None:
                await cancel_until_done([broker.task])
            self.finish(broker, clean=False, error="controlled shutdown timed out")
        return bool(broker.state.clean_shutdown)

    async def deploy(self, broker_id: int, version: str, timeout_s: float | None) -> bool:
        """Deploy `version` to the broker as an operator would: controlled shutdown, then start
        again as a new incarnation that reports `version`. True when the shutdown was clean."""
        broker = self.get(broker_id)
        clean = await self.shutdown(broker_id, timeout_s)
        broker.state.software_version = version
        self._restart(broker)
        return clean

    async def shutdown_all(self, timeout_s: float | None) -> dict[int, bool]:
        ids = self.ids
        results = await asyncio.gather(*(self.shutdown(i, timeout_s) for i in ids))
        return dict(zip(ids, results, strict=True))

    # --- bookkeeping shared with the other concerns ---------------------------------------------
    def failed(self, broker: LiveBroker, kind: str, answer: dict[str, Any] | None = None) -> None:
        """Count a failed call of the broker's; `kind` (before any ':') names it in the totals."""
        state = broker.state
        state.errors += 1
        message = answer.get("error_message") if answer else None
        state.last_error = f"{kind}: {message}" if message else kind
        self.counters.errors += 1
        self.counters.errors_by_kind[kind.split(":")[0]] += 1
        logger.debug("broker %d: %s", state.broker_id, state.last_error)

    def finish(self, broker: LiveBroker, *, clean: bool, error: str | None = None) -> None:
        state = broker.state
        state.clean_shutdown = clean
        state.phase = BrokerPhase.NOT_RUNNING
        state.silent = False
        broker.awaiting_offset = None
        if error:
            state.last_error = error
        broker.done.set()
        logger.info(
            "broker %d: shut down (%s)",
            state.broker_id,
            "released by the controller" if clean else error or "stopped",
        )

    def next_request_id(self, broker: LiveBroker, kind: str) -> str:
        broker.request_seq += 1
        state = broker.state
        return f"{self.client_id}-b{state.broker_id}-{kind}-{state.epoch}-{broker.request_seq}"

    def wake_caught_up(self, offset: int) -> None:
        """The follower reached `offset`: brokers waiting for it heartbeat at once."""
        for broker in self.brokers.values():
            if broker.awaiting_offset is not None and broker.awaiting_offset <= offset:
                broker.awaiting_offset = None
                broker.wake.set()

    # --- the broker loop ------------------------------------------------------------------------
    async def _run(self, broker: LiveBroker, first_delay_s: float) -> None:
        state = broker.state
        backoff = Backoff(
            initial_s=min(0.1, self.heartbeat_interval_s / 4), max_s=self.heartbeat_interval_s
        )
        delay = first_delay_s
        try:
            while not state.shut_down:
                await _sleep(broker, delay)
                if state.silent and not state.want_shut_down:
                    await broker.wake.wait()
                    broker.wake.clear()
                    delay = 0.0
                    continue
                if state.epoch is None:
                    if state.want_shut_down:  # never registered: nothing to hand over
                        self.finish(broker, clean=True)
                        break
                    delay = await self._register(broker, backoff)
                else:
                    delay = await self._heartbeat(broker, backoff)
        except Exception as error:  # a bug here must not vanish inside a task
            logger.exception("broker %d: simulator loop crashed", state.broker_id)
            self.finish(broker, clean=False, error=f"crashed: {error!r}")

    async def _register(self, broker: LiveBroker, backoff: Backoff) -> float:
        """One registration attempt; returns the delay before the broker's next call."""
        state = broker.state
        # The same request id for every retry of this incarnation: applied once.
        request_id = f"{self.client_id}-b{state.broker_id}-reg-{state.incarnation_id[:8]}"
        body = dumps(self._registration(state))
        answer = await self._post_or_delay(broker, backoff, REGISTRATION_PATH, body, request_id)
        if isinstance(answer, float):
            return answer
        code = answer.get("error_code")
        if code == Errors.NONE:
            backoff.reset()
            self._registered(broker, answer)
            return 0.0  # first heartbeat at once, as Kafka's broker does
        self.failed(broker, error_name(code), answer)
        if code == Errors.INCONSISTENT_CLUSTER_ID:
            await self.follower.refresh_cluster_id()
        # DUPLICATE_BROKER_REGISTRATION: the previous incarnation's session has to lapse first.
        return max(backoff.next(), self.heartbeat_interval_s / 2)

    def _registration(self, state: BrokerState) -> dict[str, Any]:
        return {
            "broker_id": state.broker_id,
            "cluster_id": self.follower.cluster_id,
            "incarnation_id": state.incarnation_id,
            "listeners": [
                {
                    "name": "PLAINTEXT",
                    "host": self.listener_host,
                    "port": self.listener_base_port + state.broker_id,
                    "security_protocol": "PLAINTEXT",
                }
            ],
            "rack": state.rack,
            "pod": state.pod,
            "log_dirs": list(state.log_dirs),
            **({"software_version": state.software_version} if state.software_version else {}),
        }

    def _registered(self, broker: LiveBroker, answer: dict[str, Any]) -> None:
        state = broker.state
        state.epoch = int(answer["broker_epoch"])
        state.fenced = True
        state.caught_up = self.follower.offset >= state.epoch
        state.registrations += 1
        self.counters.registrations += 1
        if state.registrations > 1:
            self.counters.re_registrations += 1
        state.last_response = answer
        logger.info(
            "broker %d: registered incarnation %s with epoch %d",
            state.broker_id,
            state.incarnation_id,
            state.epoch,
        )
        self.on_registered(broker)

    async def _heartbeat(self, broker: LiveBroker, backoff: Backoff) -> float:
        """One heartbeat; returns the delay before the broker's next call."""
        state = broker.state
        assert state.epoch is not None
        offset = self.follower.offset
        caught_up = offset >= state.epoch
        body = dumps(
            {
                "broker_id": state.broker_id,
                "broker_epoch": state.epoch,
                "current_metadata_offset": offset,
                "want_fence": not caught_up,
                "want_shut_down": state.want_shut_down,
                "offline_log_dirs": list(state.offline_log_dirs),
            }
        )
        broker.heartbeat_seq += 1
        request_id = f"{self.client_id}-b{state.broker_id}-hb-{state.epoch}-{broker.heartbeat_seq}"
        state.heartbeats_sent += 1
        self.counters.heartbeats_sent += 1
        answer = await self._post_or_delay(broker, backoff, HEARTBEAT_PATH, body, request_id)
        if isinstance(answer, float):
            return answer
        state.last_response = answer
        code = answer.get("error_code")
        if code == Errors.STALE_BROKER_EPOCH:
            return self._stale_epoch(broker, answer)
        if code != Errors.NONE:
            self.failed(broker, error_name(code), answer)
            return backoff.next()
        backoff.reset()
        return self._heartbeat_answered(broker, answer, offset, caught_up)

    def _stale_epoch(self, broker: LiveBroker, answer: dict[str, Any]) -> float:
        """The controller no longer knows this incarnation: register again as a new one (Kafka
        restarts the broker), unless it was shutting down anyway."""
        state = broker.state
        self.counters.stale_epochs += 1
        self.failed(broker, "STALE_BROKER_EPOCH", answer)
        if state.want_shut_down:  # the controller already forgot this incarnation
            self.finish(broker, clean=True)
            return 0.0
        old_epoch = state.epoch
        state.incarnation_id = str(uuid.uuid4())
        state.epoch = None
        state.fenced = None
        state.caught_up = False
        state.phase = BrokerPhase.STARTING
        broker.awaiting_offset = None
        logger.info(
            "broker %d: epoch %d is stale; registering again as incarnation %s",
            state.broker_id,
            old_epoch,
            state.incarnation_id,
        )
        return 0.0

    def _heartbeat_answered(
        self, broker: LiveBroker, answer: dict[str, Any], offset: int, caught_up: bool
    ) -> float:
        """Take the controller's word on fencing and shutdown; returns the next delay."""
        state = broker.state
        assert state.epoch is not None
        state.heartbeats_ok += 1
        self.counters.heartbeats_ok += 1
        state.last_heartbeat_at = time.time()
        was_fenced = state.fenced
        state.fenced = bool(answer.get("is_fenced"))
        state.caught_up = bool(answer.get("is_caught_up", caught_up))
        if answer.get("should_shut_down"):
            state.fenced = True  # SHUTDOWN_NOW fences the broker (Kafka: handleBrokerFenced)
            self.finish(broker, clean=True)
            return 0.0
        if state.want_shut_down:
            state.phase = BrokerPhase.PENDING_CONTROLLED_SHUTDOWN
        elif not state.fenced:
            state.phase = BrokerPhase.RUNNING
        else:
            state.phase = BrokerPhase.RECOVERY if caught_up else BrokerPhase.STARTING
        if was_fenced is not state.fenced:
            logger.info(
                "broker %d: %s (epoch %d, offset %d)",
                state.broker_id,
                "fenced" if state.fenced else "unfenced",
                state.epoch,
                offset,
            )
        # Not caught up yet: heartbeat again as soon as the follower reaches our epoch.
        broker.awaiting_offset = state.epoch if state.fenced and not caught_up else None
        return self.heartbeat_interval_s

    async def _post_or_delay(
        self, broker: LiveBroker, backoff: Backoff, path: str, body: bytes, request_id: str
    ) -> dict[str, Any] | float:
        """The answer; or, the failure recorded, how many seconds to wait before trying again."""
        try:
            return await self.client.post(path, body, request_id, broker.state.broker_id)
        except Transient as error:
            self.failed(broker, error.kind)
            self.counters.retries += 1
            return backoff.next(error.retry_after_s or 0.0)
        except Refused as error:
            self.failed(broker, str(error))
            return self.heartbeat_interval_s


async def _sleep(broker: LiveBroker, delay_s: float) -> None:
    """Sleep until the next call is due, or until something wakes the broker."""
    if delay_s > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(broker.wake.wait(), delay_s)
    broker.wake.clear()
