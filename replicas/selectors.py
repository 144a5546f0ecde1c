"""Reads of topics, partitions and replica incidents (no writes here)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast, Coalesce

from brokers.models import Broker
from brokers.projection import registration_from_row
from controlplane.chunked import in_chunks
from controlplane.controller.health import ClusterHealth as ClusterHealthFigures
from controlplane.controller.health import HealthCounts
from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicInfo,
)
from controlplane.models import AppliedRequest, Cluster, MetadataRecord
from controlplane.tables_cache import AnswerCache, read_through
from replicas.filtersets import TopicFilterSet
from replicas.models import BrokerLoad, ClusterHealth, HealthSample, Partition, Topic

# Each topic's health figures, from its cp_topic_health row (the controller's counts).
TOPIC_HEALTH_FIELDS = {
    "leaderless_count": "leaderless_partitions",
    "offline_replica_total": "offline_replicas",
    "under_replicated_count": "under_replicated_partitions",
    "under_min_isr_count": "under_min_isr_partitions",
    "at_min_isr_count": "at_min_isr_partitions",
    "imbalanced_count": "preferred_replica_imbalance",
}


def with_topic_health(topics: QuerySet[Topic]) -> QuerySet[Topic]:
    """Topics annotated with their health figures (one join to cp_topic_health, no partition
    read): `leaderless_count`, `offline_replica_total`, `under_replicated_count`,
    `under_min_isr_count`, `at_min_isr_count`, `imbalanced_count`, `min_isr`."""
    figures = {
        name: Coalesce(F(f"health__{column}"), 0) for name, column in TOPIC_HEALTH_FIELDS.items()
    }
    return topics.annotate(**figures, min_isr=F("health__min_insync_replicas"))


def topic_list(*, topic_ids: Iterable[str] | None = None) -> QuerySet[Topic]:
    """Topics (all, or those of `topic_ids`) with their health figures, in one query."""
    topics = with_topic_health(Topic.objects.order_by("name"))
    if topic_ids is not None:
        topics = topics.filter(topic_id__in=list(topic_ids))
    return topics


def replication_factors(*, topic_ids: Iterable[str]) -> dict[str, int]:
    """Each topic's replication factor as Kafka's TopicCommand reports it: its partition 0's
    replica count (one query, one row a topic)."""
    rows = Partition.objects.filter(topic_id__in=list(topic_ids), partition_index=0)
    return {
        topic_id: len(replicas or [])
        for topic_id, replicas in rows.values_list("topic_id", "replicas")
    }


def topic_names_by_id(*, topic_ids: list[str]) -> dict[str, str]:
    """The names of the topics with these ids (unknown ids are left out), in one query."""
    if not topic_ids:
        return {}
    return dict(Topic.objects.filter(topic_id__in=topic_ids).values_list("topic_id", "name"))


def partition_counts(*, names: Iterable[str]) -> dict[str, int]:
    """How many partitions each named topic has (unknown names are left out), in one query."""
    wanted = sorted({name for name in names if name})
    if not wanted:
        return {}
    rows = Topic.objects.filter(in_chunks("name", wanted)).values_list("name", "partition_count")
    return dict(rows)


def topic_get(*, name: str) -> Topic | None:
    return topic_list().filter(name=name).first()


def topic_exists(*, name: str) -> bool:
    return Topic.objects.filter(name=name).exists()


def _topics_by_name(exclude: Collection[str] | None) -> QuerySet[Topic]:
    """Topics by name, without `topic_list()`'s counts (no join): cheap to filter, count and
    slice a page of."""
    topics = Topic.objects.order_by("name")
    if exclude:
        topics = topics.exclude(name__in=exclude)
    return topics


def topic_name_list(
    *, exclude: Collection[str] | None = None, contains: str = ""
) -> QuerySet[Topic, str]:
    """Topic names in order, leaving out `exclude` and keeping those containing `contains`
    (case-insensitive) when it is given. Lazy: a page is a count and a slice."""
    topics = _topics_by_name(exclude)
    if contains:
        topics = topics.filter(name__icontains=contains)
    return topics.values_list("name", flat=True)


def topic_id_list(
    *,
    filters: Mapping[str, Any] | None = None,
    exclude: Collection[str] | None = None,
    order_by: Sequence[str] = (),
) -> QuerySet[Topic, str]:
    """The ids of the topics that pass `filters` (TopicFilterSet's, None: unfiltered), by
    name (or by `order_by`: Topic fields, or `health__<figure>`, then name), leaving out
    `exclude`. Lazy: a page is a count and a slice, whose figures `topic_list(topic_ids=...)`
    then reads for that page alone."""
    topics: QuerySet[Topic] = TopicFilterSet(filters, queryset=_topics_by_name(exclude)).qs
    if order_by:
        topics = topics.order_by(*order_by, "name")
    return topics.values_list("topic_id", flat=True)


def partition_list(*, topic_id: str | None = None) -> QuerySet[Partition]:
    """Partitions with their topic and its health row (its min.insync.replicas)."""
    partitions = Partition.objects.select_related("topic", "topic__health").order_by(
        "topic__name", "partition_index"
    )
    if topic_id is not None:
        partitions = partitions.filter(topic_id=topic_id)
    return partitions


def partitions_on_broker(
    *, broker_id: int, exclude_topics: Collection[str] | None = None
) -> QuerySet[Partition]:
    """The partitions with a replica on the broker, leaving out the `exclude_topics`."""
    partitions = partition_list().filter(replica_ids__contains=f",{broker_id},")
    if exclude_topics is not None:
        partitions = partitions.exclude(topic__name__in=exclude_topics)
    return partitions


def offline_partitions_on_broker(
    *, broker_id: int, exclude_topics: Collection[str] | None = None, fenced: bool = False
) -> QuerySet[Partition]:
    """The partitions whose replica on the broker is offline, leaving out `exclude_topics`:
    marked by AlterReplicaState, or every one while the broker is `fenced` (the health index's
    model, controlplane.controller.health)."""
    held = "replica_ids" if fenced else "offline_ids"
    partitions = partition_list().filter(**{f"{held}__contains": f",{broker_id},"})
    if exclude_topics is not None:
        partitions = partitions.exclude(topic__name__in=exclude_topics)
    return partitions


def broker_replica_counts(
    *, broker_id: int, exclude_topics: Collection[str] | None = None
) -> dict[str, int]:
    """How many replicas the broker has (`total`) and how many of them lead (`leaders`)."""
    return partitions_on_broker(broker_id=broker_id, exclude_topics=exclude_topics).aggregate(
        total=Count("id"),
        leaders=Count("id", filter=Q(leader=broker_id)),
    )


def cluster_health() -> dict[str, Any]:
    """The cluster's health as the controller last counted it (one query): the contract's
    `health` object and the rest of the counts, with `updated_ms` (None: no controller has
    counted it yet, so every figure is 0)."""
    row = ClusterHealth.objects.filter(pk=1).first()
    if row is None:
        return {**ClusterHealthFigures(HealthCounts()).as_dict(), "updated_ms": None}
    counts = HealthCounts(*(getattr(row, f.name) for f in dataclasses.fields(HealthCounts)))
    figures = ClusterHealthFigures(counts, row.offline_log_dirs).as_dict()
    return {**figures, "updated_ms": row.updated_ms}


def broker_loads() -> dict[int, BrokerLoad]:
    """What each broker holds and leads, by broker id (brokers holding nothing are absent)."""
    return {load.broker_id: load for load in BrokerLoad.objects.all()}


def health_samples(*, since_ms: int) -> list[HealthSample]:
    """The trend rows from `since_ms` on, with the last row before it (the values then)."""
    before = HealthSample.objects.filter(minute_ms__lt=since_ms).order_by("-minute_ms")[:1]
    rows = list(HealthSample.objects.filter(minute_ms__gte=since_ms).order_by("minute_ms"))
    return [*before, *rows]


def replication_summary() -> dict[str, int]:
    """What the replication metrics report: the controller's counts, the topic count and the
    election counters (three queries, none over the partitions)."""
    health = cluster_health()
    cluster = Cluster.objects.filter(pk=1).values(
        "leader_elections_total", "unclean_leader_elections_total"
    ).first() or {"leader_elections_total": 0, "unclean_leader_elections_total": 0}
    return {
        "topics": Topic.objects.count(),
        "partitions": health["partitions"],
        "leaderless_partitions": health["leaderless_partitions"],
        "offline_partitions": health["offline_partitions"],
        "offline_replicas": health["offline_replicas"],
        "under_replicated_partitions": health["under_replicated_partitions"],
        "under_min_isr_partitions": health["under_min_isr_partitions"],
        "at_min_isr_partitions": health["at_min_isr_partitions"],
        "preferred_replica_imbalance": health["preferred_replica_imbalance"],
        "offline_log_dirs": health["offline_log_dirs"],
        "leader_elections_total": cluster["leader_elections_total"],
        "unclean_leader_elections_total": cluster["unclean_leader_elections_total"],
    }


def replica_incidents(*, broker_id: int | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """Offline replicas and what the controller did about each, from the metadata log: the
    partition changes AlterReplicaState reports produced (KIP-589), newest first, with the new
    leader and ISR; filtered by reporting broker in the database (three queries)."""
    reports = AppliedRequest.objects.filter(api="AlterReplicaState")
    if broker_id is not None:
        reports = reports.filter(response__broker_id=broker_id)
    # A report is known by its principal and request id: another principal's write may carry
    # the same id (request ids belong to their principal).
    reported = reports.filter(request_id=OuterRef("request_id"), principal=OuterRef("principal"))
    rows = list(
        MetadataRecord.objects.filter(record_type="PartitionChangeRecord")
        .filter(Exists(reported))
        .order_by("-offset")[:limit]
    )
    reporters = {
        (principal, request_id): reporter
        for principal, request_id, reporter in AppliedRequest.objects.filter(
            api="AlterReplicaState", request_id__in={r.request_id for r in rows}
        ).values_list("principal", "request_id", "response__broker_id")
    }
    topics = dict(
        Topic.objects.filter(topic_id__in={r.data["topic_id"] for r in rows}).values_list(
            "topic_id", "name"
        )
    )
    return [
        {
            "offset": record.offset,
            "timestamp_ms": record.timestamp_ms,
            "principal": record.principal,
            "request_id": record.request_id,
            "broker_id": reporters.get((record.principal, record.request_id)),
            "topic": topics.get(record.data["topic_id"], record.data["topic_id"]),
            "partition_index": record.data["partition_id"],
            "offline_replicas": record.data.get("offline_replicas") or [],
            "new_leader": record.data.get("leader", -2),
            "new_isr": record.data.get("isr"),
            "leaderless": record.data.get("leader") == -1,
        }
        for record in rows
    ]


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
        "topic_id", "partition_index", "replica_ids", "leader"
    )
    partitions = image.partitions
    # Registrations are immutable and a cluster has few distinct replica sets (100,000
    # partitions led by one of 60 brokers name about 3,400): one object per (replica set,
    # leader), shared, is a dict lookup per partition where parsing and building one took
    # 2.5 µs (250 ms for 100,000, before the report is acknowledged).
    shared: dict[tuple[str, int], PartitionRegistration] = {}
    for topic_id, index, replica_ids, leader in rows.iterator(chunk_size=5000):
        registration = shared.get((replica_ids, leader))
        if registration is None:
            registration = shared[(replica_ids, leader)] = _validated_partition(replica_ids, leader)
        partitions[(topic_id, index)] = registration
    return MetadataDelta(image)


def _validated_partition(replica_ids: str, leader: int) -> PartitionRegistration:
    """Only what validation reads (the replica set), from the ",1,2,3," column: no JSON."""
    replicas = tuple(map(int, replica_ids[1:-1].split(","))) if len(replica_ids) > 1 else ()
    return PartitionRegistration(replicas=replicas, isr=(), leader=leader)


class ReassignmentListing(list[dict[str, Any]]):
    """The reassignments a ListPartitionReassignments asked for, by topic. `read_at`: the
    tables' offset whose state it is (None: a commit moved the tables during the read), and
    with `asked` the key of anything derived from it (an encoded answer)."""

    read_at: int | None = None
    asked: Hashable = None


def _weigh_listing(listing: ReassignmentListing) -> int:
    return 1 + sum(len(topic["partitions"]) for topic in listing)


# Listings per the tables' offset and the partitions asked: tools poll them (Kafka's
# AdminClient names every moving partition, ten times a second) while the tables move only as
# the brokers report. At most this many moving partitions are kept in all (a larger listing is
# read on each ask).
LISTINGS_KEPT_PARTITIONS = 100_000
REASSIGNMENT_LISTINGS: AnswerCache[ReassignmentListing] = AnswerCache(
    8, max_weight=LISTINGS_KEPT_PARTITIONS, weigh=_weigh_listing
)


def partition_reassignments(
    *, topics: Mapping[str, Collection[int] | None] | None = None
) -> ReassignmentListing:
    """The reassignments in progress (KIP-455), by topic name then partition, as Kafka's
    ListPartitionReassignments answers them: all of them (`topics` None), or those of the
    named topics' partitions (None: all of the topic's; an empty list: none of it, as Kafka).
    One query over the index of the moving partitions, however large the cluster; the same
    question at the same offset of the tables is answered from `REASSIGNMENT_LISTINGS` (the
    answer is shared: never changed by its reader)."""
    asked = None
    if topics is not None:
        asked = frozenset(
            (name, None if wanted is None else frozenset(wanted)) for name, wanted in topics.items()
        )
    return read_through(
        REASSIGNMENT_LISTINGS,
        asked,
        lambda: _reassignments_read(topics, asked),
        stamp=_stamp_listing,
    )


def _stamp_listing(listing: ReassignmentListing, read_at: int) -> None:
    listing.read_at = read_at


def _reassignments_read(
    topics: Mapping[str, Collection[int] | None] | None, asked: Hashable
) -> ReassignmentListing:
    rows = Partition.objects.filter(reassigning=True)
    if topics is not None:
        named = [name for name, wanted in topics.items() if wanted is None or wanted]
        rows = rows.filter(topic__name__in=named)
    # The replica lists as their JSON text, parsed in one call: the JSON field's own decoding
    # runs once per value, three per moving partition, and was most of a large answer's time.
    listed = list(
        rows.order_by("topic__name", "partition_index").values_list(
            "topic__name",
            "partition_index",
            Cast("replicas", TextField()),
            Cast("adding_replicas", TextField()),
            Cast("removing_replicas", TextField()),
        )
    )
    lists = json.loads("[" + ",".join(text for row in listed for text in row[2:]) + "]")
    answer: dict[str, list[dict[str, Any]]] = {}
    for at, (name, index, *_) in enumerate(listed):
        wanted = None if topics is None else topics[name]
        if wanted is not None and index not in wanted:
            continue
        answer.setdefault(name, []).append(
            {
                "partition_index": index,
                "replicas": lists[3 * at],
                "adding_replicas": lists[3 * at + 1],
                "removing_replicas": lists[3 * at + 2],
            }
        )
    listing = ReassignmentListing(
        {"name": name, "partitions": partitions} for name, partitions in answer.items()
    )
    listing.asked = asked
    return listing
