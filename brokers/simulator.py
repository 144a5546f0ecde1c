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
broker starting from a snapshot begins at the snapshot's offset; there is no snapshot to fetch
here, so the follower replays the log from its start (as many records per fetch as the server
allows until it reaches the log's end as it was at start-up), or, with `track_partitions=False`,
begins at that end and knows only what comes after.

Per-broker controls, all from the simulator's event loop: `stop_heartbeats(id)` (the broker goes
silent; the controller fences it once its session lapses), `resume(id)`, `await shutdown(id)`
(controlled shutdown), `await shutdown_all()`.

`run_heartbeat_load()` is the benchmark mode: back-to-back heartbeats from the registered brokers
with a given concurrency, returning per-request latencies.

Topics, partitions and log directories. The follower keeps every topic and partition as the
controller does, from TopicRecord, PartitionRecord, PartitionChangeRecord (merged exactly as the
core's PartitionRegistration.merge: leader epoch + 1 when the leader is set, partition epoch + 1
always) and RemoveTopicRecord: `partitions()`, `partition()`, `topics()`. Each broker has
`log_dirs` log directories (JBOD; uuids kept across incarnations and registered with each) and
keeps each of its replicas in one of them: directory `crc32("topic:partition") % log_dirs`, the
same on every broker (`replicas_in_log_dir()`). Then, as a real broker would:

* `await fail_log_dir(id, dir)`: the directory fails. The broker names every replica it holds
  there in ONE AlterReplicaState (KIP-589, `POST /internal/v1/alter-replica-state`), retried with
  the same request id and backoff on 503 NOT_CONTROLLER, 5xx and connection errors, sent again
  with its new epoch when it re-registered meanwhile (STALE_BROKER_EPOCH) or later restarts with
  the directory still failed; its heartbeats report the directory in `offline_log_dirs`. It
  waits until the metadata shows the replicas offline.
* `await repair_log_dir(id, dir)`: the directory works again. For every partition whose replica
  there is offline or out of the ISR, the partition's current leader (when it is one of this
  simulator's brokers) sends AlterPartition taking the replica back into the ISR, with the leader
  and partition epochs the follower knows; FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION and other
  answers of stale metadata make it catch up with the log and try again. It waits until every
  replica there is back in the ISR and no longer offline. A partition with no leader cannot take
  a replica back (only a new incarnation of the broker clears its offline replicas then).
* `await create_topic(name, partitions, replication_factor, admin_token=...)`: CreateTopics
  through the public API with an admin principal's token (the load for the above).

Forwarding (KIP-590). A broker redirects an old client's admin request to the controller:
`await forward_admin_request(broker_id, "IncrementalAlterConfigs", body, principal="User:alice")`
wraps the request in an Envelope (`POST /internal/v1/envelope`, the broker's token; apiKeys from
`controlplane.forwarding.ADMIN_APIS`) carrying the client's principal, client id and address and
`forwarding_broker_id`, so the controller authorizes and audits it as that client. NOT_CONTROLLER
(503, honouring `Retry-After`), 504, other 5xx and connection errors are retried with backoff and
ONE request id (the controller applies the write once) until the deadline; then the client gets
REQUEST_TIMED_OUT. The answer is the inner response, as the client would get it; an error of the
envelope itself (CLUSTER_AUTHORIZATION_FAILED: the token lacks CLUSTER_ACTION, INVALID_REQUEST...)
means a misconfigured broker and reaches the client as UNKNOWN_SERVER_ERROR (KIP-590's
"EnvelopeResponse Handling").
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
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from controlplane.controller.brokers.control import (
    BROKER_POD,
    CANARY_BROKER_POD,
    DEFAULT_HEARTBEAT_INTERVAL_MS,
)
from controlplane.controller.errors import Errors
from controlplane.controller.image import PartitionRegistration
from controlplane.controller.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord

if TYPE_CHECKING:
    from controlplane.controller.api_keys import ApiKey as AdminApi

logger = logging.getLogger("brokers.simulator")

