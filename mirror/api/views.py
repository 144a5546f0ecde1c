"""The mirror API (docs/reference/rest-api.md, "MirrorMaker 2"): thin views. Writes run
through `controlplane.rpc.execute` with the mirror's specs (mirror.rpcs); reads go through the
selectors; the group heartbeat (no metadata write) through its service."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api.context import principal_of
from controlplane.api.permissions import ClusterDescribePermission, IsPrincipal
from controlplane.api.responses import obj, ok
from controlplane.authz import client_host
from controlplane.controller.errors import ApiError, Errors
from controlplane.http_errors import error_body
from controlplane.rpc import ApiSpec, Caller, RpcAnswer, error_answer, execute
from mirror import rpcs, selectors, services
from mirror.api import serializers as s
from mirror.api.responses import FLOW, FLOWS

TEXT = "text/plain"
CONFIG_OFFSET_HEADER = "X-Mirror-Config-Offset"


def caller_of(request: Request) -> Caller:
    return Caller(
        principal_of(request),
        host=client_host(request),
        client_id=request.headers.get("X-Client-ID", ""),
        request_id=getattr(request._request, "request_id", ""),
    )


def _answer(answer: RpcAnswer) -> Response:
    response = Response(answer.data, status=answer.status)
    for header, value in answer.headers.items():
        response[header] = value
    return response


def _run(request: Request, spec: ApiSpec, body: Any, refusal: RpcAnswer | None = None) -> Response:
    return _answer(execute(spec, body, caller_of(request), refusal=refusal))


class MirrorConfigView(APIView):
    """GET: the stored MirrorMaker 2 configuration, as it was sent (text/plain; DESCRIBE on
    CLUSTER). PUT: store a new one after validation (text/plain body; ALTER on CLUSTER)."""

    permission_classes = [ClusterDescribePermission]  # the read; PUT: `execute` authorizes

    def get_permissions(self) -> Sequence[Any]:
        if self.request.method == "GET":
            return super().get_permissions()
        return [IsPrincipal()]

    @extend_schema(responses={(200, TEXT): str})
    def get(self, request: Request) -> HttpResponse:
        stored = selectors.mirror_config_get()
        if stored is None:
            return Response(
                error_body(Errors.INVALID_REQUEST, "No MirrorMaker configuration is stored."),
                status=status.HTTP_404_NOT_FOUND,
            )
        text, offset = stored
        response = HttpResponse(text, content_type=f"{TEXT}; charset=utf-8")
        response[CONFIG_OFFSET_HEADER] = str(offset)
        return response

    @extend_schema(request={TEXT: str}, responses=ok(rpcs.ALTER_CONFIG.response))
    def put(self, request: Request) -> Response:
        refusal: RpcAnswer | None = None
        body: Any = None
        if request.content_type.split(";")[0].strip().lower() != TEXT:
            refusal = error_answer(
                ApiError(Errors.INVALID_REQUEST, "PUT the configuration as text/plain.")
            )
        else:
            try:
                body = {"text": request.body.decode("utf-8")}
            except UnicodeDecodeError:
                refusal = error_answer(
                    ApiError(Errors.INVALID_REQUEST, "The configuration is not UTF-8 text.")
                )
        return _run(request, rpcs.ALTER_CONFIG, body, refusal)


class MirrorFlowListView(generics.ListAPIView):  # type: ignore[type-arg]
    """Every flow with its nodes, leader, connectors and tasks, topics, heartbeat age and lagging
    topics (DESCRIBE on CLUSTER)."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(parameters=[s.FlowQuerySerializer], responses=ok(FLOWS))
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        paging = {"page", "page_size"}  # the paginator's own
        query = s.FlowQuerySerializer.validated(
            {k: v for k, v in request.query_params.items() if k not in paging}
        )
        flows = selectors.mirror_flow_list(source=query["source"], target=query["target"])
        page = self.paginate_queryset(flows)  # type: ignore[arg-type]
        return self.get_paginated_response(page)


class MirrorFlowDetailView(APIView):
    permission_classes = [ClusterDescribePermission]

    @extend_schema(responses=ok(FLOW))
    def get(self, request: Request, source: str, target: str) -> Response:
        flow = selectors.mirror_flow_detail(source=source, target=target)
        if flow is None:
            return Response(
                error_body(Errors.INVALID_REQUEST, f"No replication flow {source}->{target}."),
                status=status.HTTP_404_NOT_FOUND,
            )
        return Response(flow)


class MirrorFlowTargetStateView(APIView):
    """PUT .../pause or .../resume: every connector of the flow, or `?connector=NAME` ones."""

    permission_classes = [IsPrincipal]
    state = "PAUSED"

    @extend_schema(
        request=None,
        parameters=[s.TargetStateQuerySerializer],
        responses=ok(rpcs.ALTER_TARGET_STATE.response),
    )
    def put(self, request: Request, source: str, target: str) -> Response:
        query = s.TargetStateQuerySerializer.validated(
            {"connector": request.query_params.getlist("connector")}
        )
        body = {
            "source": source,
            "target": target,
            "state": self.state,
            "connectors": query["connector"],
        }
        return _run(request, rpcs.ALTER_TARGET_STATE, body)


class MirrorFlowPauseView(MirrorFlowTargetStateView):
    state = "PAUSED"


class MirrorFlowResumeView(MirrorFlowTargetStateView):
    state = "STARTED"


class MirrorGroupRpcView(APIView):
    """A mirror node's group protocol: join, sync (the leader's assignment), task-configs (the
    leader persists a connector's task configs), leave."""

    permission_classes = [IsPrincipal]

    # Every group RPC answers the same shape (Kafka's error fields).
    @extend_schema(
        request={"application/json": obj()}, responses=ok(rpcs.GROUP_SPECS["join"].response)
    )
    def post(self, request: Request, source: str, target: str, rpc: str) -> Response:
        spec = rpcs.GROUP_SPECS.get(rpc)
        if spec is None:
            return Response(
                error_body(Errors.INVALID_REQUEST, f"No such group API {rpc!r}."),
                status=status.HTTP_404_NOT_FOUND,
            )
        refusal: RpcAnswer | None = None
        body: Any = None
        try:
            data = request.data
            body = {**data, "source": source, "target": target} if isinstance(data, dict) else data
        except APIException as error:
            refusal = error_answer(error)
        return _run(request, spec, body, refusal)


class MirrorGroupHeartbeatView(APIView):
    """A member's heartbeat: records its contact and status report and answers its group (long
    polling up to `wait_ms` for a change). Writes no metadata; not an admin request."""

    permission_classes = [IsPrincipal]

    @extend_schema(request=s.HeartbeatSerializer, responses=ok(obj()))
    def post(self, request: Request, source: str, target: str) -> Response:
        caller = caller_of(request)
        if not rpcs.mirror_node_allowed(caller):
            return Response(rpcs.not_a_mirror_node(caller), status=status.HTTP_403_FORBIDDEN)
        body = s.HeartbeatSerializer.validated(request.data)
        return Response(
            services.mirror_member_heartbeat(
                source=source,
                target=target,
                member_id=body["member_id"],
                report=dict(body["report"]),
                known_flow_offset=body["known_flow_offset"],
                known_config_offset=body["known_config_offset"],
                wait_ms=body["wait_ms"],
            )
        )
