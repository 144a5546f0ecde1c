"""The topics and partitions tables as projections of topic and partition records."""

from __future__ import annotations

import json

from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicInfo,
    TopicPartition,
)
from controlplane.controller.int_lists import id_set, json_array
from controlplane.runtime.bulk import (
    Column,
    Write,
    prepared_delete,
    prepared_update,
    prepared_upsert,
)
from controlplane.runtime.projections import AppliedWrites
from replicas.models import Partition, Topic

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode

PARTITION_COLUMNS = [
    Column("topic_id", "text"),
    Column("partition_index", "int"),
    Column("leader", "int"),
    Column("leader_epoch", "int"),
    Column("partition_epoch", "int"),
    Column("replicas", "text", json=True),
    Column("isr", "text", json=True),
    Column("offline_replicas", "text", json=True),
    Column("replica_ids", "text"),
    Column("offline_ids", "text"),
    Column("replica_count", "int"),
    Column("offline_replica_count", "int"),
    Column("is_canary", "boolean"),
    Column("canary_isolated", "boolean"),
    Column("isr_count", "int"),
    Column("preferred_leader", "int"),
    Column("directories", "text", json=True),
    Column("adding_replicas", "text", json=True),
    Column("removing_replicas", "text", json=True),
    Column("reassigning", "boolean"),
]


STATE_COLUMNS = [
    c
    for c in PARTITION_COLUMNS
    if c.name
    not in (
        "replicas",
        "replica_ids",
        "replica_count",
        "is_canary",
        "canary_isolated",
        "preferred_leader",
        "directories",
        "adding_replicas",
        "removing_replicas",
        "reassigning",
    )
]


def partition_row(topic_id: str, index: int, p: PartitionRegistration) -> tuple[object, ...]:
    return (
        topic_id,
        index,
        p.leader,
        p.leader_epoch,
        p.partition_epoch,
        json_array(p.replicas),
        json_array(p.isr),
        json_array(p.offline_replicas),
        id_set(p.replicas),
        id_set(p.offline_replicas),
        len(p.replicas),
        len(p.offline_replicas),
        p.is_canary,
        p.canary_isolated,
        len(p.isr),
        p.preferred_leader,
        _ENCODE(list(p.directories)) if p.directories else "[]",
        json_array(p.adding_replicas),
        json_array(p.removing_replicas),
        p.reassigning,
    )


def partition_state_row(topic_id: str, index: int, p: PartitionRegistration) -> tuple[object, ...]:
    """`partition_row` reduced to `STATE_COLUMNS`, built directly: a large election's update
    builds one per changed partition."""
    offline = p.offline_replicas
    return (
        topic_id,
        index,
        p.leader,
        p.leader_epoch,
        p.partition_epoch,
        json_array(p.isr),
        json_array(offline),
        id_set(offline),
        len(offline),
        len(p.isr),
    )


class TopicProjection:
    name = "topics"
    tables: tuple[str, ...] = ("cp_topic", "cp_partition")

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        if not delta.changed_topics and not delta.changed_partitions:
            return []
        writes: list[Write] = []
        removed = [topic_id for topic_id, t in delta.changed_topics.items() if t is None]
        # Partitions first: a removed topic's partitions go with it.
        writes.append(
            prepared_delete(table="cp_partition", column="topic_id", pg_type="text", values=removed)
        )
        writes.append(
            prepared_delete(table="cp_topic", column="topic_id", pg_type="text", values=removed)
        )
        writes.append(
            prepared_upsert(
                table="cp_topic",
                columns=[
                    Column("topic_id", "text"),
                    Column("name", "text"),
                    Column("partition_count", "int"),
                ],
                rows=[
                    (t.topic_id, t.name, t.partition_count)
                    for t in delta.changed_topics.values()
                    if t is not None
                ],
                conflict=["topic_id"],
                update=["name", "partition_count"],
            )
        )
        gone = set(removed)
        known = delta.base.partitions
        inserts: list[tuple[object, ...]] = []
        updated: list[tuple[TopicPartition, PartitionRegistration]] = []
        # Elections and ISR changes leave the replica set alone; only a reassignment (its
        # start, completion or cancellation, KIP-455; or a replica's broker changing pod,
        # KIP-1095, or a broker assigning its replicas to log dirs) rewrites it, so the common
        # update carries the columns that change. One pass over the changed partitions finds
        # both.
        reassigned = False
        for tp, partition in delta.changed_partitions.items():
            if partition is None or tp[0] in gone:
                continue
            before = known.get(tp)
            if before is None:
                inserts.append(partition_row(*tp, partition))
                continue
            updated.append((tp, partition))
            if not reassigned and (
                before.replicas != partition.replicas
                or before.canary_isolated != partition.canary_isolated
                or before.directories != partition.directories
                or before.adding_replicas != partition.adding_replicas
                or before.removing_replicas != partition.removing_replicas
            ):
                reassigned = True
        writes.append(
            prepared_upsert(table="cp_partition", columns=PARTITION_COLUMNS, rows=inserts)
        )
        if updated:
            row_of = partition_row if reassigned else partition_state_row
            writes.append(
                prepared_update(
                    table="cp_partition",
                    columns=PARTITION_COLUMNS if reassigned else STATE_COLUMNS,
                    rows=[row_of(*tp, p) for tp, p in updated],
                    key=["topic_id", "partition_index"],
                )
            )
        return writes

    def load(self, image: MetadataImage) -> None:
        for topic_id, name, count in Topic.objects.values_list(
            "topic_id", "name", "partition_count"
        ):
            image.put_topic(topic_id, TopicInfo(topic_id, name, count))
        rows = Partition.objects.values_list(
            "topic_id",
            "partition_index",
            "replicas",
            "isr",
            "leader",
            "leader_epoch",
            "partition_epoch",
            "offline_replicas",
            "is_canary",
            "canary_isolated",
            "directories",
            "adding_replicas",
            "removing_replicas",
        )
        for (
            topic_id,
            index,
            replicas,
            isr,
            leader,
            le,
            pe,
            offline,
            canary,
            iso,
            dirs,
            adding,
            removing,
        ) in rows.iterator(chunk_size=5000):
            image.put_partition(
                (topic_id, index),
                PartitionRegistration(
                    replicas=tuple(replicas),
                    isr=tuple(isr),
                    leader=leader,
                    leader_epoch=le,
                    partition_epoch=pe,
                    offline_replicas=tuple(offline),
                    is_canary=canary,
                    canary_isolated=iso,
                    directories=tuple(dirs) if dirs else (),
                    adding_replicas=tuple(adding) if adding else (),
                    removing_replicas=tuple(removing) if removing else (),
                ),
            )
