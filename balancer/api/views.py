"""The balancer's API: thin views. Writes run through `controlplane.rpc.execute` with the
balancer's specs (balancer.rpcs: authorized, validated, audited); reads through the selectors
(DESCRIBE on the cluster)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from balancer import rpcs, selectors, services
from balancer.api.serializers import BrokerPlanRequest, RebalancePlanRequest
from controlplane.api.context import principal_of
from controlplane.api.permissions import ClusterDescribePermission, IsPrincipal
from controlplane.api.responses import ERROR, arr, obj, ok
from controlplane.authz import client_host
from controlplane.rpc import ApiSpec, Caller, execute

PLANS_SHOWN = 50  # the newest plans the list answers

# A rebalance names no broker; a drain or a fill names its broker (one body, two shapes).
CREATE_REQUEST = PolymorphicProxySerializer(
    component_name="CreateBalancePlanRequest",
    serializers=[RebalancePlanRequest, BrokerPlanRequest],
    resource_type_field_name=None,
)


def ok_or_conflict(schema: Any, conflict: str) -> dict[int, Any]:
    """The answer's schema, and the 409 a plan's or the cluster's state may give instead."""
    return {**(ok(schema) or {}), 409: OpenApiResponse(response=ERROR, description=conflict)}


def _caller(request: Request) -> Caller:
    return Caller(
        principal_of(request),
        host=client_host(request),
        client_id=request.headers.get("X-Client-ID", ""),
        request_id=getattr(request._request, "request_id", ""),
    )


def _run(request: Request, spec: ApiSpec, body: Any) -> Response:
    answer = execute(spec, body, _caller(request))
    response = Response(answer.data, status=answer.status)
    for header, value in answer.headers.items():
        response[header] = value
    return response


def _body(request: Request, **fields: Any) -> Any:
    data: Any = request.data
    if not data:
        data = {}
    return {**data, **fields} if isinstance(data, dict) else data


class BalancePlanListView(APIView):
    """GET: the newest plans (DESCRIBE on the cluster). POST: a new plan of a goal
    (rebalance, drain or fill a broker) from the cluster as it is, to preview: its moves and
    the skew before and after (ALTER on the cluster)."""

    permission_classes = [ClusterDescribePermission]  # the read; POST: `execute` authorizes

    def get_permissions(self) -> list[Any]:
        if self.request.method == "GET":
            return super().get_permissions()  # type: ignore[return-value]
        return [IsPrincipal()]

    @extend_schema(responses=ok(obj("results", results=arr(rpcs.PLAN))))
    def get(self, request: Request) -> Response:
        plans = selectors.plan_list()[:PLANS_SHOWN]
        return Response({"results": [rpcs.plan_answer(p, with_moves=False) for p in plans]})

    @extend_schema(
        request=CREATE_REQUEST,
        responses=ok_or_conflict(rpcs.ANSWER, "INVALID_REQUEST: the cluster cannot take it"),
    )
    def post(self, request: Request) -> Response:
        return _run(request, rpcs.CREATE, _body(request))


class BalancePlanDetailView(APIView):
    """A plan: its state, moves, skew before and after, and progress while it runs."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(responses=ok(rpcs.PLAN))
    def get(self, request: Request, plan_id: int) -> Response:
        plan = selectors.plan_get(plan_id=plan_id)
        if plan is None:
            raise services.PlanNotFound(plan_id)
        return Response(rpcs.plan_answer(plan))


class BalancePlanExecuteView(APIView):
    """Execute a previewed plan (one at a time): batch_size, concurrency, throttle (bytes/s),
    unregister (a drain's broker, once empty and stopped)."""

    permission_classes = [IsPrincipal]

    @extend_schema(
        request=rpcs.EXECUTE.request,
        responses=ok_or_conflict(
            rpcs.ANSWER, "REASSIGNMENT_IN_PROGRESS, or INVALID_REQUEST: not a PROPOSED plan"
        ),
    )
    def post(self, request: Request, plan_id: int) -> Response:
        return _run(request, rpcs.EXECUTE, _body(request, plan_id=plan_id))


class BalancePlanCancelView(APIView):
    """Cancel a plan: unrun, it is dropped; running, its moves in progress are cancelled."""

    permission_classes = [IsPrincipal]

    @extend_schema(
        request=None,
        responses=ok_or_conflict(rpcs.ANSWER, "INVALID_REQUEST: the plan has finished"),
    )
    def post(self, request: Request, plan_id: int) -> Response:
        return _run(request, rpcs.CANCEL, _body(request, plan_id=plan_id))
