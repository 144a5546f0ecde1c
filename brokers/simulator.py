"""Simulated brokers: many KRaft-style broker lifecycles in one asyncio process, over HTTP.

A `BrokerSimulator` runs `brokers` regular brokers plus `canary` canary brokers (pod
`canary-broker`, KIP-1095), with ids `first_id .. first_id + brokers + canary - 1`: the regular
brokers first, then the canary ones. Racks are `rack-0 .. rack-{R-1}`, assigned round robin over
that id order (`racks=0`: no rack, `null`).

Each broker behaves as Kafka's BrokerLifecycleManager does against a KRaft controller:

* it registers (`POST /internal/v1/broker-registration`) with a fresh incarnation id and starts
  fenced; the answer's `broker_epoch` is the offset of its RegisterBrokerRecord;
* it heartbeats every `heartbeat_interval_ms` with `current_metadata_offset` = how far it has read
  the metadata log, `want_fence` while it has not read up to its own epoch, and asks to be
  unfenced (`want_fence=false`) once it has; it heartbeats at once when the log reaches its epoch;
* on STALE_BROKER_EPOCH (77) it registers again as a new incarnation (Kafka restarts the broker);
* on DUPLICATE_BROKER_REGISTRATION it retries until the old incarnation's session lapses;
* HTTP 503 (NOT_CONTROLLER, honouring `Retry-After`), 504, other 5xx, timeouts and connection
  errors are retried with jittered exponential backoff (at most one heartbeat interval for
  heartbeats, so a transient blip never costs a session);
* controlled shutdown: heartbeats with `want_shut_down=true` until `should_shut_down`, then stop.

Why one metadata follower per process, not one per broker: every broker in this process follows
the same log and would fetch the very same records, so one long-poll loop (`GET
/internal/v1/metadata?wait_ms=...`) reads it once and every broker reports the follower's offset as
its own `current_metadata_offset`. A long poll holds a server worker thread for up to `wait_ms`;
N followers would tie up N of them (and N times the bandwidth) for no extra information. A real
broker starting from a snapshot begins at the snapshot's offset: the follower begins at the log's
end as the server reports it at start-up.

Per-broker controls, all from the simulator's event loop: `stop_heartbeats(id)` (the broker goes
silent; the controller fences it once its session lapses), `resume(id)`, `await shutdown(id)`
(controlled shutdown), `await shutdown_all()`.

`run_heartbeat_load()` is the benchmark mode: back-to-back heartbeats from the registered brokers
with a given concurrency, returning per-request latencies.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import json
import logging
import math
import random
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

import httpx

from controlplane.controller.brokers import (
    BROKER_POD,
    CANARY_BROKER_POD,
    DEFAULT_HEARTBEAT_INTERVAL_MS,
)
from controlplane.controller.errors import Errors

logger = logging.getLogger("brokers.simulator")

REGISTRATION_PATH = "/internal/v1/broker-registration"
HEARTBEAT_PATH = "/internal/v1/broker-heartbeat"
METADATA_PATH = "/internal/v1/metadata"

# HTTP statuses that mean "try again later": no controller (503), a deadline passed (504), or a
# proxy/server hiccup. Anything else that is not 200 is the simulator's or the principal's fault.
RETRIABLE_STATUSES = frozenset({500, 502, 503, 504})
# Statuses that no retry will fix: the token is wrong or lacks CLUSTER_ACTION.
AUTH_STATUSES = frozenset({401, 403})

_JSON_HEADERS = {"Content-Type": "application/json"}
CLIENT_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
# The follower's least spacing between two fetches that brought nothing.
MIN_EMPTY_FETCH_INTERVAL_S = 0.1


class BrokerPhase(enum.StrEnum):
    """The broker's own view of itself: Kafka's broker-side BrokerState names."""

    NOT_RUNNING = "NOT_RUNNING"  # not started yet, or stopped (see `clean_shutdown`)
    STARTING = "STARTING"  # registering, or registered but not caught up with the log
    RECOVERY = "RECOVERY"  # caught up, waiting for the controller to unfence it
    RUNNING = "RUNNING"  # the controller unfenced it (it may fence it again: see `fenced`)
    PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"  # want_shut_down sent


KEEPALIVE_EXPIRY_S = 1.0


class SimulatorError(Exception):
    """The simulator cannot work at all: the server is unreachable or refuses the token."""


@dataclasses.dataclass(slots=True)
class BrokerState:
    """One simulated broker, as the simulator sees it. `BrokerSimulator.broker()` hands out
    copies; the live object belongs to the event loop."""

    broker_id: int
    pod: str
    rack: str | None
    incarnation_id: str
    epoch: int | None = None
    phase: BrokerPhase = BrokerPhase.NOT_RUNNING
    fenced: bool | None = None  # the controller's last word (`is_fenced`); None before any
    caught_up: bool = False
    silent: bool = False  # stop_heartbeats() in force
    want_shut_down: bool = False
    clean_shutdown: bool | None = None  # None while it runs; set once it stopped
    registrations: int = 0
    heartbeats_sent: int = 0
    heartbeats_ok: int = 0
    errors: int = 0
    last_error: str | None = None
    last_response: dict[str, Any] | None = None
    last_heartbeat_at: float | None = None  # time.time() of the last answered heartbeat

    @property
    def registered(self) -> bool:
        return self.epoch is not None and self.clean_shutdown is None

    @property
    def unfenced(self) -> bool:
        return self.registered and self.fenced is False

    @property
    def shut_down(self) -> bool:
        return self.clean_shutdown is not None


@dataclasses.dataclass(slots=True)
class SimulatorCounters:
    """Totals since start. `errors` counts every failed call (transport, HTTP or error code)."""

    registrations: int = 0
    re_registrations: int = 0
    heartbeats_sent: int = 0
    heartbeats_ok: int = 0
    stale_epochs: int = 0
    errors: int = 0
    retries: int = 0
    metadata_fetches: int = 0
    metadata_records: int = 0
    errors_by_kind: Counter[str] = dataclasses.field(default_factory=Counter)
    records_by_type: Counter[str] = dataclasses.field(default_factory=Counter)

    def copy(self) -> SimulatorCounters:
        return dataclasses.replace(
            self,
            errors_by_kind=Counter(self.errors_by_kind),
            records_by_type=Counter(self.records_by_type),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class SimulatorStatus:
    """A one-glance summary (what the CLI's status line prints)."""

    brokers: int
    registered: int
    unfenced: int  # registered, heartbeating, and the controller's last answer said unfenced
    fenced: int  # registered, heartbeating, and fenced by the last answer (or not yet asked)
    silent: int  # registered, heartbeats stopped
    shutting_down: int
    shut_down: int
    heartbeats_sent: int
    errors: int
    metadata_offset: int
    controller_id: int | None
    controller_epoch: int | None
    reachable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class LoadResult:
    """What `run_heartbeat_load` measured. `latencies_ms` holds one sample per answered request
    (any HTTP status); `requests - len(latencies_ms)` requests failed in transport."""

    duration_s: float
    concurrency: int
    brokers: int
    requests: int
    ok: int
    errors: dict[str, int]
    latencies_ms: list[float]

    @property
    def throughput_rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    def percentile(self, p: float) -> float:
        """Nearest-rank percentile of the latencies (p in 0..100); NaN without samples."""
        if not self.latencies_ms:
            return math.nan
        ordered = sorted(self.latencies_ms)
        rank = max(1, math.ceil(p / 100 * len(ordered)))
        return ordered[min(rank, len(ordered)) - 1]


class Backoff:
    """Exponential backoff with jitter, as Kafka's ExponentialBackoff (factor 2, jitter 0.2)."""

    def __init__(self, initial_s: float, max_s: float, jitter: float = 0.2) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.jitter = jitter
        self.attempts = 0

    def next(self, at_least_s: float = 0.0) -> float:
        # The exponent is capped: a long outage must not overflow the float.
        delay = min(self.max_s, self.initial_s * 2.0 ** min(self.attempts, 32))
        self.attempts += 1
        delay *= random.uniform(1 - self.jitter, 1 + self.jitter)
        return min(max(delay, at_least_s), self.max_s)

    def reset(self) -> None:
        self.attempts = 0


class _Transient(Exception):
    """A call that may succeed later (503/504/5xx, timeout, connection trouble)."""

    def __init__(self, kind: str, retry_after_s: float | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after_s = retry_after_s


class _Refused(Exception):
    """A call the server refused for good (4xx): retrying the same thing will not help."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclasses.dataclass(slots=True)
class _Broker:
    """The live broker: its public state plus the loop's private machinery."""

    state: BrokerState
    wake: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    awaiting_offset: int | None = None  # wake me when the log reaches this offset
    heartbeat_seq: int = 0


class BrokerSimulator:
    """Runs simulated brokers against a control plane's internal API.

    Use as `async with BrokerSimulator(...) as sim:` (start, then close on exit), or call
    `await start()` and `await close()` yourself. All methods must run on one event loop.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        brokers: int = 3,
        canary: int = 0,
        racks: int = 0,
        first_id: int = 0,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
        listener_host: str = "127.0.0.1",
        listener_base_port: int = 9092,
        client_id: str = "broker-simulator",
        request_timeout_s: float = 10.0,
        connect_timeout_s: float = 30.0,
        metadata_wait_ms: int = 10_000,
        metadata_max_records: int = 1000,
        max_connections: int = 100,
        trust_env: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if brokers < 0 or canary < 0 or brokers + canary == 0:
            raise ValueError("Need at least one broker (brokers + canary >= 1).")
        if racks < 0 or first_id < 0 or heartbeat_interval_ms <= 0 or max_connections < 2:
            raise ValueError(
                "racks and first_id must be >= 0, heartbeat_interval_ms > 0, max_connections >= 2."
            )
        if not CLIENT_ID_PATTERN.match(client_id):
            # It prefixes X-Request-ID, which the server only takes as [A-Za-z0-9._:-]{1,128}.
            raise ValueError(f"client_id {client_id!r}: use 1-64 of letters, digits and . _ : -")
        self.url = url.rstrip("/")
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.listener_host = listener_host
        self.listener_base_port = listener_base_port
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.metadata_wait_ms = metadata_wait_ms
        self.metadata_max_records = metadata_max_records
        self.max_connections = max_connections
        self.counters = SimulatorCounters()
        self.cluster_id: str | None = None
        self.controller_id: int | None = None
        self.controller_epoch: int | None = None
        self.metadata_offset = -1  # how far the follower has read the log
        self.reachable = False
        self._token = token
        self._trust_env = trust_env
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._follower: asyncio.Task[None] | None = None
        self._brokers: dict[int, _Broker] = {}
        for index in range(brokers + canary):
            broker_id = first_id + index
            self._brokers[broker_id] = _Broker(
                BrokerState(
                    broker_id=broker_id,
                    pod=BROKER_POD if index < brokers else CANARY_BROKER_POD,
                    rack=f"rack-{index % racks}" if racks else None,
                    incarnation_id=str(uuid.uuid4()),
                )
            )

    # --- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> BrokerSimulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Reach the server (retrying for `connect_timeout_s`), learn the cluster id, then start
        the metadata follower and every broker. Raises SimulatorError when the server never
        answered or refused the token."""
        if self._client is not None:
            raise RuntimeError("The simulator is already started.")
        self._client = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self._token}", "X-Client-ID": self.client_id},
            timeout=httpx.Timeout(self.request_timeout_s),
            limits=httpx.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_connections,
                # Drop idle connections before the server does (gunicorn's keep-alive is 2 s):
                # reusing one the server just closed fails the request with a ReadError.
                keepalive_expiry=KEEPALIVE_EXPIRY_S,
            ),
            http2=False,
            trust_env=self._trust_env,
            transport=self._transport,
        )
        try:
            await self._first_contact()
        except BaseException:
            await self._client.aclose()
            self._client = None
            raise
        self._follower = asyncio.create_task(self._follow(), name="metadata-follower")
        spread = min(self.heartbeat_interval_s, 0.5) if len(self._brokers) > 1 else 0.0
        for broker in self._brokers.values():
            self._launch(broker, first_delay_s=random.uniform(0, spread))

    async def close(self) -> None:
        """Stop everything at once (no controlled shutdown: call shutdown_all() first for that).
        Brokers still running are marked `clean_shutdown=False`."""
        tasks = [b.task for b in self._brokers.values() if b.task is not None]
        if self._follower is not None:
            tasks.append(self._follower)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._follower = None
        for broker in self._brokers.values():
            if not broker.state.shut_down and broker.state.phase is not BrokerPhase.NOT_RUNNING:
                self._finish(broker, clean=False)
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # --- controls ---------------------------------------------------------------------------
    def stop_heartbeats(self, broker_id: int) -> None:
        """The broker goes silent (a hung or partitioned broker): no more heartbeats until
        resume(). The controller fences it once its session times out."""
        broker = self._get(broker_id)
        broker.state.silent = True
        logger.info("broker %d: heartbeats stopped", broker_id)

    def resume(self, broker_id: int) -> None:
        """Heartbeat again. A silent broker keeps its registration and epoch, and asks to be
        unfenced again; a broker that was shut down starts again as a new incarnation (a
        restarted broker process), registering afresh."""
        broker = self._get(broker_id)
        if broker.state.shut_down:
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
            self._launch(broker, first_delay_s=0.0)
            logger.info("broker %d: restarted as incarnation %s", broker_id, state.incarnation_id)
            return
        broker.state.silent = False
        broker.wake.set()
        logger.info("broker %d: heartbeats resumed", broker_id)

    async def shutdown(self, broker_id: int, timeout_s: float | None = 30.0) -> bool:
        """Controlled shutdown: heartbeat with want_shut_down until the controller answers
        should_shut_down, then stop. A silent broker speaks again to do so. Returns True when the
        controller released the broker, False when `timeout_s` passed first (the broker is then
        stopped anyway, as Kafka's broker does when controlled shutdown times out)."""
        broker = self._get(broker_id)
        if broker.state.shut_down:
            return bool(broker.state.clean_shutdown)
        if broker.task is None or broker.task.done():  # never started: nothing to hand over
            self._finish(broker, clean=True)
            return True
        broker.state.want_shut_down = True
        broker.state.silent = False
        broker.wake.set()
        try:
            await asyncio.wait_for(broker.done.wait(), timeout_s)
        except TimeoutError:
            logger.warning("broker %d: controlled shutdown timed out; stopping", broker_id)
            if broker.task is not None:
                broker.task.cancel()
                await asyncio.gather(broker.task, return_exceptions=True)
            self._finish(broker, clean=False, error="controlled shutdown timed out")
        return bool(broker.state.clean_shutdown)

    async def shutdown_all(self, timeout_s: float | None = 30.0) -> dict[int, bool]:
        """Controlled shutdown of every broker at once; broker id -> released cleanly."""
        ids = sorted(self._brokers)
        results = await asyncio.gather(*(self.shutdown(i, timeout_s) for i in ids))
        return dict(zip(ids, results, strict=True))

    # --- state ------------------------------------------------------------------------------
    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._brokers)

    def broker(self, broker_id: int) -> BrokerState:
        """A copy of one broker's state."""
        state = self._get(broker_id).state
        copy = dataclasses.replace(state)
        copy.last_response = dict(state.last_response) if state.last_response else None
        return copy

    def brokers(self) -> list[BrokerState]:
        return [self.broker(i) for i in self.broker_ids]

    def status(self) -> SimulatorStatus:
        states = [b.state for b in self._brokers.values()]
        return SimulatorStatus(
            brokers=len(states),
            registered=sum(s.registered for s in states),
            # A silent broker counts as silent only: whether the controller fenced it yet is not
            # something it can know.
            unfenced=sum(s.unfenced and not s.silent for s in states),
            fenced=sum(s.registered and not s.silent and s.fenced is not False for s in states),
            silent=sum(s.registered and s.silent for s in states),
            shutting_down=sum(
                s.phase is BrokerPhase.PENDING_CONTROLLED_SHUTDOWN and not s.shut_down
                for s in states
            ),
            shut_down=sum(s.shut_down for s in states),
            heartbeats_sent=self.counters.heartbeats_sent,
            errors=self.counters.errors,
            metadata_offset=self.metadata_offset,
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            reachable=self.reachable,
        )

    async def wait_for(
        self,
        predicate: Callable[[BrokerSimulator], bool],
        timeout_s: float,
        poll_s: float = 0.05,
    ) -> bool:
        """Poll `predicate(self)` until true or `timeout_s` passed; returns its last value."""
        deadline = time.monotonic() + timeout_s
        while not predicate(self):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(poll_s)
        return True

    # --- benchmark mode ---------------------------------------------------------------------
    async def run_heartbeat_load(
        self,
        duration_s: float,
        concurrency: int,
        *,
        broker_ids: Iterable[int] | None = None,
    ) -> LoadResult:
        """Back-to-back heartbeats (no interval) for `duration_s` from `concurrency` concurrent
        senders, cycling over the registered brokers that are neither silent nor shutting down
        (or `broker_ids`). The bodies are built once up front, with the follower's offset at the
        start, so they ask for no state change: each is the server's heartbeat fast path. The
        brokers' own heartbeat loops keep running beside the load."""
        if self._client is None:
            raise RuntimeError("Start the simulator first.")
        if concurrency < 1 or duration_s <= 0:
            raise ValueError("concurrency must be >= 1 and duration_s > 0.")
        if concurrency > self.max_connections - 1:  # one connection stays for the follower
            raise ValueError(
                f"concurrency {concurrency} exceeds the pool ({self.max_connections} connections,"
                " one kept for the metadata follower); raise max_connections."
            )
        chosen = self.broker_ids if broker_ids is None else sorted(set(broker_ids))
        states = [
            self._get(i).state
            for i in chosen
            if self._get(i).state.registered
            and not self._get(i).state.silent
            and not self._get(i).state.want_shut_down
        ]
        if not states:
            raise RuntimeError("No registered, heartbeating broker to send load from.")
        offset = self.metadata_offset
        bodies = [
            _dumps(
                {
                    "broker_id": s.broker_id,
                    "broker_epoch": s.epoch,
                    "current_metadata_offset": max(offset, s.epoch or 0),
                    "want_fence": False,
                    "want_shut_down": False,
                    "offline_log_dirs": [],
                }
            )
            for s in states
        ]
        client = self._client
        url = HEARTBEAT_PATH
        headers = _JSON_HEADERS
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        sent = 0
        ok = 0
        clock = time.perf_counter
        started = clock()
        deadline = started + duration_s

        async def sender(first: int) -> None:
            nonlocal sent, ok
            index = first
            count = len(bodies)
            while clock() < deadline:
                body = bodies[index % count]
                index += concurrency
                sent += 1
                t0 = clock()
                try:
                    response = await self._post_reconnecting(client, url, body, headers)
                except httpx.TransportError as error:
                    errors[type(error).__name__] += 1
                    await asyncio.sleep(0.01)  # do not spin on a refused connection
                    continue
                latencies.append((clock() - t0) * 1000)
                if response.status_code != 200:
                    errors[f"HTTP {response.status_code}"] += 1
                    continue
                code = json.loads(response.content).get("error_code")
                if code == 0:
                    ok += 1
                else:
                    errors[_error_name(code)] += 1

        await asyncio.gather(*(sender(i) for i in range(concurrency)))
        return LoadResult(
            duration_s=clock() - started,
            concurrency=concurrency,
            brokers=len(bodies),
            requests=sent,
            ok=ok,
            errors=dict(errors),
            latencies_ms=latencies,
        )

    async def _post_reconnecting(
        self, client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str]
    ) -> httpx.Response:
        """A heartbeat is idempotent: when the connection dropped under it (a keep-alive the
        server closed), send it once more on a fresh connection, as a broker would."""
        try:
            return await client.post(url, content=body, headers=headers)
        except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError):
            self.counters.retries += 1
            return await client.post(url, content=body, headers=headers)

    # --- the broker loop --------------------------------------------------------------------
    def _get(self, broker_id: int) -> _Broker:
        try:
            return self._brokers[broker_id]
        except KeyError:
            raise KeyError(f"No simulated broker {broker_id} (have {self.broker_ids}).") from None

    def _launch(self, broker: _Broker, *, first_delay_s: float) -> None:
        broker.state.phase = BrokerPhase.STARTING
        broker.task = asyncio.create_task(
            self._broker_main(broker, first_delay_s), name=f"broker-{broker.state.broker_id}"
        )

    async def _broker_main(self, broker: _Broker, first_delay_s: float) -> None:
        state = broker.state
        backoff = Backoff(
            initial_s=min(0.1, self.heartbeat_interval_s / 4), max_s=self.heartbeat_interval_s
        )
        delay = first_delay_s
        try:
            while not state.shut_down:
                await self._sleep(broker, delay)
                if state.silent and not state.want_shut_down:
                    await broker.wake.wait()
                    broker.wake.clear()
                    delay = 0.0
                    continue
                if state.epoch is None:
                    if state.want_shut_down:  # never registered: nothing to hand over
                        self._finish(broker, clean=True)
                        break
                    delay = await self._register(broker, backoff)
                else:
                    delay = await self._heartbeat(broker, backoff)
        except Exception as error:  # a bug here must not vanish inside a task
            logger.exception("broker %d: simulator loop crashed", state.broker_id)
            self._finish(broker, clean=False, error=f"crashed: {error!r}")

    @staticmethod
    async def _sleep(broker: _Broker, delay_s: float) -> None:
        """Sleep until the next call is due, or until something wakes the broker."""
        if delay_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(broker.wake.wait(), delay_s)
        broker.wake.clear()

    async def _register(self, broker: _Broker, backoff: Backoff) -> float:
        state = broker.state
        body = {
            "broker_id": state.broker_id,
            "cluster_id": self.cluster_id,
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
            "log_dirs": [str(uuid.uuid5(uuid.UUID(state.incarnation_id), "log-dir-0"))],
        }
        # The same request id for every retry of this incarnation: applied once.
        request_id = f"{self.client_id}-b{state.broker_id}-reg-{state.incarnation_id[:8]}"
        answer = await self._post_or_delay(
            broker, backoff, REGISTRATION_PATH, _dumps(body), request_id
        )
        if isinstance(answer, float):
            return answer
        code = answer.get("error_code")
        if code == Errors.NONE:
            backoff.reset()
            state.epoch = int(answer["broker_epoch"])
            state.fenced = True
            state.caught_up = self.metadata_offset >= state.epoch
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
            return 0.0  # first heartbeat at once, as Kafka's broker does
        self._failed(broker, _error_name(code), answer)
        if code == Errors.INCONSISTENT_CLUSTER_ID:
            await self._refresh_cluster_id()
        # DUPLICATE_BROKER_REGISTRATION: the previous incarnation's session has to lapse first.
        return max(backoff.next(), self.heartbeat_interval_s / 2)

    def _listener_port(self, broker_id: int) -> int:
        port = self.listener_base_port + broker_id
        return port if port <= 65535 else self.listener_base_port

    async def _heartbeat(self, broker: _Broker, backoff: Backoff) -> float:
        state = broker.state
        assert state.epoch is not None
        offset = self.metadata_offset
        caught_up = offset >= state.epoch
        body = _dumps(
            {
                "broker_id": state.broker_id,
                "broker_epoch": state.epoch,
                "current_metadata_offset": offset,
                "want_fence": not caught_up,
                "want_shut_down": state.want_shut_down,
                "offline_log_dirs": [],
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
            self.counters.stale_epochs += 1
            self._failed(broker, "STALE_BROKER_EPOCH", answer)
            if state.want_shut_down:  # the controller already forgot this incarnation
                self._finish(broker, clean=True)
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
        if code != Errors.NONE:
            self._failed(broker, _error_name(code), answer)
            return backoff.next()
        backoff.reset()
        state.heartbeats_ok += 1
        self.counters.heartbeats_ok += 1
        state.last_heartbeat_at = time.time()
        was_fenced = state.fenced
        state.fenced = bool(answer.get("is_fenced"))
        state.caught_up = bool(answer.get("is_caught_up", caught_up))
        if answer.get("should_shut_down"):
            state.fenced = True  # SHUTDOWN_NOW fences the broker (Kafka: handleBrokerFenced)
            self._finish(broker, clean=True)
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
        self, broker: _Broker, backoff: Backoff, path: str, body: bytes, request_id: str
    ) -> dict[str, Any] | float:
        """The answer; or, the failure recorded, how many seconds to wait before trying again."""
        try:
            return await self._post(path, body, request_id, broker.state.broker_id)
        except _Transient as error:
            self._failed(broker, error.kind)
            self.counters.retries += 1
            return backoff.next(error.retry_after_s or 0.0)
        except _Refused as error:
            self._failed(broker, str(error))
            return self.heartbeat_interval_s

    def _failed(self, broker: _Broker, kind: str, answer: dict[str, Any] | None = None) -> None:
        state = broker.state
        state.errors += 1
        message = answer.get("error_message") if answer else None
        state.last_error = f"{kind}: {message}" if message else kind
        self.counters.errors += 1
        self.counters.errors_by_kind[kind.split(":")[0]] += 1
        logger.debug("broker %d: %s", state.broker_id, state.last_error)

    def _finish(self, broker: _Broker, *, clean: bool, error: str | None = None) -> None:
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

    # --- the metadata follower --------------------------------------------------------------
    async def _first_contact(self) -> None:
        deadline = time.monotonic() + self.connect_timeout_s
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        last = "no answer"
        while True:
            try:
                answer = await self._get_metadata(after_offset=-1, max_records=1, wait_ms=0)
            except _Refused as error:
                raise SimulatorError(f"{self.url} refused the broker token: {error}") from None
            except _Transient as error:
                last = error.kind
                delay = backoff.next(error.retry_after_s or 0.0)
                if time.monotonic() + delay > deadline:
                    raise SimulatorError(
                        f"Could not reach {self.url} within {self.connect_timeout_s:g} s ({last})."
                    ) from None
                await asyncio.sleep(delay)
                continue
            self.metadata_offset = int(answer["last_offset"])
            return

    async def _refresh_cluster_id(self) -> None:
        with contextlib.suppress(_Transient, _Refused):
            await self._get_metadata(after_offset=-1, max_records=1, wait_ms=0)

    async def _follow(self) -> None:
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while True:
            asked = time.monotonic()
            try:
                answer = await self._get_metadata(
                    after_offset=self.metadata_offset,
                    max_records=self.metadata_max_records,
                    wait_ms=self.metadata_wait_ms,
                )
            except (_Transient, _Refused) as error:
                self.counters.errors += 1
                self.counters.errors_by_kind[f"metadata {getattr(error, 'kind', 'error')}"] += 1
                self.counters.retries += 1
                await asyncio.sleep(backoff.next(getattr(error, "retry_after_s", None) or 0.0))
                continue
            backoff.reset()
            records = answer.get("records") or []
            if records:
                for record in records:
                    self.counters.records_by_type[str(record.get("type"))] += 1
                self.counters.metadata_records += len(records)
                self.metadata_offset = max(self.metadata_offset, int(records[-1]["offset"]))
                self._wake_caught_up()
                await asyncio.sleep(0)  # more may follow at once; let the brokers run first
            else:
                # Nothing new, and maybe at once (wait_ms=0, or a server that woke early or does
                # not long-poll): never poll faster than MIN_EMPTY_FETCH_INTERVAL_S.
                await asyncio.sleep(
                    max(0.0, MIN_EMPTY_FETCH_INTERVAL_S - (time.monotonic() - asked))
                )

    def _wake_caught_up(self) -> None:
        offset = self.metadata_offset
        for broker in self._brokers.values():
            if broker.awaiting_offset is not None and broker.awaiting_offset <= offset:
                broker.awaiting_offset = None
                broker.wake.set()

    async def _get_metadata(
        self, *, after_offset: int, max_records: int, wait_ms: int
    ) -> dict[str, Any]:
        client = self._require_client()
        params = {"after_offset": after_offset, "max_records": max_records, "wait_ms": wait_ms}
        timeout = self.request_timeout_s + wait_ms / 1000
        self.counters.metadata_fetches += 1
        try:
            response = await client.get(METADATA_PATH, params=params, timeout=timeout)
        except httpx.TransportError as error:
            raise _Transient(type(error).__name__) from None
        answer = self._answer(response)
        self.reachable = True
        self.cluster_id = answer.get("cluster_id") or self.cluster_id
        self.controller_id = answer.get("controller_id")
        self.controller_epoch = answer.get("controller_epoch")
        return answer

    # --- HTTP -------------------------------------------------------------------------------
    def _require_client(self) -> httpx.AsyncClient:
        if self._client is None:
            raise RuntimeError("The simulator is not started.")
        return self._client

    async def _post(
        self, path: str, body: bytes, request_id: str, broker_id: int
    ) -> dict[str, Any]:
        client = self._require_client()
        headers = {
            **_JSON_HEADERS,
            "X-Request-ID": request_id,
            "X-Client-ID": f"{self.client_id}-broker-{broker_id}",
        }
        for attempt in (0, 1):
            try:
                response = await client.post(path, content=body, headers=headers)
                break
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as error:
                # A kept-alive connection the server closed meanwhile: one immediate retry on a
                # fresh one. Safe: heartbeats are idempotent, registrations carry a request id.
                if attempt == 1:
                    raise _Transient(type(error).__name__) from None
            except httpx.TransportError as error:
                raise _Transient(type(error).__name__) from None
        answer = self._answer(response)
        self.reachable = True
        return answer

    @staticmethod
    def _answer(response: httpx.Response) -> dict[str, Any]:
        status = response.status_code
        if status == 200:
            answer: dict[str, Any] = response.json()
            return answer
        try:
            detail = response.json()
        except ValueError:
            detail = {}
        name = detail.get("error") if isinstance(detail, dict) else None
        message = detail.get("error_message") if isinstance(detail, dict) else None
        kind = f"HTTP {status}" + (f" {name}" if name else "")
        if status in RETRIABLE_STATUSES:
            raise _Transient(kind, _retry_after(response))
        raise _Refused(kind, str(message or response.text[:200]))


def _dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: ignore it, the backoff decides


def _error_name(code: Any) -> str:
    try:
        return Errors(int(code)).name
    except (TypeError, ValueError):
        return f"error {code}"
