"""Canary isolation's reads (KIP-1095): the canary brokers and partitions, and the rollout
guard. Thin: validate the query, read through the selectors."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from canary import selectors
from canary.api.responses import CANARY, ROLLOUT
from canary.api.serializers import CanaryQuerySerializer, RolloutQuerySerializer
from controlplane.api.permissions import ClusterDescribePermission
from controlplane.api.responses import ok


class CanaryView(APIView):
    """percent.canary.partition, the canary brokers, the largest replication factor in use
    and each topic's canary partitions with those not isolated (DESCRIBE on CLUSTER)."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(parameters=[CanaryQuerySerializer], responses=ok(CANARY))
    def get(self, request: Request) -> Response:
        query = CanaryQuerySerializer.validated(dict(request.query_params.items()))
        return Response(selectors.canary_summary(topic=query["topic"]))


class CanaryRolloutView(APIView):
    """May a rollout of `version` go on past the canary brokers? PROCEED, HOLD, ROLLBACK,
    NOT_STARTED or COMPLETE, with the evidence from the metadata log and why, in words."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(parameters=[RolloutQuerySerializer], responses=ok(ROLLOUT))
    def get(self, request: Request) -> Response:
        query = RolloutQuerySerializer.validated(dict(request.query_params.items()))
        return Response(selectors.canary_rollout(version=query["version"]))
