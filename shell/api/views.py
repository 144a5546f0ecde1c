from __future__ import annotations

from collections.abc import Iterable

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
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
from controlplane.controller.errors import Errors
from controlplane.controller.health import CONTRACT_FIELDS
from controlplane.filtersets import MetadataRecordFilterSet
from controlplane.http_errors import HTTP_STATUS, json_error
from controlplane.runtime import fetch_cache
from controlplane.runtime.notice_cache import NoticeCache
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


class ErrorsAsJson(DefaultContentNegotiation):
    """DRF's negotiation would refuse `Accept: application/msgpack` before the view runs: the
    view negotiates its answer itself (`fetch_cache.negotiate`), and errors are JSON."""

    def select_renderer(
        self,
        request: Request,
        renderers: Iterable[BaseRenderer],
        format_suffix: str | None = None,
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


FETCH_VARY = "Accept, Accept-Encoding"


class MetadataFetchView(APIView):
    """Brokers follow the log: records after an offset, long-polling while there are none.
    Every broker asking for the same range gets the same bytes, encoded once per web process
    (controlplane.runtime.fetch_cache), as JSON or MessagePack, gzip or zstd or neither."""

    permission_classes = [ClusterActionPermission]
    content_negotiation_class = ErrorsAsJson

    @extend_schema(
        parameters=[MetadataFetchQuerySerializer],
        responses={
            (200, fetch_cache.JSON): OpenApiResponse(
                responses.METADATA_FETCH, "Kafka's answer (Content-Encoding gzip or zstd as asked)"
            ),
            (200, fetch_cache.MSGPACK): OpenApiResponse(
                responses.METADATA_FETCH, "The same fields as MessagePack"
            ),
            (406, fetch_cache.JSON): OpenApiResponse(
                responses.ERROR, "Accept names no media type served (UNSUPPORTED_VERSION)"
            ),
            (404, fetch_cache.JSON): OpenApiResponse(
                responses.ERROR, "broker_id is not registered (BROKER_ID_NOT_REGISTERED)"
            ),
            (409, fetch_cache.JSON): OpenApiResponse(
                responses.ERROR, "broker_epoch is not its registration's (STALE_BROKER_EPOCH)"
            ),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        wire = fetch_cache.negotiate(
            accept=request.META.get("HTTP_ACCEPT", ""),
            accept_encoding=request.META.get("HTTP_ACCEPT_ENCODING", ""),
        )
        if wire is None:
            return _not_acceptable()
        query = MetadataFetchQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        refused = _broker_refusal(query.validated_data)
        if refused is not None:  # answered at once, never parked
            return refused
        wait_s = query.validated_data["wait_ms"] / 1000

        def fetch() -> fetch_cache.EncodedAnswer:
            return fetch_cache.fetch_answer(
                after_offset=query.validated_data["after_offset"],
                max_records=query.validated_data["max_records"],
                max_bytes=query.validated_data["max_bytes"],
                wire=wire,
            )

        generation = notifier.generation
        answer = fetch()
        if not answer.records and not answer.snapshot and wait_s > 0:
            long_poll: LongPoll | None = request.META.get(LONG_POLL)
            if long_poll is not None:  # the server waits on its event loop, not in this thread
                long_poll.defer(
                    generation=generation,
                    timeout_s=wait_s,
                    refetch=lambda: fetch().body,
                    owner=principal_of(request).principal,
                )
            elif notifier.wait(generation, wait_s):
                answer = fetch()
        return _fetch_response(answer.body, wire)


# Every registered broker's epoch, read once per notice of the tables (every long-polling broker
# names itself in each fetch); a broker it does not show as asked is looked up again.
_registered_epochs = NoticeCache(
    broker_selectors.registered_epochs,
    generation=notifier.watched_tables_generation,
    max_age_s=fetch_cache.HEAD_MAX_AGE_S,
)


def _broker_refusal(query: dict[str, int]) -> HttpResponse | None:
    """A fetch naming its broker: BROKER_ID_NOT_REGISTERED for an id not registered,
    STALE_BROKER_EPOCH for an epoch not its registration's. A fenced broker with its current
    epoch is answered: it catches up by fetching, as Kafka's Raft leader answers an observer."""
    if "broker_id" not in query:
        return None
    broker_id = query["broker_id"]
    asked = query.get("broker_epoch")
    known = _registered_epochs.get().get(broker_id)
    if known is not None and asked in (None, known):
        return None  # as registered when the tables were last heard of
    # Refused only on the tables as they are now, never on what this process kept.
    epoch = broker_selectors.registered_epoch(broker_id=broker_id)
    if epoch is None:
        error = Errors.BROKER_ID_NOT_REGISTERED
        return json_error(error, f"Broker {broker_id} is not registered.", HTTP_STATUS[error])
    if asked is not None and asked != epoch:
        error = Errors.STALE_BROKER_EPOCH
        message = f"Broker {broker_id}'s epoch is {epoch}, not {asked}."
        return json_error(error, message, HTTP_STATUS[error])
    return None


def _fetch_response(body: bytes, wire: fetch_cache.WireForm) -> HttpResponse:
    # A deferred long-poll sends these headers with the refetched body: same wire form.
    response = HttpResponse(body, content_type=wire.media_type)
    if wire.content_encoding != fetch_cache.IDENTITY:
        response["Content-Encoding"] = wire.content_encoding
    response["Vary"] = FETCH_VARY
    return response


def _not_acceptable() -> HttpResponse:
    served = ", ".join(fetch_cache.SERVED_TYPES)
    response = json_error(
        Errors.UNSUPPORTED_VERSION,
        f"Accept names no media type served here; served: {served}.",
        406,
    )
    response["Vary"] = FETCH_VARY
    return response


def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(metrics.render(), content_type="text/plain; version=0.0.4")
