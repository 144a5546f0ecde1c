"""Thin views: parse, authenticate, authorize, validate, then call a service."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers import selectors, services
from brokers.api.serializers import (
    BrokerHeartbeatResponseSerializer,
    BrokerHeartbeatSerializer,
    BrokerRegistrationResponseSerializer,
    BrokerRegistrationSerializer,
    BrokerSerializer,
)
from brokers.filtersets import BrokerFilterSet
from brokers.models import Broker
from controlplane.api import responses
from controlplane.api.context import request_context
from controlplane.api.permissions import (
    ClusterActionPermission,
    ClusterDescribePermission,
)


class BrokerRegistrationView(APIView):
    permission_classes = [ClusterActionPermission]

    @extend_schema(
        request=BrokerRegistrationSerializer, responses=BrokerRegistrationResponseSerializer
    )
    def post(self, request: Request) -> Response:
        body = BrokerRegistrationSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        payload: dict[str, Any] = dict(body.validated_data)
        payload["listeners"] = [dict(item) for item in payload["listeners"]]
        payload["features"] = [dict(item) for item in payload["features"]]
        return Response(services.broker_register(payload=payload, context=request_context(request)))


class BrokerHeartbeatView(APIView):
    permission_classes = [ClusterActionPermission]

    @extend_schema(request=BrokerHeartbeatSerializer, responses=BrokerHeartbeatResponseSerializer)
    def post(self, request: Request) -> Response:
        body = BrokerHeartbeatSerializer.validated(request.data)  # the compiled happy path
        return Response(services.broker_heartbeat(payload=body, context=request_context(request)))


class BrokerListView(generics.ListAPIView):  # type: ignore[type-arg]
    permission_classes = [ClusterDescribePermission]
    serializer_class = BrokerSerializer
    filterset_class = BrokerFilterSet
    queryset = Broker.objects.all().order_by("broker_id")


class BrokerDetailView(generics.RetrieveAPIView):  # type: ignore[type-arg]
    permission_classes = [ClusterDescribePermission]
    serializer_class = BrokerSerializer

    def get_object(self) -> Broker:
        return get_object_or_404(Broker, broker_id=self.kwargs["broker_id"])


class FeaturesView(APIView):
    """The cluster's features (supported, finalized, each broker's ranges) and the quorum's
    voters: what `kafka-features describe` and an operator planning an upgrade read."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(responses=responses.ok(responses.FEATURES))
    def get(self, request: Request) -> Response:
        return Response(selectors.features_describe())
