"""Rows for the UI's tables, built from the selectors' data (no queries here)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

from brokers.models import Broker
from brokers.selectors import broker_as_dict
from controlplane.controller.config_schema import redact_record_data
from controlplane.controller.records import NO_LEADER, NO_LEADER_CHANGE
from controlplane.models import MetadataRecord
from replicas.models import Partition, Topic

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
            data=json.dumps(
                redact_record_data(record.record_type, record.data),
                sort_keys=True,
                indent=1,
                default=str,
            ),
        )
        for record in records
    ]


# --- topics, partitions, replicas -------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    topic_id: str
    partition_count: int
    leaderless_count: int
    offline_replica_total: int

    @property
    def leaderless(self) -> bool:
        return self.leaderless_count > 0


def topic_row(topic: Topic) -> TopicRow:
    """A topic from `replicas.selectors.topic_list()` (with its annotations)."""
    return TopicRow(
        name=topic.name,
        topic_id=topic.topic_id,
        partition_count=topic.partition_count,
        leaderless_count=int(getattr(topic, "leaderless_count", 0) or 0),
        offline_replica_total=int(getattr(topic, "offline_replica_total", 0) or 0),
    )


def topic_rows(topics: Iterable[Topic]) -> list[TopicRow]:
    return [topic_row(topic) for topic in topics]


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaCell:
    """One replica of a partition: its broker and how it stands."""

    broker_id: int
    is_leader: bool
    in_isr: bool
    offline: bool

    @property
    def css(self) -> str:
        classes = ["replica"]
        if self.is_leader:
            classes.append("replica-leader")
        if self.offline:
            classes.append("replica-offline")
        elif not self.in_isr:
            classes.append("replica-out-of-sync")
        return " ".join(classes)

    @property
    def status(self) -> str:
        if self.offline:
            return "offline"
        parts = ["leader" if self.is_leader else "follower"]
        parts.append("in ISR" if self.in_isr else "not in ISR")
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRow:
    topic: str
    partition_index: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[ReplicaCell]
    isr: list[int]
    offline_replicas: list[int]
    is_canary: bool

    @property
    def leaderless(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


def partition_row(partition: Partition, *, topic_name: str | None = None) -> PartitionRow:
    isr = [int(b) for b in partition.isr or []]
    offline = [int(b) for b in partition.offline_replicas or []]
    return PartitionRow(
        topic=topic_name if topic_name is not None else partition.topic.name,
        partition_index=partition.partition_index,
        leader=partition.leader,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
        replicas=[
            ReplicaCell(
                broker_id=int(b),
                is_leader=int(b) == partition.leader,
                in_isr=int(b) in isr,
                offline=int(b) in offline,
            )
            for b in partition.replicas or []
        ],
        isr=isr,
        offline_replicas=offline,
        is_canary=partition.is_canary,
    )


def partition_rows(
    partitions: Iterable[Partition], *, topic_name: str | None = None
) -> list[PartitionRow]:
    return [partition_row(p, topic_name=topic_name) for p in partitions]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerReplicaRow:
    """A partition seen from one of its replicas' broker."""

    partition: PartitionRow
    replica: ReplicaCell

    @property
    def role(self) -> str:
        return "leader" if self.replica.is_leader else "follower"


def broker_replica_rows(partitions: Iterable[Partition], broker_id: int) -> list[BrokerReplicaRow]:
    rows = []
    for partition in partitions:
        row = partition_row(partition)
        cell = next((c for c in row.replicas if c.broker_id == broker_id), None)
        if cell is None:  # an offline replica no longer in the assignment
            cell = ReplicaCell(
                broker_id=broker_id,
                is_leader=False,
                in_isr=broker_id in row.isr,
                offline=broker_id in row.offline_replicas,
            )
        rows.append(BrokerReplicaRow(partition=row, replica=cell))
    return rows


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
