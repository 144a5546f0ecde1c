"""Rows for the UI's tables, built from the selectors' data (no queries here)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

from brokers.models import Broker
from brokers.selectors import broker_as_dict
from controlplane.models import MetadataRecord

STATE_BADGES = {
    "UNFENCED": "ok",
    "FENCED": "danger",
    "CONTROLLED_SHUTDOWN": "warn",
}


def format_age(last_contact_ms: int | None, now_ms: int) -> str:
    """`3 s ago`, `2 min ago`, `1 h ago`; an em dash when never heard from."""
    if last_contact_ms is None:
        return "—"
    seconds = max(0, (now_ms - last_contact_ms) // 1000)
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def format_ms(timestamp_ms: int | None) -> str:
    if timestamp_ms is None:
        return "—"
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{timestamp_ms % 1000:03d}Z"


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
            data=json.dumps(record.data, sort_keys=True, indent=1, default=str),
        )
        for record in records
    ]