REGISTRATION_PATH = "/internal/v1/broker-registration"
HEARTBEAT_PATH = "/internal/v1/broker-heartbeat"
METADATA_PATH = "/internal/v1/metadata"
ALTER_REPLICA_STATE_PATH = "/internal/v1/alter-replica-state"
ALTER_PARTITION_PATH = "/internal/v1/alter-partition"
CREATE_TOPICS_PATH = "/api/v1/create-topics"
ENVELOPE_PATH = "/internal/v1/envelope"
# The client id of a forwarded request when none is given: Kafka's AdminClient default.
DEFAULT_ADMIN_CLIENT_ID = "adminclient-1"
# How long a broker keeps retrying a forwarded request: Kafka's request.timeout.ms default.
DEFAULT_FORWARD_TIMEOUT_S = 30.0
OFFLINE_REPLICA_EVENT = 1  # KIP-589's only AlterReplicaState event type
# `after_offset` beyond any record: the fetch answers the log's head and no records.
HEAD_ONLY_OFFSET = 2**63 - 1
# Catching up with a long log (start-up): as many records per fetch as the server allows.
CATCH_UP_MAX_RECORDS = 10_000
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
    log_dirs: tuple[str, ...] = ()  # its log directories' uuids, the same for every incarnation
    failed_log_dirs: tuple[int, ...] = ()  # indexes into log_dirs: failed and not repaired yet
    replica_reports: int = 0  # AlterReplicaState requests the controller accepted
    forwarded_requests: int = 0  # client requests it redirected in an Envelope (KIP-590)

    @property
    def offline_log_dirs(self) -> tuple[str, ...]:
        """What its heartbeats report in `offline_log_dirs`."""
        return tuple(self.log_dirs[i] for i in self.failed_log_dirs)

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
    forwarded_requests: int = 0  # forward_admin_request() calls (each maybe several attempts)
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
    topics: int = 0
    partitions: int = 0
    offline_replicas: int = 0  # replicas the metadata marks offline (KIP-589), any broker's
    failed_log_dirs: int = 0  # of this simulator's brokers, failed and not repaired


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition as the follower replayed it from the metadata log."""

    topic: str
    partition: int
    topic_id: str
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    offline_replicas: tuple[int, ...]
    is_canary: bool

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclasses.dataclass(slots=True)
class LogDirResult:
    """What `fail_log_dir` / `repair_log_dir` did.

    fail: `partitions` are the replicas the AlterReplicaState named, `done` those it accepted
    (`refused`: the others, by error name), `applied` that the metadata shows every accepted one
    offline; `request`/`request_id` the accepted request as sent (a retry of it applies once).
    repair: `partitions` are the replicas that were offline or out of the ISR, `done` those back
    in the ISR, `applied` that none is left (`pending`: why each left one is, at the deadline).
    """

    action: str  # "fail" or "repair"
    broker_id: int
    dir_index: int
    log_dir: str
    partitions: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    done: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    refused: dict[str, list[tuple[str, int]]] = dataclasses.field(default_factory=dict)
    pending: dict[tuple[str, int], str] = dataclasses.field(default_factory=dict)
    applied: bool = False
    attempts: int = 0  # HTTP requests sent (every retry counts)
    broker_epoch: int | None = None
    request_id: str | None = None
    request: dict[str, Any] | None = None
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.applied


@dataclasses.dataclass(slots=True)
class ForwardResult:
    """What `forward_admin_request` did: the client's answer and how it got it.

    `response_data` is what the client gets: the inner RPC's response when the controller
    answered the envelope (`response_status`: the HTTP status of the inner RPC, `delivered`),
    else an error body (`error_code`, `error`, `error_message`): REQUEST_TIMED_OUT when no
    answer came before the deadline, UNKNOWN_SERVER_ERROR when the envelope itself was refused
    (`envelope_error` says why, for the operator). Every attempt carried `request_id`.
    """

    broker_id: int
    api: str  # Kafka's RPC name
    api_key: int
    principal: str  # the client's, as forwarded ("User:alice")
    client_id: str
    client_host: str
    correlation_id: int
    request_id: str = ""
    envelope: dict[str, Any] | None = None  # the Envelope as sent (the same on every attempt)
    delivered: bool = False
    response_status: int | None = None
    response_data: dict[str, Any] = dataclasses.field(default_factory=dict)
    envelope_error: str | None = None
    attempts: int = 0  # HTTP requests sent (every retry counts)
    retried: list[str] = dataclasses.field(default_factory=list)  # why each retry happened
    elapsed_s: float = 0.0

    @property
    def error_code(self) -> int:
        """The answer's top-level error code (0 when it has none: per-resource codes only)."""
        code = self.response_data.get("error_code", 0)
        return code if isinstance(code, int) else int(Errors.UNKNOWN_SERVER_ERROR)

    @property
    def error_codes(self) -> list[int]:
        """Every error code in the answer: the top-level one, then each resource's."""
        codes = [self.error_code] if "error_code" in self.response_data else []
        for value in self.response_data.values():
            if isinstance(value, list):
                codes.extend(
                    int(item["error_code"])
                    for item in value
                    if isinstance(item, dict) and isinstance(item.get("error_code"), int)
                )
        return codes

    @property
    def ok(self) -> bool:
        """Delivered, and every error code in the answer is NONE."""
        return (
            self.delivered
            and self.response_status == 200
            and all(code == Errors.NONE for code in self.error_codes)
        )


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
    request_seq: int = 0  # numbers AlterReplicaState / AlterPartition / Envelope request ids
    correlation_seq: int = 0  # the correlation ids of the client requests it forwards
    # One log-dir operation at a time per broker (a fail then a repair run in that order).
    dir_lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    # log dir index -> the broker epoch whose AlterReplicaState for it was accepted
    reported_epochs: dict[int, int] = dataclasses.field(default_factory=dict)


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
        log_dirs: int = 2,
        admin_token: str | None = None,
        track_partitions: bool = True,
    ) -> None:
        if brokers < 0 or canary < 0 or brokers + canary == 0:
            raise ValueError("Need at least one broker (brokers + canary >= 1).")
        if not 1 <= log_dirs <= 64:
            raise ValueError("log_dirs must be 1..64.")
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
        self.log_dirs_per_broker = log_dirs
        # Replaying the log from its start is what lets the follower know every partition; with
        # track_partitions=False it starts at the log's end, as before, and knows only what
        # comes after (fail/repair then see only partitions created since).
        self.track_partitions = track_partitions
        self.log_end_at_start = -1  # the log's end when the simulator first reached the server
        self._admin_token = admin_token
        self._topic_names: dict[str, str] = {}  # topic id -> name
        self._topic_ids: dict[str, str] = {}  # name -> topic id
        self._partitions: dict[str, dict[int, PartitionRegistration]] = {}  # topic id -> ...
        self._background: set[asyncio.Task[Any]] = set()
        self._token = token
        self._trust_env = trust_env
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._follower: asyncio.Task[None] | None = None
        self._closing = False  # close() called: the follower stops even if a cancel was lost
        self._brokers: dict[int, _Broker] = {}
        for index in range(brokers + canary):
            broker_id = first_id + index
            self._brokers[broker_id] = _Broker(
                BrokerState(
                    broker_id=broker_id,
                    pod=BROKER_POD if index < brokers else CANARY_BROKER_POD,
                    rack=f"rack-{index % racks}" if racks else None,
                    incarnation_id=str(uuid.uuid4()),
                    log_dirs=tuple(str(uuid.uuid4()) for _ in range(log_dirs)),
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
        self._closing = False
        self._follower = asyncio.create_task(self._follow(), name="metadata-follower")
        spread = min(self.heartbeat_interval_s, 0.5) if len(self._brokers) > 1 else 0.0
        for broker in self._brokers.values():
            self._launch(broker, first_delay_s=random.uniform(0, spread))

    async def close(self) -> None:
        """Stop everything at once (no controlled shutdown: call shutdown_all() first for that).
        Brokers still running are marked `clean_shutdown=False`."""
        self._closing = True
        tasks = [b.task for b in self._brokers.values() if b.task is not None]
        tasks.extend(self._background)
        if self._follower is not None:
            tasks.append(self._follower)
        await _cancel_until_done(tasks)
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
                await _cancel_until_done([broker.task])
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
            topics=len(self._topic_names),
            partitions=sum(len(parts) for parts in self._partitions.values()),
            offline_replicas=sum(
                len(p.offline_replicas)
                for parts in self._partitions.values()
                for p in parts.values()
            ),
            failed_log_dirs=sum(len(s.failed_log_dirs) for s in states),
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

    # --- topics, partitions and log directories ---------------------------------------------
    def topics(self) -> dict[str, str]:
        """Topic name -> topic id, as the follower knows them."""
        return dict(self._topic_ids)

    def partition(self, topic: str, partition: int) -> PartitionView | None:
        topic_id = self._topic_ids.get(topic)
        if topic_id is None:
            return None
        registration = self._partitions.get(topic_id, {}).get(partition)
        return None if registration is None else self._view(topic_id, partition, registration)

    def partitions(
        self, topic: str | None = None, *, broker_id: int | None = None
    ) -> list[PartitionView]:
        """Partitions (of `topic`; with a replica on `broker_id`), by topic name and index."""
        views = []
        for topic_id, parts in self._partitions.items():
            name = self._topic_names.get(topic_id)
            if name is None or (topic is not None and name != topic):
                continue
            for index, registration in parts.items():
                if broker_id is None or broker_id in registration.replicas:
                    views.append(self._view(topic_id, index, registration))
        return sorted(views, key=lambda v: (v.topic, v.partition))

    def log_dir_index(self, topic: str, partition: int) -> int:
        """Which of a broker's log directories holds its replica of a partition."""
        return zlib.crc32(f"{topic}:{partition}".encode()) % self.log_dirs_per_broker

    def replicas_in_log_dir(self, broker_id: int, dir_index: int) -> list[PartitionView]:
        """The partitions whose replica on `broker_id` lives in its log dir `dir_index`."""
        self._check_dir(self._get(broker_id), dir_index)
        return [
            view
            for view in self.partitions(broker_id=broker_id)
            if self.log_dir_index(view.topic, view.partition) == dir_index
        ]

    async def sync_metadata(self, timeout_s: float = 10.0) -> bool:
        """Wait until the follower has read everything committed when this was called (what a
        broker does before acting on its metadata); False when the server could not be asked
        or the follower did not get there within `timeout_s`."""
        try:
            answer = await self._get_metadata(
                after_offset=HEAD_ONLY_OFFSET, max_records=1, wait_ms=0
            )
        except (_Transient, _Refused):
            return False
        target = int(answer["last_offset"])
        return await self.wait_for(lambda s: s.metadata_offset >= target, timeout_s, poll_s=0.02)

    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        *,
        admin_token: str | None = None,
        configs: dict[str, str] | None = None,
        timeout_s: float = 60.0,
    ) -> dict[str, Any]:
        """CreateTopics for one topic through the public API, with an admin principal's token
        (`admin_token` here or given to the constructor); -1 takes the server's defaults.
        Retried with the same request id on 503/5xx and connection errors until `timeout_s`.
        Returns the topic's answer (`error_code` 0, or e.g. TOPIC_ALREADY_EXISTS); once created,
        the follower has read it. Raises SimulatorError when the server refuses the request."""
        token = admin_token or self._admin_token
        if not token:
            raise ValueError("create_topic needs an admin token (admin_token=...).")
        body = _dumps(
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": replication_factor,
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ]
            }
        )
        request_id = f"{self.client_id}-create-topic-{uuid.uuid4().hex[:12]}"
        headers = {
            **_JSON_HEADERS,
            "Authorization": f"Bearer {token}",
            "X-Request-ID": request_id,
            "X-Client-ID": f"{self.client_id}-admin",
        }
        client = self._require_client()
        deadline = time.monotonic() + timeout_s
        backoff = Backoff(initial_s=0.2, max_s=2.0)
        while True:
            try:
                try:
                    response = await client.post(
                        CREATE_TOPICS_PATH, content=body, headers=headers, timeout=timeout_s
                    )
                except httpx.TransportError as error:
                    raise _Transient(type(error).__name__) from None
                answer = self._answer(response)
                break
            except _Transient as error:
                delay = backoff.next(error.retry_after_s or 0.0)
                if time.monotonic() + delay > deadline:
                    raise SimulatorError(f"CreateTopics {name}: {error.kind}") from None
                await asyncio.sleep(delay)
            except _Refused as error:
                raise SimulatorError(f"CreateTopics {name} refused: {error}") from None
        topic: dict[str, Any] = (answer.get("topics") or [{}])[0]
        if topic.get("error_code") == Errors.NONE:
            await self.sync_metadata(max(1.0, deadline - time.monotonic()))
        return topic

    async def fail_log_dir(
        self,
        broker_id: int,
        dir_index: int = 0,
        *,
        timeout_s: float = 30.0,
        wait_applied: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> LogDirResult:
        """Log directory `dir_index` of broker `broker_id` fails: the broker reports every
        replica in it offline in one AlterReplicaState (retried until accepted or `timeout_s`)
        and its heartbeats list the directory in `offline_log_dirs`. With `wait_applied`, waits
        (within `timeout_s`) until the metadata shows them offline. `progress` gets status lines.
        """
        broker = self._get(broker_id)
        self._check_dir(broker, dir_index)
        say = _progress(progress)
        async with broker.dir_lock:
            started = time.monotonic()
            deadline = started + timeout_s
            state = broker.state
            if dir_index not in state.failed_log_dirs:
                state.failed_log_dirs = tuple(sorted((*state.failed_log_dirs, dir_index)))
                if state.epoch is not None:
                    broker.wake.set()  # heartbeat now, with the directory offline
            say(
                f"broker {broker_id}: log dir {dir_index} ({state.log_dirs[dir_index]}) failed; "
                "reporting its replicas offline (AlterReplicaState)"
            )
            result = await self._report_offline(broker, dir_index, deadline, say)
            if result.error is None and wait_applied and result.done:
                say(
                    f"broker {broker_id}: the controller accepted {len(result.done)} of "
                    f"{len(result.partitions)} replicas; waiting for the metadata to show them "
                    "offline"
                )
                result.applied = await self.wait_for(
                    lambda s: s._all_offline(broker_id, result.done),
                    max(0.0, deadline - time.monotonic()),
                )
                if not result.applied:
                    result.error = "timed out waiting for the controller to apply the report"
            elif result.error is None and not result.done:
                result.applied = True  # nothing was there to report
            result.elapsed_s = time.monotonic() - started
            say(self._dir_summary(result))
            return result

    async def repair_log_dir(
        self,
        broker_id: int,
        dir_index: int = 0,
        *,
        timeout_s: float = 30.0,
        progress: Callable[[str], None] | None = None,
    ) -> LogDirResult:
        """Log directory `dir_index` of broker `broker_id` works again: heartbeats stop listing
        it, and each partition whose replica there is offline or out of the ISR is taken back
        into the ISR by its leader's AlterPartition. Waits (within `timeout_s`) until the
        metadata shows every such replica in the ISR and not offline."""
        broker = self._get(broker_id)
        self._check_dir(broker, dir_index)
        say = _progress(progress)
        async with broker.dir_lock:
            started = time.monotonic()
            deadline = started + timeout_s
            state = broker.state
            result = LogDirResult(
                "repair", broker_id, dir_index, state.log_dirs[dir_index], broker_epoch=state.epoch
            )
            if dir_index in state.failed_log_dirs:
                state.failed_log_dirs = tuple(d for d in state.failed_log_dirs if d != dir_index)
                if state.epoch is not None:
                    broker.wake.set()  # heartbeat now, without the directory
            broker.reported_epochs.pop(dir_index, None)
            say(
                f"broker {broker_id}: log dir {dir_index} ({state.log_dirs[dir_index]}) repaired; "
                "its replicas rejoin the ISR through their leaders (AlterPartition)"
            )
            await self._rejoin(broker, dir_index, result, deadline, say)
            result.elapsed_s = time.monotonic() - started
            say(self._dir_summary(result))
            return result

    # --- forwarding (KIP-590) ----------------------------------------------------------------
    async def forward_admin_request(
        self,
        broker_id: int,
        api_name: str | int,
        body: dict[str, Any],
        principal: str = "User:alice",
        *,
        client_id: str = DEFAULT_ADMIN_CLIENT_ID,
        client_host: str = "127.0.0.1",
        token_authenticated: bool = False,
        api_version: int = 0,
        timeout_s: float = DEFAULT_FORWARD_TIMEOUT_S,
        progress: Callable[[str], None] | None = None,
    ) -> ForwardResult:
        """Broker `broker_id` redirects a client's admin request to the controller (KIP-590).

        `api_name` is a forwardable RPC of `controlplane.forwarding.ADMIN_APIS` (its name, e.g.
        "IncrementalAlterConfigs", its path "incremental-alter-configs" or its apiKey 44);
        `body` the request as the client sent it to the broker; `principal` the client as the
        broker authenticated it ("User:name"), `client_id` and `client_host` the client's. The
        Envelope goes out with the broker's token and `forwarding_broker_id`; NOT_CONTROLLER,
        other 5xx and connection errors are retried with backoff and the same request id until
        `timeout_s` (a broker still registering is waited for within it too). Returns the
        client's answer (see ForwardResult). Raises ValueError for an unknown or
        non-forwardable RPC, a malformed principal or body, or a broker that is shut down."""
        broker = self._get(broker_id)
        api = admin_api(api_name)
        request_principal = principal_fields(principal, token_authenticated=token_authenticated)
        if not isinstance(body, dict):
            raise ValueError(f"{api.name}: the request body must be a JSON object.")
        state = broker.state
        if state.shut_down:
            raise ValueError(f"broker {broker_id} is shut down: it takes no client requests.")
        say = _progress(progress)
        started = time.monotonic()
        deadline = started + timeout_s
        broker.correlation_seq += 1
        result = ForwardResult(
            broker_id=broker_id,
            api=api.name,
            api_key=api.api_key,
            principal=f"{request_principal['type']}:{request_principal['name']}",
            client_id=client_id,
            client_host=client_host,
            correlation_id=broker.correlation_seq,
        )
        self.counters.forwarded_requests += 1
        state.forwarded_requests += 1
        if state.epoch is None:
            say(f"broker {broker_id}: waiting for its registration before forwarding")
            if (
                not await self.wait_for(
                    lambda _: state.epoch is not None or state.shut_down,
                    max(0.0, deadline - time.monotonic()),
                )
                or state.epoch is None
            ):
                return self._forward_failed(
                    result, Errors.REQUEST_TIMED_OUT, "the broker never registered", started, say
                )
        result.envelope = envelope_request(
            api,
            body,
            principal=request_principal,
            client_id=client_id,
            client_host=client_host,
            correlation_id=result.correlation_id,
            api_version=api_version,
            forwarding_broker_id=broker_id,
        )
        # One request id for every attempt: the controller applies the write once.
        result.request_id = self._next_request_id(broker, "fwd")
        payload = _dumps(result.envelope)
        say(
            f"broker {broker_id}: forwarding {api.name} (apiKey {api.api_key}) of "
            f"{result.principal} (client {client_id or '-'} at {client_host or '-'}) to the "
            f"controller in an Envelope, request id {result.request_id}"
        )
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while True:
            result.attempts += 1
            try:
                answer = await self._post(
                    ENVELOPE_PATH,
                    payload,
                    result.request_id,
                    broker_id,
                    timeout_s=max(0.1, deadline - time.monotonic()),
                )
                if answer.get("error_code") == Errors.NOT_CONTROLLER:
                    raise _Transient("NOT_CONTROLLER")
                break
            except _Transient as error:
                self._failed(broker, f"Envelope {error.kind}")
                self.counters.retries += 1
                result.retried.append(error.kind)
                delay = backoff.next(error.retry_after_s or 0.0)
                if time.monotonic() + delay > deadline:
                    return self._forward_failed(
                        result,
                        Errors.REQUEST_TIMED_OUT,
                        f"no answer from the controller within {timeout_s:g} s "
                        f"({result.attempts} requests; last: {error.kind})",
                        started,
                        say,
                    )
                say(
                    f"broker {broker_id}: Envelope: {error.kind}; retrying in {delay:.1f} s "
                    f"with the same request id"
                )
                await asyncio.sleep(delay)
            except _Refused as error:
                self._failed(broker, f"Envelope {error}")
                return self._forward_failed(
                    result, Errors.UNKNOWN_SERVER_ERROR, str(error), started, say
                )
        code = answer.get("error_code")
        header = answer.get("response_header") or {}
        data = answer.get("response_data")
        if code != Errors.NONE or not isinstance(data, dict):
            self._failed(broker, f"Envelope {_error_name(code)}", answer)
            return self._forward_failed(
                result,
                Errors.UNKNOWN_SERVER_ERROR,
                f"{_error_name(code)}: {answer.get('error_message')}",
                started,
                say,
            )
        if header.get("correlation_id") != result.correlation_id:
            return self._forward_failed(
                result,
                Errors.UNKNOWN_SERVER_ERROR,
                f"the answer's correlation id {header.get('correlation_id')} is not "
                f"{result.correlation_id}",
                started,
                say,
            )
        result.delivered = True
        result.response_status = int(answer.get("response_status") or 200)
        result.response_data = data
        result.elapsed_s = time.monotonic() - started
        say(_forward_summary(result))
        return result

    def _forward_failed(
        self,
        result: ForwardResult,
        error: Errors,
        why: str,
        started: float,
        say: Callable[[str], None],
    ) -> ForwardResult:
        """The client's answer when the envelope brought none: `error` (REQUEST_TIMED_OUT, or
        UNKNOWN_SERVER_ERROR for an envelope the controller refused)."""
        result.envelope_error = why
        result.response_data = {
            "error_code": int(error),
            "error": error.name,
            "error_message": (
                "The request timed out waiting for the controller."
                if error is Errors.REQUEST_TIMED_OUT
                else "The broker could not forward the request to the controller."
            ),
        }
        result.elapsed_s = time.monotonic() - started
        say(_forward_summary(result))
        return result

    # --- log directories: the machinery ------------------------------------------------------
    def _check_dir(self, broker: _Broker, dir_index: int) -> None:
        count = len(broker.state.log_dirs)
        if not 0 <= dir_index < count:
            raise ValueError(
                f"broker {broker.state.broker_id} has log dirs 0..{count - 1}, not {dir_index}"
            )

    def _all_offline(self, broker_id: int, named: Sequence[tuple[str, int]]) -> bool:
        for topic, index in named:
            view = self.partition(topic, index)
            if view is not None and broker_id not in view.offline_replicas:
                return False
        return True

    def _spawn(self, coroutine: Any, name: str) -> None:
        task = asyncio.create_task(coroutine, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _next_request_id(self, broker: _Broker, kind: str) -> str:
        broker.request_seq += 1
        state = broker.state
        return f"{self.client_id}-b{state.broker_id}-{kind}-{state.epoch}-{broker.request_seq}"

    async def _report_after_registration(self, broker: _Broker) -> None:
        """A new incarnation with failed directories reports their replicas offline again,
        once it has read the log up to its registration (as a starting broker would)."""
        state = broker.state
        epoch = state.epoch
        await self.wait_for(lambda s: s.metadata_offset >= (epoch or 0), 60.0)
        async with broker.dir_lock:
            for dir_index in state.failed_log_dirs:
                if state.epoch is None or broker.reported_epochs.get(dir_index) == state.epoch:
                    continue
                result = await self._report_offline(
                    broker, dir_index, time.monotonic() + 60.0, _progress(None)
                )
                logger.info("%s", self._dir_summary(result))

    async def _report_offline(
        self, broker: _Broker, dir_index: int, deadline: float, say: Callable[[str], None]
    ) -> LogDirResult:
        """One AlterReplicaState naming every replica in the directory, until accepted."""
        state = broker.state
        broker_id = state.broker_id
        result = LogDirResult("fail", broker_id, dir_index, state.log_dirs[dir_index])
        stale_epoch: int | None = None
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while True:
            if state.shut_down:
                result.error = "the broker is shut down"
                return result
            if state.epoch is None or state.epoch == stale_epoch:
                say(f"broker {broker_id}: waiting for a registration to report with")
                registered = await self.wait_for(
                    _registered_anew(state, stale_epoch), max(0.0, deadline - time.monotonic())
                )
                if not registered:
                    result.error = "timed out waiting for the broker to register"
                    return result
                continue
            epoch = state.epoch
            # Name every replica the broker holds there: read the log up to now first.
            await self.sync_metadata(max(0.5, min(10.0, deadline - time.monotonic())))
            replicas = self.replicas_in_log_dir(broker_id, dir_index)
            result.partitions = [(v.topic, v.partition) for v in replicas]
            result.broker_epoch = epoch
            if not replicas:
                say(f"broker {broker_id}: log dir {dir_index} holds no replica; nothing to report")
                broker.reported_epochs[dir_index] = epoch
                return result
            by_topic: dict[str, list[int]] = {}
            for view in replicas:
                by_topic.setdefault(view.topic, []).append(view.partition)
            request = {
                "broker_id": broker_id,
                "broker_epoch": epoch,
                "new_state": OFFLINE_REPLICA_EVENT,
                "reason": f"log dir {state.log_dirs[dir_index]} failed (simulated)",
                "topics": [{"name": t, "partitions": p} for t, p in sorted(by_topic.items())],
            }
            request_id = self._next_request_id(broker, "ars")
            body = _dumps(request)
            # The same request id on every retry: the controller applies it once.
            while True:
                result.attempts += 1
                try:
                    answer = await self._post(ALTER_REPLICA_STATE_PATH, body, request_id, broker_id)
                    code = answer.get("error_code")
                    if code == Errors.NOT_CONTROLLER:
                        raise _Transient("NOT_CONTROLLER")
                    break
                except _Transient as error:
                    self._failed(broker, f"AlterReplicaState {error.kind}")
                    self.counters.retries += 1
                    delay = backoff.next(error.retry_after_s or 0.0)
                    if time.monotonic() + delay > deadline:
                        result.error = f"gave up: {error.kind}"
                        return result
                    say(
                        f"broker {broker_id}: AlterReplicaState: {error.kind}; retrying in "
                        f"{delay:.1f} s"
                    )
                    await asyncio.sleep(delay)
                except _Refused as error:
                    self._failed(broker, f"AlterReplicaState {error}")
                    result.error = str(error)
                    return result
            if code == Errors.STALE_BROKER_EPOCH:
                self._failed(broker, "AlterReplicaState STALE_BROKER_EPOCH", answer)
                say(
                    f"broker {broker_id}: epoch {epoch} is stale; reporting again once it "
                    "registered anew"
                )
                stale_epoch = epoch
                continue
            if code != Errors.NONE:
                self._failed(broker, f"AlterReplicaState {_error_name(code)}", answer)
                result.error = f"{_error_name(code)}: {answer.get('error_message')}"
                return result
            backoff.reset()
            for topic in answer.get("topics") or []:
                for item in topic.get("partitions") or []:
                    tp = (str(topic["name"]), int(item["partition_index"]))
                    if item.get("error_code") == Errors.NONE:
                        result.done.append(tp)
                    else:
                        result.refused.setdefault(_error_name(item.get("error_code")), []).append(
                            tp
                        )
            result.request_id = request_id
            result.request = request
            state.replica_reports += 1
            broker.reported_epochs[dir_index] = epoch
            return result

    async def _rejoin(
        self,
        broker: _Broker,
        dir_index: int,
        result: LogDirResult,
        deadline: float,
        say: Callable[[str], None],
    ) -> None:
        """Rounds of AlterPartition from the leaders until every replica is back in the ISR."""
        joiner = broker.state.broker_id
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        await self.sync_metadata(max(0.5, min(10.0, deadline - time.monotonic())))
        first = True
        while True:
            lagging = [
                view
                for view in self.replicas_in_log_dir(joiner, dir_index)
                if joiner in view.offline_replicas or joiner not in view.isr
            ]
            if first:
                first = False
                result.partitions = [(v.topic, v.partition) for v in lagging]
                say(f"broker {joiner}: {len(lagging)} replicas to take back into the ISR")
            result.done = [
                tp
                for tp in result.partitions
                if tp not in {(v.topic, v.partition) for v in lagging}
            ]
            if not lagging:
                result.pending = {}
                result.applied = True
                return
            waiting: dict[tuple[str, int], str] = {}
            by_leader: dict[int, list[PartitionView]] = {}
            state = broker.state
            for view in lagging:
                tp = (view.topic, view.partition)
                leader = self._brokers.get(view.leader)
                if view.leader == NO_LEADER:
                    waiting[tp] = "no leader (only a restart of the broker clears it)"
                elif leader is None:
                    waiting[tp] = f"leader {view.leader} is not a simulated broker"
                elif not leader.state.registered or leader.state.epoch is None:
                    waiting[tp] = f"leader {view.leader} is not registered"
                elif not state.unfenced:
                    waiting[tp] = f"broker {joiner} is fenced: not eligible for the ISR"
                else:
                    by_leader.setdefault(view.leader, []).append(view)
            progressed = False
            stale = False
            for leader_id, views in sorted(by_leader.items()):
                outcome = await self._alter_partition(self._brokers[leader_id], views, joiner)
                result.attempts += 1
                for view in views:
                    tp = (view.topic, view.partition)
                    error = outcome.get(tp, "no answer")
                    if error is None:
                        progressed = True
                    else:
                        waiting[tp] = error
                        stale = stale or error in _STALE_NAMES
            result.pending = waiting
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reasons = Counter(waiting.values())
                result.error = "timed out; still out of the ISR: " + ", ".join(
                    f"{n} ({why})" for why, n in reasons.most_common()
                )
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
            await self.sync_metadata(max(0.5, min(10.0, deadline - time.monotonic())))

    async def _alter_partition(
        self, leader: _Broker, views: list[PartitionView], joiner: int
    ) -> dict[tuple[str, int], str | None]:
        """The leader's AlterPartition adding `joiner` to each partition's ISR, with the epochs
        the follower knows. Per partition: None when the joiner is in the ISR now, else why not.
        """
        state = leader.state
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for view in views:
            new_isr = [*view.isr, joiner] if joiner not in view.isr else list(view.isr)
            by_topic.setdefault(view.topic, []).append(
                {
                    "partition_index": view.partition,
                    "leader_epoch": view.leader_epoch,
                    "new_isr": new_isr,
                    "partition_epoch": view.partition_epoch,
                }
            )
        body = _dumps(
            {
                "broker_id": state.broker_id,
                "broker_epoch": state.epoch,
                "topics": [{"topic_name": t, "partitions": p} for t, p in sorted(by_topic.items())],
            }
        )
        everything = [(v.topic, v.partition) for v in views]
        try:
            answer = await self._post(
                ALTER_PARTITION_PATH,
                body,
                self._next_request_id(leader, "ap"),
                state.broker_id,
            )
        except (_Transient, _Refused) as error:
            self._failed(leader, f"AlterPartition {error}")
            return dict.fromkeys(everything, f"AlterPartition {error}")
        code = answer.get("error_code")
        if code != Errors.NONE:
            self._failed(leader, f"AlterPartition {_error_name(code)}", answer)
            return dict.fromkeys(everything, _error_name(code))
        outcome: dict[tuple[str, int], str | None] = {}
        for topic in answer.get("topics") or []:
            for item in topic.get("partitions") or []:
                tp = (str(topic["topic_name"]), int(item["partition_index"]))
                item_code = item.get("error_code")
                if item_code in (Errors.NONE, Errors.NEW_LEADER_ELECTED) and joiner in (
                    item.get("isr") or []
                ):
                    outcome[tp] = None
                else:
                    outcome[tp] = _error_name(item_code)
                    logger.info(
                        "broker %d: AlterPartition %s-%d: %s",
                        state.broker_id,
                        tp[0],
                        tp[1],
                        outcome[tp],
                    )
        return outcome

    def _dir_summary(self, result: LogDirResult) -> str:
        head = f"broker {result.broker_id}: log dir {result.dir_index}"
        took = f" in {result.elapsed_s:.1f} s" if result.elapsed_s else ""
        if result.action == "fail":
            text = (
                f"{head} failed: {len(result.done)}/{len(result.partitions)} replicas reported "
                f"offline (epoch {result.broker_epoch}, {result.attempts} requests)"
            )
            if result.refused:
                text += "; refused: " + ", ".join(
                    f"{len(tps)} {name}" for name, tps in sorted(result.refused.items())
                )
            if result.applied and result.done:
                text += "; the metadata shows them offline"
        else:
            text = (
                f"{head} repaired: {len(result.done)}/{len(result.partitions)} replicas back in "
                f"the ISR ({result.attempts} AlterPartition requests)"
            )
        if result.error:
            text += f"; {result.error}"
        return text + took

    def _view(
        self, topic_id: str, index: int, registration: PartitionRegistration
    ) -> PartitionView:
        return PartitionView(
            topic=self._topic_names.get(topic_id, topic_id),
            partition=index,
            topic_id=topic_id,
            replicas=registration.replicas,
            isr=registration.isr,
            leader=registration.leader,
            leader_epoch=registration.leader_epoch,
            partition_epoch=registration.partition_epoch,
            offline_replicas=registration.offline_replicas,
            is_canary=registration.is_canary,
        )

    def _replay(self, record_type: str, data: dict[str, Any]) -> None:
        """Apply a topic or partition record as the controller's image does."""
        try:
            if record_type == "TopicRecord":
                topic_id, name = str(data["topic_id"]), str(data["name"])
                self._topic_names[topic_id] = name
                self._topic_ids[name] = topic_id
                self._partitions.setdefault(topic_id, {})
            elif record_type == "PartitionRecord":
                self._partitions.setdefault(str(data["topic_id"]), {})[
                    int(data["partition_id"])
                ] = PartitionRegistration(
                    replicas=tuple(data["replicas"]),
                    isr=tuple(data["isr"]),
                    leader=int(data["leader"]),
                    leader_epoch=int(data.get("leader_epoch", 0)),
                    partition_epoch=int(data.get("partition_epoch", 0)),
                    offline_replicas=tuple(data.get("offline_replicas") or ()),
                    is_canary=bool(data.get("is_canary", False)),
                )
            elif record_type == "PartitionChangeRecord":
                parts = self._partitions.get(str(data["topic_id"]))
                index = int(data["partition_id"])
                current = None if parts is None else parts.get(index)
                if parts is None or current is None:
                    return  # created before the follower's start (track_partitions=False)
                parts[index] = current.merge(
                    PartitionChangeRecord(
                        partition_id=index,
                        topic_id=str(data["topic_id"]),
                        isr=_int_tuple(data.get("isr")),
                        leader=int(data.get("leader", NO_LEADER_CHANGE)),
                        replicas=_int_tuple(data.get("replicas")),
                        offline_replicas=_int_tuple(data.get("offline_replicas")),
                    )
                )
            elif record_type == "RemoveTopicRecord":
                topic_id = str(data["topic_id"])
                self._partitions.pop(topic_id, None)
                removed = self._topic_names.pop(topic_id, None)
                if removed is not None and self._topic_ids.get(removed) == topic_id:
                    del self._topic_ids[removed]
        except (KeyError, TypeError, ValueError) as error:
            self.counters.errors += 1
            self.counters.errors_by_kind["metadata replay"] += 1
            logger.warning("could not replay a %s (%r): %s", record_type, data, error)

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
                    "offline_log_dirs": list(s.offline_log_dirs),
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
            "log_dirs": list(state.log_dirs),
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
            if state.failed_log_dirs:
                # A restarted broker whose directory is still broken reports its replicas there
                # offline again: registering afresh cleared the controller's offline marks.
                self._spawn(self._report_after_registration(broker), f"report-{state.broker_id}")
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
            self.log_end_at_start = int(answer["last_offset"])
            self.metadata_offset = -1 if self.track_partitions else self.log_end_at_start
            return

    async def _refresh_cluster_id(self) -> None:
        with contextlib.suppress(_Transient, _Refused):
            await self._get_metadata(after_offset=-1, max_records=1, wait_ms=0)

    async def _follow(self) -> None:
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while not self._closing:
            asked = time.monotonic()
            catching_up = self.metadata_offset < self.log_end_at_start
            try:
                answer = await self._get_metadata(
                    after_offset=self.metadata_offset,
                    max_records=max(self.metadata_max_records, CATCH_UP_MAX_RECORDS)
                    if catching_up
                    else self.metadata_max_records,
                    wait_ms=0 if catching_up else self.metadata_wait_ms,
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
                    record_type = str(record.get("type"))
                    self.counters.records_by_type[record_type] += 1
                    if record_type in _PARTITION_RECORD_TYPES:
                        self._replay(record_type, record.get("data") or {})
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
        self,
        path: str,
        body: bytes,
        request_id: str,
        broker_id: int,
        *,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        client = self._require_client()
        headers = {
            **_JSON_HEADERS,
            "X-Request-ID": request_id,
            "X-Client-ID": f"{self.client_id}-broker-{broker_id}",
        }
        timeout = httpx.USE_CLIENT_DEFAULT if timeout_s is None else httpx.Timeout(timeout_s)
        for attempt in (0, 1):
            try:
                response = await client.post(path, content=body, headers=headers, timeout=timeout)
                break
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as error:
                # A kept-alive connection the server closed meanwhile: one immediate retry on a
                # fresh one. Safe: heartbeats are idempotent, registrations and envelopes carry
                # a request id.
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


_PARTITION_RECORD_TYPES = frozenset(
    {"TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RemoveTopicRecord"}
)
_STALE_NAMES = frozenset(error.name for error in STALE_METADATA_ERRORS)


def forwardable_apis() -> dict[str, AdminApi]:
    """The RPCs a broker redirects in an Envelope: `controlplane.forwarding.ADMIN_APIS`
    (imported on first use, as it needs Django's apps loaded: the simulator itself does not)."""
    from controlplane.controller.api_keys import ADMIN_APIS

    return {name: api for name, api in ADMIN_APIS.items() if api.forwardable}


def admin_api(name: str | int) -> AdminApi:
    """A forwardable RPC by its name ("IncrementalAlterConfigs", any case), its API path
    ("incremental-alter-configs") or its apiKey (44 or "44"). ValueError for anything else."""
    from controlplane.controller.api_keys import ADMIN_APIS

    wanted = str(name).strip()
    found = next(
        (
            api
            for api in ADMIN_APIS.values()
            if wanted.lower() in (api.name.lower(), api.path) or wanted == str(api.api_key)
        ),
        None,
    )
    if found is not None and found.forwardable:
        return found
    if found is not None:
        raise ValueError(f"{found.name} is not forwarded: a broker answers it itself.")
    forwardable = sorted(forwardable_apis().values(), key=lambda api: api.api_key)
    raise ValueError(
        f"Unknown admin RPC {name!r}; forwardable: "
        + ", ".join(f"{api.name} ({api.api_key})" for api in forwardable)
    )


def principal_fields(principal: str, *, token_authenticated: bool = False) -> dict[str, Any]:
    """The Envelope's `request_principal` for a principal like "User:alice" (Kafka's principal
    serde: type and name). ValueError for another principal type or an empty name."""
    kind, _, name = principal.partition(":")
    if kind != "User" or not name:
        raise ValueError(f"principal {principal!r}: expected User:<name>.")
    fields: dict[str, Any] = {"type": kind, "name": name}
    if token_authenticated:
        fields["token_authenticated"] = True
    return fields


def envelope_request(
    api: AdminApi,
    body: dict[str, Any],
    *,
    principal: dict[str, Any],
    client_id: str,
    client_host: str,
    correlation_id: int,
    api_version: int = 0,
    forwarding_broker_id: int | None = None,
) -> dict[str, Any]:
    """The Envelope (`POST /internal/v1/envelope`) wrapping a client's request, as a broker
    sends it (the benchmark sends the very same body)."""
    envelope: dict[str, Any] = {
        "request_header": {
            "request_api_key": api.api_key,
            "request_api_version": api_version,
            "client_id": client_id,
            "correlation_id": correlation_id,
        },
        "request_data": body,
        "request_principal": principal,
        "client_host_address": client_host,
    }
    if forwarding_broker_id is not None:
        envelope["forwarding_broker_id"] = forwarding_broker_id
    return envelope


def _forward_summary(result: ForwardResult) -> str:
    head = f"broker {result.broker_id}: {result.api} of {result.principal}"
    took = f"{result.attempts} request(s), {result.elapsed_s * 1000:.0f} ms"
    if not result.delivered:
        return (
            f"{head}: {result.response_data.get('error')} for the client ({took}; "
            f"{result.envelope_error})"
        )
    return (
        f"{head}: the controller answered HTTP {result.response_status} ({took}, request id "
        f"{result.request_id}): {answer_summary(result.response_data)}"
    )


def answer_summary(data: dict[str, Any], limit: int = 10) -> str:
    """An admin RPC's answer in a line: its top-level error, or each resource's."""
    code = data.get("error_code")
    if isinstance(code, int) and code != Errors.NONE:
        return f"{_error_name(code)}: {data.get('error_message')}"
    parts: list[str] = []
    for key, value in data.items():
        if not isinstance(value, list):
            continue
        for index, item in enumerate(value):
            if not isinstance(item, dict) or "error_code" not in item:
                continue
            label = str(item.get("resource_name") or item.get("name") or f"{key}[{index}]")
            if item.get("resource_type"):
                label = f"{item['resource_type']} {label}"
            text = f"{label}: {_error_name(item['error_code'])}"
            if item["error_code"] != Errors.NONE and item.get("error_message"):
                text += f" ({item['error_message']})"
            parts.append(text)
    if len(parts) > limit:
        parts = [*parts[:limit], f"... {len(parts) - limit} more"]
    return "; ".join(parts) or _error_name(code if code is not None else Errors.NONE)


async def _cancel_until_done(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and wait for them, cancelling again those still running: a cancel that
    arrives while httpcore holds its connection lock (an anyio shielded checkpoint) can be lost,
    and the task then goes on with its next request as if nothing happened."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)
    await asyncio.gather(*tasks, return_exceptions=True)


def _registered_anew(
    state: BrokerState, stale_epoch: int | None
) -> Callable[[BrokerSimulator], bool]:
    """wait_for's predicate: the broker registered with an epoch other than `stale_epoch`, or
    is shut down."""
    return lambda _: state.shut_down or state.epoch not in (None, stale_epoch)


def _int_tuple(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(v) for v in value)


def _progress(callback: Callable[[str], None] | None) -> Callable[[str], None]:
    """Progress lines go to `callback`, and to the log at INFO."""

    def say(line: str) -> None:
        logger.info("%s", line)
        if callback is not None:
            callback(line)

    return say


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
