from __future__ import annotations

from rest_framework import serializers

from audit.models import AuditEvent, AuditExport
from controlplane.api.fields import StrictSerializer


class AuditEventSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "time_ms",
            "principal",
            "client_id",
            "client_host",
            "forwarding_principal",
            "forwarding_host",
            "forwarding_broker_id",
            "api",
            "resources",
            "outcome",
            "error_code",
            "http_status",
            "request_id",
            "first_offset",
            "last_offset",
            "duration_ms",
        ]


class AuditExportSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    class Meta:
        model = AuditExport
        fields = [
            "id",
            "state",
            "progress",
            "path",
            "requested_by",
            "created_ms",
            "started_ms",
            "finished_ms",
            "commit",
            "rows",
            "message",
        ]


class AuditExportRequestSerializer(StrictSerializer):
    """POST /api/v1/audit-exports takes no parameters: the export path is the deployment's
    (CP_AUDIT_EXPORT_PATH), never one a client names."""
