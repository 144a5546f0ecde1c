"""The controller's view of cluster metadata, and the one place records are applied.

`MetadataImage` is the state after some offset of the log. `MetadataDelta` layers changes over an
image: handlers read through it while the controller replays the records they produce, so a batch
of requests sees its own earlier changes. Replaying every record of the log into an empty image
rebuilds the state exactly; `verify_metadata` depends on that.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ControlledShutdownChange,
    FencingChange,
    Listener,
    Record,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    UnregisterBrokerRecord,
)

NO_OFFSET = -1


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

    @property
    def control_state(self) -> BrokerControlState:
        if self.fenced:
            return BrokerControlState.FENCED
        if self.in_controlled_shutdown:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.UNFENCED

    def encode(self) -> str:
        return (
            f"{self.epoch}:{int(self.fenced)}:{int(self.in_controlled_shutdown)}:"
            f"{self.controlled_shutdown_offset}"
        )

    @classmethod
    def decode(cls, broker_id: int, value: str) -> BrokerStatus:
        epoch, fenced, shutting_down, cs_offset = value.split(":")
        return cls(broker_id, int(epoch), fenced == "1", shutting_down == "1", int(cs_offset))


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
        )

    def as_comparable(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(slots=True)
class MetadataImage:
    cluster_id: str
    last_offset: int = NO_OFFSET
    brokers: dict[int, BrokerRegistration] = dataclasses.field(default_factory=dict)
    acls: dict[str, AccessControlEntryRecord] = dataclasses.field(default_factory=dict)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        return iter(self.brokers.values())

    def broker_has_leaderships(self, broker_id: int) -> bool:
        # Partitions arrive with the topics capability; until then no broker leads anything.
        return False

    def apply(self, delta: MetadataDelta) -> None:
        for broker_id, broker in delta.changed_brokers.items():
            if broker is None:
                self.brokers.pop(broker_id, None)
            else:
                self.brokers[broker_id] = broker
        for acl_id, acl in delta.changed_acls.items():
            if acl is None:
                self.acls.pop(acl_id, None)
            else:
                self.acls[acl_id] = acl
        self.last_offset = delta.last_offset

    def as_comparable(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "last_offset": self.last_offset,
            "brokers": {k: v.as_comparable() for k, v in sorted(self.brokers.items())},
            "acls": {k: v.to_data() for k, v in sorted(self.acls.items())},
        }


class MetadataDelta:
    """Changes over a base image; reads see the changes first."""

    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.last_offset = base.last_offset
        self.changed_brokers: dict[int, BrokerRegistration | None] = {}
        self.changed_acls: dict[str, AccessControlEntryRecord | None] = {}
        self.replayed: list[tuple[int, Record]] = []
        self._replayers: dict[type[Record], Callable[[Any, int], None]] = {
            RegisterBrokerRecord: self._replay_register_broker,
            BrokerRegistrationChangeRecord: self._replay_broker_change,
            UnregisterBrokerRecord: self._replay_unregister_broker,
            AccessControlEntryRecord: self._replay_acl,
            RemoveAccessControlEntryRecord: self._replay_remove_acl,
        }

    @property
    def cluster_id(self) -> str:
        return self.base.cluster_id

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.changed_brokers:
            return self.changed_brokers[broker_id]
        return self.base.broker(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        for broker_id, broker in self.base.brokers.items():
            if broker_id not in self.changed_brokers:
                yield broker
        for changed in self.changed_brokers.values():
            if changed is not None:
                yield changed

    def broker_has_leaderships(self, broker_id: int) -> bool:
        return self.base.broker_has_leaderships(broker_id)

    def acl(self, acl_id: str) -> AccessControlEntryRecord | None:
        if acl_id in self.changed_acls:
            return self.changed_acls[acl_id]
        return self.base.acls.get(acl_id)

    def replay(self, record: Record) -> int:
        """Apply one record at the next offset; returns that offset."""
        offset = self.last_offset + 1
        try:
            replayer = self._replayers[type(record)]
        except KeyError:
            raise ValueError(f"No replay rule for {type(record).__name__}") from None
        replayer(record, offset)
        self.last_offset = offset
        self.replayed.append((offset, record))
        return offset

    def _replay_register_broker(self, record: RegisterBrokerRecord, offset: int) -> None:
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
        )

    def _replay_broker_change(self, record: BrokerRegistrationChangeRecord, offset: int) -> None:
        current = self._require_broker(record.broker_id, record.broker_epoch, record.TYPE)
        changes: dict[str, Any] = {}
        if record.fenced == FencingChange.FENCE:
            # A fenced broker is no longer shutting down in a controlled way: it is off.
            changes.update(
                fenced=True, in_controlled_shutdown=False, controlled_shutdown_offset=NO_OFFSET
            )
        elif record.fenced == FencingChange.UNFENCE:
            changes["fenced"] = False
        if record.in_controlled_shutdown == ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN:
            changes.update(in_controlled_shutdown=True, controlled_shutdown_offset=offset)
        self.changed_brokers[record.broker_id] = dataclasses.replace(current, **changes)

    def _replay_unregister_broker(self, record: UnregisterBrokerRecord, offset: int) -> None:
        self._require_broker(record.broker_id, record.broker_epoch, record.TYPE)
        self.changed_brokers[record.broker_id] = None

    def _replay_acl(self, record: AccessControlEntryRecord, offset: int) -> None:
        self.changed_acls[record.id] = record

    def _replay_remove_acl(self, record: RemoveAccessControlEntryRecord, offset: int) -> None:
        if self.acl(record.id) is None:
            raise ValueError(f"RemoveAccessControlEntryRecord for unknown ACL {record.id}")
        self.changed_acls[record.id] = None

    def _require_broker(self, broker_id: int, epoch: int, record_type: str) -> BrokerRegistration:
        registered = self.broker(broker_id)
        if registered is None or registered.epoch != epoch:
            raise ValueError(f"{record_type} for broker {broker_id} epoch {epoch}: not registered")
        return registered


def replay_log(cluster_id: str, records: list[Record]) -> MetadataImage:
    """Rebuild the image from the whole log, from offset 0."""
    image = MetadataImage(cluster_id=cluster_id)
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    image.apply(delta)
    return image
