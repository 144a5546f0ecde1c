"""Kafka's FetchSnapshot over HTTP: a broker that starts from nothing, or was answered a
`snapshot_id` by the metadata fetch (its records are before the log's start), reads the latest
snapshot's id here, then its bytes in pieces (controlplane.runtime.snapshots)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api import responses
from controlplane.api.permissions import ClusterActionPermission
from controlplane.api.serializers import (
    MetadataSnapshotFetchQuerySerializer,
    MetadataSnapshotFetchSerializer,
)
from controlplane.controller.errors import Errors
from controlplane.http_errors import json_error
from controlplane.runtime.snapshot_format import SnapshotDamaged
from controlplane.runtime.snapshot_reads import (
    metadata_snapshot_get,
    metadata_snapshot_latest_intact,
    metadata_snapshot_read,
    snapshot_as_dict,
)
from shell.api.views import ErrorsAsJson

OCTETS = "application/octet-stream"


class MetadataSnapshotView(APIView):
    """The latest snapshot of the metadata image: its id, size and checksum."""

    permission_classes = [ClusterActionPermission]

    @extend_schema(
        responses={
            200: OpenApiResponse(responses.METADATA_SNAPSHOT, "The latest snapshot"),
            404: OpenApiResponse(responses.ERROR, "No snapshot yet (SNAPSHOT_NOT_FOUND, 98)"),
        }
    )
    def get(self, request: Request) -> HttpResponse:
        latest = metadata_snapshot_latest_intact()
        if latest is None:
            return json_error(Errors.SNAPSHOT_NOT_FOUND, "No metadata snapshot yet.", 404)
        return Response(snapshot_as_dict(latest))


class MetadataSnapshotFetchView(APIView):
    """A snapshot's bytes from `position` (zstd-compressed MessagePack, checked against the
    snapshot's checksum once whole), at most `max_bytes`, with `Content-Range`."""

    permission_classes = [ClusterActionPermission]
    content_negotiation_class = ErrorsAsJson

    @extend_schema(
        parameters=[
            MetadataSnapshotFetchQuerySerializer,
            OpenApiParameter(
                "end_offset", OpenApiTypes.INT64, OpenApiParameter.PATH, description="Its id"
            ),
        ],
        responses={
            (200, OCTETS): OpenApiResponse(
                OpenApiTypes.BINARY, "Its bytes from `position` (Content-Range: bytes P-Q/size)"
            ),
            (404, "application/json"): OpenApiResponse(
                responses.ERROR, "No such snapshot, or retention deleted it (SNAPSHOT_NOT_FOUND)"
            ),
            (416, "application/json"): OpenApiResponse(
                responses.ERROR, "`position` at or past its end (POSITION_OUT_OF_RANGE, 99)"
            ),
        },
    )
    def get(self, request: Request, end_offset: str) -> HttpResponse:
        query = MetadataSnapshotFetchSerializer(
            data={**request.query_params.dict(), "end_offset": end_offset}
        )
        query.is_valid(raise_exception=True)
        asked = query.validated_data
        snapshot = metadata_snapshot_get(end_offset=asked["end_offset"])
        if snapshot is None:
            return _not_found(asked["end_offset"])
        position = asked["position"]
        if position >= snapshot.size_bytes:
            response = json_error(
                Errors.POSITION_OUT_OF_RANGE,
                f"Position {position} is past the end of snapshot {snapshot.end_offset} "
                f"({snapshot.size_bytes} bytes).",
                416,
            )
            response["Content-Range"] = f"bytes */{snapshot.size_bytes}"
            return response
        try:
            data = metadata_snapshot_read(
                snapshot=snapshot, position=position, max_bytes=asked["max_bytes"]
            )
        except SnapshotDamaged:
            return _not_found(snapshot.end_offset, " (it is damaged: ask for the latest again)")
        answer = HttpResponse(data, content_type=OCTETS)
        last = position + len(data) - 1
        answer["Content-Range"] = f"bytes {position}-{last}/{snapshot.size_bytes}"
        return answer


def _not_found(end_offset: int, why: str = "") -> HttpResponse:
    return json_error(
        Errors.SNAPSHOT_NOT_FOUND, f"No metadata snapshot ends at offset {end_offset}{why}.", 404
    )
