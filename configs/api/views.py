"""Config reads that are not Kafka RPCs: the effective client quota of a (user, client-id)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from configs.api import quota_serializers as s
from configs.projection import client_quota_map
from controlplane.api import responses
from controlplane.api.permissions import _ClusterOperation
from controlplane.controller.acls.bindings import AclOperation
from controlplane.controller.quotas import describe as quotas


class ClusterDescribeConfigsPermission(_ClusterOperation):
    """DESCRIBE_CONFIGS on CLUSTER (ALTER_CONFIGS implies it)."""

    operation = AclOperation.DESCRIBE_CONFIGS


NON_BLANK = {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]*$"}


class EffectiveClientQuotasView(APIView):
    """The quotas that apply to a (user, client-id) pair, by ClientQuotaManager's precedence."""

    permission_classes = [ClusterDescribeConfigsPermission]

    @extend_schema(
        parameters=[
            OpenApiParameter("user", NON_BLANK, required=True),
            OpenApiParameter("client_id", NON_BLANK, required=True),
        ],
        responses=responses.ok(responses.EFFECTIVE_QUOTAS),
    )
    def get(self, request: Request) -> Response:
        query: dict[str, Any] = s.EffectiveQuotasQuerySerializer.validated(
            dict(request.query_params.items())
        )
        return Response(
            quotas.effective_quotas(client_quota_map(), query["user"], query["client_id"])
        )
