"""Rows of the cluster pages: brokers, their metadata records, replica incidents."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from brokers.models import Broker
from brokers.selectors import broker_as_dict
from controlplane.controller.config_schema import redact_record_data
from controlplane.controller.records import NO_LEADER_CHANGE
from controlplane.models import MetadataRecord
from frontend.tables.common import format_age, format_ms

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
class BrokerRow:
    broker_id: int
    state: str
    badge: str
    epoch: int
    incarnation_id: str
    pod: str
    rack: str | None
    listeners: list[str]
    log_dirs: list[str]
    last_contact_ms: int | None
    last_heartbeat: str
    last_heartbeat_at: str
    metadata_offset: int | None


def broker_row(broker: Broker, sessions: dict[int, dict[str, int]], now_ms: int) -> BrokerRow:
    data = broker_as_dict(broker, sessions)
    return BrokerRow(
        broker_id=data["broker_id"],
        state=data["state"],
        badge=STATE_BADGES.get(data["state"], "muted"),
        epoch=data["broker_epoch"],
        incarnation_id=data["incarnation_id"],
        pod=data["pod"],
        rack=data["rack"],
        listeners=[format_listener(item) for item in data["listeners"] or []],
        log_dirs=[str(item) for item in data["log_dirs"] or []],
        last_contact_ms=data["last_contact_ms"],
        last_heartbeat=format_age(data["last_contact_ms"], now_ms),
        last_heartbeat_at=format_ms(data["last_contact_ms"]),
        metadata_offset=data["metadata_offset"],
    )


def broker_rows(
    brokers: Iterable[Broker], sessions: dict[int, dict[str, int]], now_ms: int
) -> list[BrokerRow]:
    return [broker_row(broker, sessions, now_ms) for broker in brokers]


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


@dataclasses.dataclass(frozen=True, slots=True)
class IncidentRow:
    offset: int
    time: str
    principal: str
    request_id: str
    topic: str
    partition_index: int
    offline_replicas: list[int]
    new_leader: int
    leaderless: bool
    new_isr: list[int] | None

    @property
    def leader_changed(self) -> bool:
        return self.new_leader != NO_LEADER_CHANGE


def incident_rows(incidents: Iterable[dict[str, Any]]) -> list[IncidentRow]:
    """Rows from `replicas.selectors.replica_incidents()`; entries that name no offline replica
    (a change recorded with the field unset) are not offline-replica incidents and are left out."""
    rows = []
    for item in incidents:
        offline = [int(b) for b in item.get("offline_replicas") or []]
        if not offline:
            continue
        new_isr = item.get("new_isr")
        rows.append(
            IncidentRow(
                offset=int(item["offset"]),
                time=format_ms(item.get("timestamp_ms")),
                principal=str(item.get("principal") or ""),
                request_id=str(item.get("request_id") or ""),
                topic=str(item["topic"]),
                partition_index=int(item["partition_index"]),
                offline_replicas=offline,
                new_leader=int(item.get("new_leader", NO_LEADER_CHANGE)),
                leaderless=bool(item.get("leaderless")),
                new_isr=None if new_isr is None else [int(b) for b in new_isr],
            )
        )
    return rows
