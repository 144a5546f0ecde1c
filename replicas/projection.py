"""The topics and partitions tables as projections of topic and partition records."""

from __future__ import annotations

from controlplane.bulk import Column, bulk_delete, bulk_upsert
from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicInfo,
)
from controlplane.projections import register_projection
from replicas.models import Partition, Topic

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
]
PARTITION_UPDATES = [c.name for c in PARTITION_COLUMNS[2:]]


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, values)) + "]"


def _id_set(values: tuple[int, ...]) -> str:
    return "," + "".join(f"{v}," for v in values)


def partition_row(topic_id: str, index: int, p: PartitionRegistration) -> tuple[object, ...]:
    return (
        topic_id,
        index,
        p.leader,
        p.leader_epoch,
        p.partition_epoch,
        _ints(p.replicas),
        _ints(p.isr),
        _ints(p.offline_replicas),
        _id_set(p.replicas),
        _id_set(p.offline_replicas),
        len(p.replicas),
        len(p.offline_replicas),
        p.is_canary,
    )


class TopicProjection:
    name = "topics"

    def persist(self, delta: MetadataDelta) -> None:
        if not delta.changed_topics and not delta.changed_partitions:
            return
        removed = [topic_id for topic_id, t in delta.changed_topics.items() if t is None]
        # Partitions first: a removed topic's partitions go with it.
        bulk_delete(table="cp_partition", column="topic_id", pg_type="text", values=removed)
        bulk_delete(table="cp_topic", column="topic_id", pg_type="text", values=removed)
        bulk_upsert(
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
        gone = set(removed)
        bulk_upsert(
            table="cp_partition",
            columns=PARTITION_COLUMNS,
            rows=[
                partition_row(topic_id, index, p)
                for (topic_id, index), p in delta.changed_partitions.items()
                if p is not None and topic_id not in gone
            ],
            conflict=["topic_id", "partition_index"],
            update=PARTITION_UPDATES,
        )

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
        )
        for topic_id, index, replicas, isr, leader, le, pe, offline, canary in rows.iterator(
            chunk_size=5000
        ):
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
                ),
            )


register_projection(TopicProjection())
