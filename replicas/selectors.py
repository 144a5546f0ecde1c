"""Reads of topics, partitions and replica incidents (no writes here)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum

from brokers.models import Broker
from brokers.projection import registration_from_row
from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicInfo,
)
from controlplane.models import Cluster, MetadataRecord
from replicas.models import Partition, Topic


def topic_list() -> QuerySet[Topic]:
    """Topics with their leaderless and offline-replica counts, in one query."""
    return Topic.objects.annotate(
        leaderless_count=Count("partitions", filter=Q(partitions__leader=-1)),
        offline_replica_total=Sum("partitions__offline_replica_count", default=0),
    ).order_by("name")


def topic_get(*, name: str) -> Topic | None:
    return topic_list().filter(name=name).first()


def partition_list() -> QuerySet[Partition]:
    return Partition.objects.select_related("topic").order_by("topic__name", "partition_index")


def partitions_on_broker(*, broker_id: int) -> QuerySet[Partition]:
    return partition_list().filter(replica_ids__contains=f",{broker_id},")


def offline_partitions_on_broker(*, broker_id: int) -> QuerySet[Partition]:
    return partition_list().filter(offline_ids__contains=f",{broker_id},")


def partition_as_dict(p: Partition) -> dict[str, Any]:
    return {
        "topic": p.topic.name,
        "partition_index": p.partition_index,
        "leader_id": p.leader,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "replica_nodes": p.replicas,
        "isr_nodes": p.isr,
        "offline_replicas": p.offline_replicas,
        "is_canary": p.is_canary,
    }


def replication_summary() -> dict[str, int]:
    """What the replication metrics report, in two queries."""
    counts = Partition.objects.aggregate(
        partitions=Count("id"),
        leaderless=Count("id", filter=Q(leader=-1)),
        offline_partitions=Count(
            "id", filter=Q(offline_replica_count__gt=0, offline_replica_count=F("replica_count"))
        ),
        offline_replicas=Sum("offline_replica_count", default=0),
    )
    cluster = Cluster.objects.filter(pk=1).values(
        "leader_elections_total", "unclean_leader_elections_total"
    ).first() or {"leader_elections_total": 0, "unclean_leader_elections_total": 0}
    return {
        "topics": Topic.objects.count(),
        "partitions": counts["partitions"],
        "leaderless_partitions": counts["leaderless"],
        "offline_partitions": counts["offline_partitions"],
        "offline_replicas": counts["offline_replicas"] or 0,
        "leader_elections_total": cluster["leader_elections_total"],
        "unclean_leader_elections_total": cluster["unclean_leader_elections_total"],
    }


def replica_incidents(*, broker_id: int | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """Offline replicas and what the controller did about each, from the metadata log: every
    PartitionChangeRecord that marked a replica offline, newest first, with its new leader."""
    records = MetadataRecord.objects.filter(
        record_type="PartitionChangeRecord", data__offline_replicas__isnull=False
    ).order_by("-offset")
    rows = list(records[: limit * 4])
    topics = dict(
        Topic.objects.filter(topic_id__in={r.data["topic_id"] for r in rows}).values_list(
            "topic_id", "name"
        )
    )
    incidents = []
    for record in rows:
        data = record.data
        offline = data.get("offline_replicas") or []
        if broker_id is not None and broker_id not in offline:
            continue
        incidents.append(
            {
                "offset": record.offset,
                "timestamp_ms": record.timestamp_ms,
                "principal": record.principal,
                "request_id": record.request_id,
                "topic": topics.get(data["topic_id"], data["topic_id"]),
                "partition_index": data["partition_id"],
                "offline_replicas": offline,
                "new_leader": data.get("leader", -2),
                "new_isr": data.get("isr"),
                "leaderless": data.get("leader") == -1,
            }
        )
        if len(incidents) >= limit:
            break
    return incidents


def replica_state_view(*, broker_id: int, topic_names: list[str]) -> MetadataDelta:
    """A metadata view holding just what AlterReplicaState validation reads: the broker and
    the named topics' partitions (three queries whatever the number of partitions)."""
    image = MetadataImage(cluster_id="")
    broker = Broker.objects.filter(pk=broker_id).first()
    if broker is not None:
        image.brokers[broker_id] = registration_from_row(broker)
    topics = list(
        Topic.objects.filter(name__in=topic_names).values_list(
            "topic_id", "name", "partition_count"
        )
    )
    for topic_id, name, count in topics:
        image.put_topic(topic_id, TopicInfo(topic_id, name, count))
    rows = Partition.objects.filter(topic_id__in=[t[0] for t in topics]).values_list(
        "topic_id", "partition_index", "replicas", "leader"
    )
    partitions = image.partitions
    for topic_id, index, replicas, leader in rows.iterator(chunk_size=5000):
        # Only what validation reads; the index is not needed for it.
        partitions[(topic_id, index)] = PartitionRegistration(
            replicas=tuple(replicas), isr=(), leader=leader
        )
    return MetadataDelta(image)
