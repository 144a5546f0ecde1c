from __future__ import annotations

from django.db.models import QuerySet

from audit.models import AuditEvent, AuditExport


def audit_event_list() -> QuerySet[AuditEvent]:
    return AuditEvent.objects.order_by("-id")


def audit_export_list() -> QuerySet[AuditExport]:
    return AuditExport.objects.order_by("-id")
