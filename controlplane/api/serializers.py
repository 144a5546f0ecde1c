from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from controlplane.api.fields import INT32_MAX, INT64_MAX, StrictSerializer
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
    """Query parameters arrive as strings: parsed here, with Kafka's INVALID_REQUEST on junk.
    A bound above the server's limit is clamped to it, never refused (as Kafka's fetch does)."""

    after_offset = serializers.IntegerField(
        min_value=-1,
        max_value=INT64_MAX,
        required=False,
        default=-1,
        help_text="Records after this offset (-1: from the log's start).",
    )
    max_records = serializers.IntegerField(
        min_value=1,
        max_value=INT64_MAX,
        required=False,
        default=1000,
        help_text="Records per answer at the most; above the server's limit "
        "(CP_FETCH_MAX_RECORDS, 100,000 by default) it is that limit.",
    )
    max_bytes = serializers.IntegerField(
        min_value=1,
        max_value=INT64_MAX,
        required=False,
        help_text="The records' size (as JSON text, before any compression) per answer at the "
        "most; the first record comes even when larger, as Kafka's fetch answers at least one. "
        "Absent or above the server's limit (CP_FETCH_MAX_BYTES, 32 MiB by default): that limit.",
    )
    wait_ms = serializers.IntegerField(
        min_value=0,
        max_value=60000,
        required=False,
        default=0,
        help_text="With no record to answer, wait this long for a commit (long-poll).",
    )
    broker_id = serializers.IntegerField(
        min_value=0,
        max_value=INT32_MAX,
        required=False,
        help_text="The fetching broker: not registered, it is answered BROKER_ID_NOT_REGISTERED "
        "at once, never parked.",
    )
    broker_epoch = serializers.IntegerField(
        min_value=0,
        max_value=INT64_MAX,
        required=False,
        help_text="Its broker epoch (with broker_id): not its current registration's, it is "
        "answered STALE_BROKER_EPOCH at once, never parked. Without broker_id it is ignored.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "broker_id" not in attrs:
            attrs.pop("broker_epoch", None)  # an epoch alone names no broker: nothing to check
        limit = settings.CP_FETCH_MAX_BYTES
        attrs["max_records"] = min(attrs["max_records"], settings.CP_FETCH_MAX_RECORDS)
        attrs["max_bytes"] = min(attrs.get("max_bytes", limit), limit)
        return attrs


class MetadataSnapshotFetchQuerySerializer(StrictSerializer):
    """Kafka's FetchSnapshot, over HTTP: a snapshot's bytes from a position. Like the metadata
    fetch, a `max_bytes` above the server's limit is clamped to it, never refused."""

    position = serializers.IntegerField(
        min_value=0,
        max_value=INT64_MAX,
        required=False,
        default=0,
        help_text="The first byte wanted (0: from the start).",
    )
    max_bytes = serializers.IntegerField(
        min_value=1,
        max_value=INT64_MAX,
        required=False,
        help_text="Bytes per answer at the most. Absent or above the server's limit "
        "(CP_FETCH_MAX_BYTES, 32 MiB by default): that limit.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        limit = settings.CP_FETCH_MAX_BYTES
        attrs["max_bytes"] = min(attrs.get("max_bytes", limit), limit)
        return attrs


class MetadataSnapshotFetchSerializer(MetadataSnapshotFetchQuerySerializer):
    """The query and the snapshot's id from the path."""

    # Any int64 is an id the schema allows; one no snapshot has (a negative one too) is
    # SNAPSHOT_NOT_FOUND, as Kafka answers an unknown SnapshotId.
    end_offset = serializers.IntegerField(
        min_value=-INT64_MAX - 1,
        max_value=INT64_MAX,
        help_text="The snapshot's id (its end offset).",
    )
