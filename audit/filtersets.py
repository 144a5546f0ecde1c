"""Filters of the audit trail, shared by the API and the UI."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from audit.models import AuditEvent, Outcome
from controlplane.filtersets import IntegerFilter, StrictBooleanFilter


class AuditEventFilterSet(django_filters.FilterSet):  # type: ignore[misc]
    principal = django_filters.CharFilter()
    api = django_filters.CharFilter()
    outcome = django_filters.ChoiceFilter(choices=Outcome.choices)
    error_code = IntegerFilter()
    request_id = django_filters.CharFilter()
    client_id = django_filters.CharFilter()
    forwarded = StrictBooleanFilter(method="filter_forwarded")
    forwarding_principal = django_filters.CharFilter()
    forwarding_broker_id = IntegerFilter()
    resource = django_filters.CharFilter(method="filter_resource")
    time_min = IntegerFilter(field_name="time_ms", lookup_expr="gte")
    time_max = IntegerFilter(field_name="time_ms", lookup_expr="lte")

    class Meta:
        model = AuditEvent
        fields = [
            "principal",
            "api",
            "outcome",
            "error_code",
            "request_id",
            "client_id",
            "forwarded",
            "forwarding_principal",
            "forwarding_broker_id",
            "resource",
            "time_min",
            "time_max",
        ]

    def filter_forwarded(
        self, queryset: QuerySet[AuditEvent], name: str, value: bool | None
    ) -> QuerySet[AuditEvent]:
        if value is None:
            return queryset
        if value:
            return queryset.exclude(forwarding_principal="")
        return queryset.filter(forwarding_principal="")

    def filter_resource(
        self, queryset: QuerySet[AuditEvent], name: str, value: str
    ) -> QuerySet[AuditEvent]:
        # The resources column is JSON: matched as text, on both PostgreSQL and SQLite.
        return queryset.filter(resources__icontains=value) if value else queryset
