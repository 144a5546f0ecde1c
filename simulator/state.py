"""What the simulator knows of its brokers and reports: their states, counters, the status line.

Plain data; the live objects belong to the simulator's event loop, and `BrokerSimulator` hands
out copies.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

# One logger for the whole package: the CLI sets the simulator's verbosity on it.
logger = logging.getLogger("simulator")


class BrokerPhase(enum.StrEnum):
    """The broker's own view of itself: Kafka's broker-side BrokerState names."""

    NOT_RUNNING = "NOT_RUNNING"  # not started yet, or stopped (see `clean_shutdown`)
    STARTING = "STARTING"  # registering, or registered but not caught up with the log
    RECOVERY = "RECOVERY"  # caught up, waiting for the controller to unfence it
    RUNNING = "RUNNING"  # the controller unfenced it (it may fence it again: see `fenced`)
    PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"  # want_shut_down sent


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
    software_version: str | None = None  # reported at registration (KIP-1095 rollouts)
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

    def copy(self) -> BrokerState:
        """A copy the caller may keep: later changes of the live state do not reach it."""
        copy = dataclasses.replace(self)
        copy.last_response = dict(self.last_response) if self.last_response else None
        return copy


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
    snapshot_loads: int = 0  # metadata snapshots loaded (a fetch answered a snapshot_id)
    snapshot_bytes: int = 0
    forwarded_requests: int = 0  # forward_admin_request() calls (each maybe several attempts)
    isr_expansion_requests: int = 0  # AlterPartitions the leaders sent to take followers back
    isr_expansions: int = 0  # followers those took back into an ISR (per partition)
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


@dataclasses.dataclass(slots=True)
class LiveBroker:
    """The live broker: its public state plus the event loop's private machinery."""

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


def progress_reporter(callback: Callable[[str], None] | None) -> Callable[[str], None]:
    """Progress lines go to `callback`, and to the log at INFO."""

    def say(line: str) -> None:
        logger.info("%s", line)
        if callback is not None:
            callback(line)

    return say
