"""Rows of the cluster pages: brokers (with what they hold) and their metadata records."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from brokers.models import Broker
from brokers.selectors import broker_as_dict
from controlplane.controller.config_schema import redact_record_data
from controlplane.models import MetadataRecord
from frontend.tables.common import format_age, format_ms
from replicas.models import BrokerLoad

STATE_BADGES = {
    "UNFENCED": "ok",
    "FENCED": "danger",
    "CONTROLLED_SHUTDOWN": "warn",
}


def format_listener(listener: dict[str, Any]) -> str:
    return (
        f"{listener.get('name', '?')}://{listener.get('host', '?')}:{listener.get('port', '?')}"
        f" ({listener.get('security_protocol', '?')})"
    )


@dataclasses.dataclass(frozen=True, slots=True)
class LogDirRow:
    log_dir: str
    offline: bool


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    state: str
    badge: str
    epoch: int
    incarnation_id: str
    pod: str
    rack: str | None
    listeners: list[str]
    log_dirs: list[LogDirRow]
    offline_log_dir_names: list[str]  # named by its heartbeats
    last_contact_ms: int | None
    last_heartbeat: str
    last_heartbeat_at: str
    metadata_offset: int | None
    # What it holds (the controller's counts): leaders, replicas, and the trouble among them.
    leaders: int = 0
    replicas: int = 0
    in_sync_replicas: int = 0
    offline_replicas: int = 0
    preferred_leaders: int = 0
    under_replicated_partitions: int = 0
    under_min_isr_partitions: int = 0
    offline_log_dirs: int = 0

    @property
    def unnamed_offline_dir(self) -> bool:
        """AlterReplicaState told of a failed dir its heartbeats do not name."""
        return self.offline_log_dirs > len(self.offline_log_dir_names)

    @property
    def out_of_sync(self) -> int:
        return self.replicas - self.in_sync_replicas


def broker_row(
    broker: Broker,
    sessions: dict[int, dict[str, int]],
    now_ms: int,
    load: BrokerLoad | None = None,
) -> BrokerRow:
    data = broker_as_dict(broker, sessions)
    offline_dirs = [str(d) for d in data["offline_log_dirs"] or []]
    figures = {f: getattr(load, f) for f in LOAD_FIELDS} if load is not None else {}
    return BrokerRow(
        broker_id=data["broker_id"],
        state=data["state"],
        badge=STATE_BADGES.get(data["state"], "muted"),
        epoch=data["broker_epoch"],
        incarnation_id=data["incarnation_id"],
        pod=data["pod"],
        rack=data["rack"],
        listeners=[format_listener(item) for item in data["listeners"] or []],
        log_dirs=[LogDirRow(str(d), str(d) in offline_dirs) for d in data["log_dirs"] or []],
        offline_log_dir_names=offline_dirs,
        last_contact_ms=data["last_contact_ms"],
        last_heartbeat=format_age(data["last_contact_ms"], now_ms),
        last_heartbeat_at=format_ms(data["last_contact_ms"]),
        metadata_offset=data["metadata_offset"],
        **figures,
    )


LOAD_FIELDS = (
    "leaders",
    "replicas",
    "in_sync_replicas",
    "offline_replicas",
    "preferred_leaders",
    "under_replicated_partitions",
    "under_min_isr_partitions",
    "offline_log_dirs",
)


def broker_rows(
    brokers: Iterable[Broker],
    sessions: dict[int, dict[str, int]],
    now_ms: int,
    loads: dict[int, BrokerLoad] | None = None,
) -> list[BrokerRow]:
    loads = loads or {}
    return [broker_row(b, sessions, now_ms, loads.get(b.broker_id)) for b in brokers]


@dataclasses.dataclass(frozen=True, slots=True)
class RecordRow:
    offset: int
    record_type: str
    controller_epoch: int
    time: str
    principal: str
    client_id: str
    request_id: str
    data: str


def record_rows(records: Iterable[MetadataRecord]) -> list[RecordRow]:
    return [
        RecordRow(
            offset=record.offset,
            record_type=record.record_type,
            controller_epoch=record.controller_epoch,
            time=format_ms(record.timestamp_ms),
            principal=record.principal,
            client_id=record.client_id,
            request_id=record.request_id,
            data=json.dumps(
                redact_record_data(record.record_type, record.data),
                sort_keys=True,
                indent=1,
                default=str,
            ),
        )
        for record in records
    ]
