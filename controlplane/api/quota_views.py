"""Client quotas over HTTP: alter goes through the controller, describe and the effective quota
read the projection (cp_client_quota)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.api.mixins import AuditedRpcView
from controlplane.api import quota_serializers as s
from controlplane.api.context import request_context
from controlplane.api.permissions import _ClusterOperation
from controlplane.controller.acls.bindings import AclOperation
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.quotas.describe import describe_client_quotas, effective_quotas
from controlplane.projections import client_quota_map
from controlplane.services import controller_call


class ClusterAlterConfigsPermission(_ClusterOperation):
    """AlterClientQuotas: ALTER_CONFIGS on CLUSTER, never from a broker principal (KIP-590)."""

    operation = AclOperation.ALTER_CONFIGS
    public_write = True


class ClusterDescribeConfigsPermission(_ClusterOperation):
    """DescribeClientQuotas: DESCRIBE_CONFIGS on CLUSTER (ALTER_CONFIGS implies it)."""

    operation = AclOperation.DESCRIBE_CONFIGS


def _wire_entity(entity: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"entity_type": e["entity_type"], "entity_name": e["entity_name"]} for e in entity]


class AlterClientQuotasView(AuditedRpcView):
    permission_classes = [ClusterAlterConfigsPermission]

    @extend_schema(request=s.AlterClientQuotasSerializer)
    def post(self, request: Request) -> Response:
        body = s.AlterClientQuotasSerializer.validated(request.data)
        payload = {
            "entries": [
                {
                    "entity": _wire_entity(entry["entity"]),
                    "ops": [dict(op) for op in entry["ops"]],
                }
                for entry in body["entries"]
            ],
            "validate_only": body["validate_only"],
        }
        response = controller_call(
            api="AlterClientQuotas", payload=payload, context=request_context(request)
        )
        if "entries" not in response:  # a whole-request error from the controller
            raise ApiError(Errors(response["error_code"]), response.get("error_message"))
        return Response(response)


class DescribeClientQuotasView(AuditedRpcView):
    permission_classes = [ClusterDescribeConfigsPermission]

    @extend_schema(request=s.DescribeClientQuotasSerializer)
    def post(self, request: Request) -> Response:
        body = s.DescribeClientQuotasSerializer.validated(request.data)
        components = [dict(c) for c in body["components"]]
        return Response(describe_client_quotas(client_quota_map(), components, body["strict"]))


class EffectiveClientQuotasView(APIView):
    """The quotas that apply to a (user, client-id) pair, by ClientQuotaManager's precedence."""

    permission_classes = [ClusterDescribeConfigsPermission]

    @extend_schema(
        parameters=[
            OpenApiParameter("user", str, required=True),
            OpenApiParameter("client_id", str, required=True),
        ]
    )
    def get(self, request: Request) -> Response:
        query = s.EffectiveQuotasQuerySerializer.validated(dict(request.query_params.items()))
        return Response(effective_quotas(client_quota_map(), query["user"], query["client_id"]))
