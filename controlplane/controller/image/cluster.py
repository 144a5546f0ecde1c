"""The cluster's part of the image: broker registrations (Kafka's ClusterImage and ClusterDelta).

Replays RegisterBrokerRecord, BrokerRegistrationChangeRecord and UnregisterBrokerRecord.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import (
    NO_OFFSET,
    BrokerRegistrationChangeRecord,
    ControlledShutdownChange,
    FencingChange,
    Listener,
    Record,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)


class BrokerControlState(enum.StrEnum):
    """Kafka's BrokerControlState (BrokerHeartbeatManager)."""

    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerStatus:
    """What a heartbeat decision needs of a registration (kept in the session store's mirror)."""

    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    controlled_shutdown_offset: int = NO_OFFSET
    offline_log_dirs: tuple[str, ...] = ()  # as its heartbeats report them, sorted

    @property
    def control_state(self) -> BrokerControlState:
        """Kafka's rule: only a new registration ends a controlled shutdown, so a broker fenced
        in one stays asked to shut down (SHUTDOWN_NOW) until it registers again."""
        if self.fenced:
            if self.in_controlled_shutdown:
                return BrokerControlState.SHUTDOWN_NOW
            return BrokerControlState.FENCED
        if self.in_controlled_shutdown:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.UNFENCED

    def encode(self) -> str:
        return (
            f"{self.epoch}:{int(self.fenced)}:{int(self.in_controlled_shutdown)}:"
            f"{self.controlled_shutdown_offset}:{','.join(self.offline_log_dirs)}"
        )

    @classmethod
    def decode(cls, broker_id: int, value: str) -> BrokerStatus:
        epoch, fenced, shutting_down, cs_offset, *rest = value.split(":")
        dirs = tuple(d for d in rest[0].split(",") if d) if rest else ()
        return cls(broker_id, int(epoch), fenced == "1", shutting_down == "1", int(cs_offset), dirs)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    epoch: int
    listeners: tuple[Listener, ...]
    rack: str | None
    pod: str
    log_dirs: tuple[str, ...]
    fenced: bool
    in_controlled_shutdown: bool
    controlled_shutdown_offset: int = NO_OFFSET
    software_version: str | None = None
    offline_log_dirs: tuple[str, ...] = ()  # reported offline by its heartbeats (KIP-858)

    @property
    def control_state(self) -> BrokerControlState:
        return self.status.control_state

    @property
    def status(self) -> BrokerStatus:
        return BrokerStatus(
            self.broker_id,
            self.epoch,
            self.fenced,
            self.in_controlled_shutdown,
            self.controlled_shutdown_offset,
            self.offline_log_dirs,
        )

    def as_comparable(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(slots=True)
class ClusterImage:
    brokers: dict[int, BrokerRegistration] = dataclasses.field(default_factory=dict)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        return iter(self.brokers.values())

    def apply(self, delta: ClusterDelta) -> None:
        for broker_id, broker in delta.changed_brokers.items():
            if broker is None:
                self.brokers.pop(broker_id, None)
            else:
                self.brokers[broker_id] = broker

    def as_comparable(self) -> dict[str, Any]:
        return {"brokers": {k: v.as_comparable() for k, v in sorted(self.brokers.items())}}

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image, by broker id: each
        registration whole (its epoch, fencing, controlled shutdown and where it began), then
        the log dirs its heartbeats report offline, if any."""
        for broker_id in sorted(self.brokers):
            broker = self.brokers[broker_id]
            yield RegisterBrokerRecord(
                broker_id=broker_id,
                incarnation_id=broker.incarnation_id,
                broker_epoch=broker.epoch,
                listeners=broker.listeners,
                rack=broker.rack,
                pod=broker.pod,
                log_dirs=broker.log_dirs,
                fenced=broker.fenced,
                in_controlled_shutdown=broker.in_controlled_shutdown,
                software_version=broker.software_version,
                controlled_shutdown_offset=broker.controlled_shutdown_offset,
            )
            if broker.offline_log_dirs:
                yield BrokerRegistrationChangeRecord(
                    broker_id=broker_id,
                    broker_epoch=broker.epoch,
                    offline_log_dirs=broker.offline_log_dirs,
                )


class ClusterDelta:
    """Registrations changed over a ClusterImage; None marks an unregistered broker."""

    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self.changed_brokers: dict[int, BrokerRegistration | None] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            RegisterBrokerRecord: self.replay_register_broker,
            BrokerRegistrationChangeRecord: self.replay_broker_change,
            UnregisterBrokerRecord: self.replay_unregister_broker,
        }

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.changed_brokers:
            return self.changed_brokers[broker_id]
        return self.image.broker(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        for broker_id, broker in self.image.brokers.items():
            if broker_id not in self.changed_brokers:
                yield broker
        for changed in self.changed_brokers.values():
            if changed is not None:
                yield changed

    def replay_register_broker(self, record: RegisterBrokerRecord, offset: int) -> None:
        self.changed_brokers[record.broker_id] = BrokerRegistration(
            broker_id=record.broker_id,
            incarnation_id=record.incarnation_id,
            epoch=record.broker_epoch,
            listeners=record.listeners,
            rack=record.rack,
            pod=record.pod,
            log_dirs=record.log_dirs,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            controlled_shutdown_offset=record.controlled_shutdown_offset,
            software_version=record.software_version,
        )

    def replay_broker_change(self, record: BrokerRegistrationChangeRecord, offset: int) -> None:
        current = self._require_broker(record.broker_id, record.broker_epoch, record.TYPE)
        changes: dict[str, Any] = {}
        if record.fenced == FencingChange.FENCE:
            # The controlled-shutdown flag stays: in Kafka's records only a new registration
            # clears it (BrokerRegistration.cloneWith), and a broker's image must read the same.
            changes["fenced"] = True
        elif record.fenced == FencingChange.UNFENCE:
            changes["fenced"] = False
        if record.in_controlled_shutdown == ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN:
            # The offset the shutdown began at: the broker may leave once every active broker
            # has seen it (BrokerHeartbeatManager's lowestActiveOffset).
            changes.update(in_controlled_shutdown=True, controlled_shutdown_offset=offset)
        if record.offline_log_dirs is not None:
            changes["offline_log_dirs"] = tuple(record.offline_log_dirs)
        self.changed_brokers[record.broker_id] = dataclasses.replace(current, **changes)

    def replay_unregister_broker(self, record: UnregisterBrokerRecord, offset: int) -> None:
        self._require_broker(record.broker_id, record.broker_epoch, record.TYPE)
        self.changed_brokers[record.broker_id] = None

    def _require_broker(self, broker_id: int, epoch: int, record_type: str) -> BrokerRegistration:
        registered = self.broker(broker_id)
        if registered is None or registered.epoch != epoch:
            raise ValueError(f"{record_type} for broker {broker_id} epoch {epoch}: not registered")
        return registered
