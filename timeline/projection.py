"""The timeline tables as a projection of the metadata log: each commit's writes become events
(`controlplane.controller.timeline.describe_commit`), the partitions they moved become rows, and a
replica coming back resolves the log dir failure that took it offline."""

from __future__ import annotations

import json
from collections.abc import Sequence

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.int_lists import comma_separated
from controlplane.controller.timeline import (
    KIND_LABELS,
    Kind,
    Move,
    TimelineEntry,
    WriteSummary,
    describe_commit,
)
from controlplane.runtime.bulk import Column, Write, prepared_update, prepared_upsert
from controlplane.runtime.conversation import AppliedWrite

EVENT_COLUMNS = [
    Column("offset", "bigint"),
    Column("last_offset", "bigint"),
    Column("timestamp_ms", "bigint"),
    Column("kind", "text"),
    Column("severity", "text"),
    Column("api", "text"),
    Column("title", "text"),
    Column("principal", "text"),
    Column("client_id", "text"),
    Column("request_id", "text"),
    Column("broker_ids", "text"),
    Column("topic_names", "text"),
    Column("unclean", "boolean"),
    Column("details", "text", json=True),
]
MOVE_COLUMNS = [
    Column("event_offset", "bigint"),
    Column("seq", "int"),
    Column("topic_id", "text"),
    Column("topic_name", "text"),
    Column("partition_index", "int"),
    Column("previous_leader", "int"),
    Column("leader", "int"),
    Column("previous_isr", "text"),
    Column("isr", "text"),
    Column("offline_added", "text"),
    Column("offline_cleared", "text"),
    Column("unclean", "boolean"),
    Column("failed_broker", "int"),
    Column("resolution", "text"),
]
RESOLUTION_COLUMNS = [
    Column("topic_id", "text"),
    Column("partition_index", "int"),
    Column("failed_broker", "int"),
    Column("resolved_offset", "bigint"),
    Column("resolved_ms", "bigint"),
    Column("resolution", "text"),
]
# How a replica marked offline came back, by the API of the write that cleared it.
RESOLUTIONS = {
    "AlterPartition": "back in the ISR (its leader's AlterPartition)",
    "BrokerRegistration": "its broker registered a new incarnation",
    "UnregisterBroker": "its broker was unregistered",
}


def _listed(values: Sequence[object]) -> str:
    """ ",1,2," / ",orders,": a LIKE '%,x,%' finds x."""
    return "," + "".join(f"{v}," for v in values)


def _event_row(entry: TimelineEntry, write: AppliedWrite, timestamp_ms: int) -> tuple[object, ...]:
    return (
        entry.offset,
        entry.last_offset,
        timestamp_ms,
        entry.kind.value,
        entry.severity.value,
        entry.api,
        entry.title,
        write.context.principal,
        write.context.client_id,
        write.context.request_id,
        _listed(entry.brokers),
        _listed(entry.topics),
        entry.unclean,
        json.dumps(entry.details, separators=(",", ":"), sort_keys=True),
    )


def _move_row(entry: TimelineEntry, seq: int, move: Move) -> tuple[object, ...]:
    return (
        entry.offset,
        seq,
        move.topic_id,
        move.topic_name,
        move.partition,
        move.previous_leader,
        move.leader,
        comma_separated(move.previous_isr),
        comma_separated(move.isr),
        comma_separated(move.offline_added),
        comma_separated(move.offline_cleared),
        move.unclean,
        move.offline_added[0] if move.offline_added else None,
        "",
    )


class TimelineProjection:
    name = "timeline"
    tables: tuple[str, ...] = ("cp_timeline_event", "cp_timeline_move")

    def prepare(
        self, delta: MetadataDelta, applied: Sequence[AppliedWrite], timestamp_ms: int
    ) -> list[Write]:
        if not delta.replayed or not applied:
            return []
        by_offset = {w.first_offset: w for w in applied}
        summaries = [WriteSummary(w.api, w.first_offset, w.last_offset) for w in applied]
        transitions = delta.topics_delta.transitions
        entries = describe_commit(delta.base, delta.replayed, summaries, transitions)
        events = [_event_row(e, by_offset[e.offset], timestamp_ms) for e in entries]
        moves = [_move_row(e, seq, m) for e in entries for seq, m in enumerate(e.moves)]
        resolutions = _resolutions(entries, timestamp_ms)
        resolutions += _deleted_topics(delta, entries, timestamp_ms)
        return [
            prepared_upsert(table="cp_timeline_event", columns=EVENT_COLUMNS, rows=events),
            prepared_upsert(table="cp_timeline_move", columns=MOVE_COLUMNS, rows=moves),
            prepared_update(
                table="cp_timeline_move",
                columns=RESOLUTION_COLUMNS,
                rows=resolutions,
                key=["topic_id", "partition_index", "failed_broker"],
                where_null=["resolved_offset"],
            ),
        ]

    def load(self, image: MetadataImage) -> None:
        """Nothing to load: the timeline is not part of the controller's state."""


def _resolutions(entries: Sequence[TimelineEntry], timestamp_ms: int) -> list[tuple[object, ...]]:
    """A replica an entry brought back from offline resolves its failure's row."""
    rows: list[tuple[object, ...]] = []
    for entry in entries:
        how = RESOLUTIONS.get(entry.api, KIND_LABELS.get(entry.kind, entry.api))
        for move in entry.moves:
            for broker_id in move.offline_cleared:
                rows.append(
                    (move.topic_id, move.partition, broker_id, entry.offset, timestamp_ms, how)
                )
    return rows


def _deleted_topics(
    delta: MetadataDelta, entries: Sequence[TimelineEntry], timestamp_ms: int
) -> list[tuple[object, ...]]:
    """Offline replicas of a deleted topic are resolved by its deletion."""
    deleted_by = {
        name: entry.offset
        for entry in entries
        if entry.kind is Kind.TOPIC_DELETED
        for name in entry.topics
    }
    if not deleted_by:
        return []
    rows: list[tuple[object, ...]] = []
    for (topic_id, index), partition in delta.changed_partitions.items():
        before = delta.base.partitions.get((topic_id, index))
        topic = delta.base.topics.get(topic_id)
        if partition is not None or before is None or topic is None:
            continue
        offset = deleted_by.get(topic.name)
        if offset is None:
            continue
        for broker_id in before.offline_replicas:
            rows.append((topic_id, index, broker_id, offset, timestamp_ms, "topic deleted"))
    return rows
