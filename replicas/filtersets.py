"""Filters shared by the API and the UI."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet

from controlplane.filtersets import IntegerFilter, StrictBooleanFilter
from replicas.models import Partition, Topic


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

    class Meta:
        model = Partition
        fields = ["topic", "broker", "leader", "leaderless", "offline"]

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
