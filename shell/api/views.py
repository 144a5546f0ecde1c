from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers import selectors as broker_selectors
from brokers.selectors import broker_as_dict, broker_list, broker_sessions
from controlplane import metrics, selectors
from controlplane.api import responses
from controlplane.api.authorization import CALLER_ONLY
from controlplane.api.context import principal_of
from controlplane.api.permissions import ClusterActionPermission, ClusterDescribePermission
from controlplane.api.serializers import MetadataFetchQuerySerializer, MetadataRecordSerializer
from controlplane.controller.health import CONTRACT_FIELDS
from controlplane.filtersets import MetadataRecordFilterSet
from controlplane.runtime.notifier import notifier
from controlplane.server.longpoll import ENVIRON_KEY as LONG_POLL
from controlplane.server.longpoll import LongPoll
from replicas.selectors import cluster_health


class WhoAmIView(APIView):
    """The authenticated principal: the cheapest authenticated call there is."""

    authorization = CALLER_ONLY

    @extend_schema(responses=responses.ok(responses.WHOAMI))
    def get(self, request: Request) -> Response:
        user = principal_of(request)
        return Response(
            {"principal": user.principal, "super_user": user.is_super, "broker": user.is_broker}
        )


class ClusterView(APIView):
    permission_classes = [ClusterDescribePermission]

    @extend_schema(responses=responses.ok(responses.CLUSTER))
    def get(self, request: Request) -> Response:
        summary = broker_selectors.cluster_summary()
        sessions = broker_sessions()
        summary["brokers"] = [broker_as_dict(b, sessions) for b in broker_list()]
        health = cluster_health()
        summary["health"] = {name: health[name] for name in CONTRACT_FIELDS}
        return Response(summary)


class MetadataLogView(generics.ListAPIView):  # type: ignore[type-arg]
    permission_classes = [ClusterDescribePermission]
    serializer_class = MetadataRecordSerializer
    filterset_class = MetadataRecordFilterSet

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.metadata_log_queryset()


class MetadataFetchView(APIView):
    """Brokers follow the log: records after an offset, long-polling while there are none."""

    permission_classes = [ClusterActionPermission]

    @extend_schema(
        parameters=[MetadataFetchQuerySerializer], responses=responses.ok(responses.METADATA_FETCH)
    )
    def get(self, request: Request) -> HttpResponse:
        query = MetadataFetchQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        after = query.validated_data["after_offset"]
        limit = query.validated_data["max_records"]
        wait_s = query.validated_data["wait_ms"] / 1000
        generation = notifier.generation
        records = selectors.metadata_records_json_after(after_offset=after, max_records=limit)
        if not records and wait_s > 0:
            long_poll: LongPoll | None = request.META.get(LONG_POLL)
            if long_poll is not None:  # the server waits on its event loop, not in this thread
                long_poll.defer(
                    generation=generation,
                    timeout_s=wait_s,
                    refetch=lambda: _fetch_body(after, limit).encode(),
                )
            elif notifier.wait(generation, wait_s):
                return HttpResponse(_fetch_body(after, limit), content_type="application/json")
        return HttpResponse(_fetch_body(after, limit, records), content_type="application/json")


def _fetch_body(after: int, limit: int, records: list[str] | None = None) -> str:
    if records is None:
        records = selectors.metadata_records_json_after(after_offset=after, max_records=limit)
    head = json.dumps(selectors.metadata_head(), separators=(",", ":"))
    # Record types are identifiers and data is stored JSON: the body is assembled as text.
    return f'{head[:-1]},"records":[{",".join(records)}]}}'


def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(metrics.render(), content_type="text/plain; version=0.0.4")
