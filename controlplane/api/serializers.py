from __future__ import annotations

from typing import Any

from rest_framework import serializers

from controlplane.api.fields import INT64_MAX, StrictSerializer
from controlplane.controller.config_schema import redact_record_data
from controlplane.models import MetadataRecord


class MetadataRecordSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]
    type = serializers.CharField(source="record_type")
    # DRF takes declared fields off the class, so this does not shadow Serializer.data.
    data = serializers.SerializerMethodField()  # type: ignore[assignment]

    def get_data(self, record: MetadataRecord) -> dict[str, Any]:
        # Secrets (sensitive config values) never leave through the public log.
        return redact_record_data(record.record_type, record.data)

    class Meta:
        model = MetadataRecord
        fields = [
            "offset",
            "type",
            "controller_epoch",
            "timestamp_ms",
            "principal",
            "client_id",
            "client_host",
            "request_id",
            "data",
        ]


class MetadataFetchQuerySerializer(StrictSerializer):
    """Query parameters arrive as strings: parsed here, with Kafka's INVALID_REQUEST on junk."""

    after_offset = serializers.IntegerField(
        min_value=-1, max_value=INT64_MAX, required=False, default=-1
    )
    max_records = serializers.IntegerField(
        min_value=1, max_value=10000, required=False, default=1000
    )
    wait_ms = serializers.IntegerField(min_value=0, max_value=60000, required=False, default=0)
