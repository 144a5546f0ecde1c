from __future__ import annotations

from rest_framework import generics

from audit.api.serializers import AuditEventSerializer
from audit.filtersets import AuditEventFilterSet
from audit.selectors import audit_event_list
from controlplane.api.permissions import ClusterDescribePermission


class AuditEventListView(generics.ListAPIView):  # type: ignore[type-arg]
    """The audit trail, newest first: every admin request, allowed or denied."""

    permission_classes = [ClusterDescribePermission]
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilterSet

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return audit_event_list()
