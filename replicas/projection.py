"""The topics and partitions tables as projections of topic and partition records."""

from __future__ import annotations

from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicInfo,
)
from controlplane.runtime.bulk import (
    Column,
    Write,
    prepared_delete,
    prepared_update,
    prepared_upsert,
)
from controlplane.runtime.projections import AppliedWrites
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
    Column("canary_isolated", "boolean"),
    Column("isr_count", "int"),
    Column("preferred_leader", "int"),
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
    )
]


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
        p.canary_isolated,
        len(p.isr),
        p.preferred_leader,
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
        updates: list[tuple[object, ...]] = []
        for tp, partition in delta.changed_partitions.items():
            if partition is None or tp[0] in gone:
                continue
            (updates if tp in known else inserts).append(partition_row(*tp, partition))
        writes.append(
            prepared_upsert(table="cp_partition", columns=PARTITION_COLUMNS, rows=inserts)
        )
        if updates:
            # Elections and ISR changes leave the replica set alone; only a reassignment (or a
            # replica's broker changing pod, KIP-1095) rewrites it, so the common update carries
            # the columns that change.
            reassigned = any(
                known[tp].replicas != p.replicas or known[tp].canary_isolated != p.canary_isolated
                for tp, p in delta.changed_partitions.items()
                if p is not None and tp in known
            )
            columns = PARTITION_COLUMNS if reassigned else STATE_COLUMNS
            wanted = [PARTITION_COLUMNS.index(c) for c in columns]
            writes.append(
                prepared_update(
                    table="cp_partition",
                    columns=columns,
                    rows=[[row[i] for i in wanted] for row in updates],
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
        )
        for topic_id, index, replicas, isr, leader, le, pe, offline, canary, iso in rows.iterator(
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
                    canary_isolated=iso,
                ),
            )
