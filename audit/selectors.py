from __future__ import annotations

from django.db.models import QuerySet

from audit.models import AuditEvent


def audit_event_list() -> QuerySet[AuditEvent]:
    return AuditEvent.objects.order_by("-id")
