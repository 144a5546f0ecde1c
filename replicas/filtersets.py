"""Filters shared by the API and the UI."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import F, Q, QuerySet

from brokers.selectors import broker_live_ids
from controlplane.filtersets import IntegerFilter, StrictBooleanFilter
from replicas.models import Partition, Topic


def offline_partitions_q() -> Q:
    """Partitions with an offline replica, as the controller's health index counts them
    ("Offline replicas"): one AlterReplicaState marked offline, or one on a broker that is not
    live (fenced or gone), as Kafka's MetadataResponse lists `offline_replicas`. `replica_ids`
    is ",1,2,3,": a replica off the live brokers is a number no live id matches (a lookahead,
    which PostgreSQL's and Python's regular expressions both have)."""
    live = broker_live_ids()
    not_live = rf",(?!(?:{'|'.join(map(str, live))}),)[0-9]+," if live else r",[0-9]+,"
    return Q(offline_replica_count__gt=0) | Q(replica_ids__regex=not_live)


class TopicFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Name")

    class Meta:
        model = Topic
        fields = ["q"]


class PartitionFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    topic = django_filters.CharFilter(field_name="topic__name")
    broker = IntegerFilter(method="filter_broker", label="Replica on broker")
    leader = IntegerFilter()
    leaderless = StrictBooleanFilter(method="filter_leaderless")
    offline = StrictBooleanFilter(method="filter_offline", label="Has offline replicas")
    canary = StrictBooleanFilter(field_name="is_canary", label="Canary (KIP-1095)")
    canary_isolated = StrictBooleanFilter(label="Canary and isolated")
    reassigning = StrictBooleanFilter(label="Being reassigned (KIP-455)")

    under_replicated = StrictBooleanFilter(
        method="filter_under_replicated", label="Under-replicated (ISR smaller than replicas)"
    )
    under_min_isr = StrictBooleanFilter(method="filter_under_min_isr", label="Under min ISR")
    at_min_isr = StrictBooleanFilter(method="filter_at_min_isr", label="At min ISR")
    preferred_leader = StrictBooleanFilter(
        method="filter_preferred_leader", label="Led by its preferred replica"
    )

    class Meta:
        model = Partition
        fields = [
            "topic",
            "broker",
            "leader",
            "leaderless",
            "offline",
            "canary",
            "canary_isolated",
            "reassigning",
            "under_replicated",
            "under_min_isr",
            "at_min_isr",
            "preferred_leader",
        ]

    def filter_broker(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        return queryset.filter(replica_ids__contains=f",{int(value)},")

    def filter_leaderless(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        return queryset.filter(leader=-1) if value else queryset.exclude(leader=-1)

    def filter_offline(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        offline = offline_partitions_q()
        return queryset.filter(offline) if value else queryset.exclude(offline)

    # The health filters compare the partition's ISR size with its replica count and with its
    # topic's effective min.insync.replicas (the controller's count in cp_topic_health).
    def filter_under_replicated(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        return _holding(queryset, Q(isr_count__lt=F("replica_count")), value)

    def filter_under_min_isr(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        return _holding(queryset, Q(isr_count__lt=F("topic__health__min_insync_replicas")), value)

    def filter_at_min_isr(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        return _holding(queryset, Q(isr_count=F("topic__health__min_insync_replicas")), value)

    def filter_preferred_leader(
        self, queryset: QuerySet[Partition], name: str, value: Any
    ) -> QuerySet[Partition]:
        return _holding(queryset, Q(leader=F("preferred_leader")), value)


def _holding(queryset: QuerySet[Partition], condition: Q, wanted: Any) -> QuerySet[Partition]:
    """The partitions for which `condition` holds (`wanted` true) or does not (false)."""
    return queryset.filter(condition) if wanted else queryset.exclude(condition)
