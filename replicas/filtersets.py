"""Filters shared by the API and the UI."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet

from replicas.models import Partition, Topic


class TopicFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Name")

    class Meta:
        model = Topic
        fields = ["q"]


class PartitionFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    topic = django_filters.CharFilter(field_name="topic__name")
    broker = django_filters.NumberFilter(method="filter_broker", label="Replica on broker")
    leader = django_filters.NumberFilter()
    leaderless = django_filters.BooleanFilter(method="filter_leaderless")
    offline = django_filters.BooleanFilter(method="filter_offline", label="Has offline replicas")
    canary = django_filters.BooleanFilter(field_name="is_canary", label="Canary (KIP-1095)")
    canary_isolated = django_filters.BooleanFilter(label="Canary and isolated")

    class Meta:
        model = Partition
        fields = ["topic", "broker", "leader", "leaderless", "offline", "canary", "canary_isolated"]

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
        if value:
            return queryset.filter(offline_replica_count__gt=0)
        return queryset.filter(offline_replica_count=0)
