from __future__ import annotations

from rest_framework import serializers

from audit.models import AuditEvent


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
