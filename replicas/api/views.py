"""Thin views: parse, authenticate, authorize, validate, then call a service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.api import responses
from controlplane.api.authorization import AuthorizedListView, ResourceAuthorization
from controlplane.api.context import principal_of, request_context
from controlplane.api.fields import (
    INT32_MAX,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from controlplane.api.permissions import (
    ClusterActionPermission,
    ClusterDescribePermission,
    IsPrincipal,
)
from controlplane.authz import client_host, is_authorized
from controlplane.controller.acls.bindings import AclOperation, ResourceType
from controlplane.controller.errors import ApiError, Errors
from replicas import selectors, services
from replicas.api import serializers as s
from replicas.filtersets import PartitionFilterSet, TopicFilterSet
from replicas.models import Partition, Topic


def _allowed(request: Request, operation: AclOperation, resource: ResourceType, name: str) -> bool:
    return is_authorized(
        principal_of(request),
        host=client_host(request),
        operation=operation,
        resource_type=resource,
        resource_name=name,
    )


class _ControllerRpcView(APIView):
    """Validate the body strictly, hand it to the service, answer what the controller answers."""

    body: type[StrictSerializer]
    send: Callable[..., dict[str, Any]]

    def post(self, request: Request) -> Response:
        payload = self.body.validated(request.data)
        return Response(type(self).send(payload=payload, context=request_context(request)))


@extend_schema_view(
    post=extend_schema(
        request=s.AlterPartitionSerializer, responses=responses.ok(responses.ALTER_PARTITION)
    )
)
class AlterPartitionView(_ControllerRpcView):
    permission_classes = [ClusterActionPermission]
    body = s.AlterPartitionSerializer
    send = staticmethod(services.partition_alter)


@extend_schema_view(
    post=extend_schema(
        request=s.AlterReplicaStateSerializer, responses=responses.ok(responses.ALTER_REPLICA_STATE)
    )
)
class AlterReplicaStateView(_ControllerRpcView):
    permission_classes = [ClusterActionPermission]
    body = s.AlterReplicaStateSerializer
    send = staticmethod(services.replica_state_alter)


# Topics, partitions and incidents answer only the topics the principal may DESCRIBE.
TOPICS = ResourceAuthorization(ResourceType.TOPIC, "name")
PARTITION_TOPICS = ResourceAuthorization(ResourceType.TOPIC, "topic__name")


class TopicListView(AuthorizedListView):
    """Topics the principal may DESCRIBE (as Kafka's Metadata answer)."""

    permission_classes = [IsPrincipal]
    serializer_class = s.TopicSerializer
    filterset_class = TopicFilterSet
    authorization = TOPICS

    def get_queryset(self) -> Any:
        return selectors.topic_list()


class TopicDetailView(generics.RetrieveAPIView):  # type: ignore[type-arg]
    permission_classes = [IsPrincipal]
    serializer_class = s.TopicDetailSerializer
    authorization = TOPICS

    def get_object(self) -> Topic:
        name = self.kwargs["name"]
        if not _allowed(self.request, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            # Kafka does not tell an unauthorized client whether the topic exists.
            raise ApiError(Errors.TOPIC_AUTHORIZATION_FAILED, f"Not authorized to describe {name}.")
        partitions = Prefetch("partitions", queryset=Partition.objects.order_by("partition_index"))
        queryset = selectors.topic_list().prefetch_related(partitions)
        return get_object_or_404(queryset, name=name)


class PartitionListView(AuthorizedListView):
    """Partitions across topics, filterable by broker, leaderless, offline (UI and tools): those
    of the topics the principal may DESCRIBE."""

    permission_classes = [IsPrincipal]
    serializer_class = s.PartitionSerializer
    filterset_class = PartitionFilterSet
    authorization = PARTITION_TOPICS

    def get_queryset(self) -> Any:
        return selectors.partition_list()


class ReplicaIncidentsQuerySerializer(StrictSerializer):
    broker = StrictIntegerField(min_value=0, max_value=INT32_MAX, required=False)

    @classmethod
    def of(cls, request: Request) -> dict[str, Any]:
        """The query string, `?broker=` as ASCII digits only (`int('²')` is no broker id)."""
        query: dict[str, Any] = {}
        broker = request.query_params.get("broker")
        if broker:
            if not broker.isascii() or not broker.isdigit():
                raise ApiError(Errors.INVALID_REQUEST, "broker: A valid integer is required.")
            query["broker"] = int(broker)
        return cls.validated(query)


class ReplicaIncidentsView(APIView):
    """Replicas reported offline and what the controller did: those of the topics the principal
    may DESCRIBE."""

    permission_classes = [IsPrincipal]
    authorization = TOPICS

    @extend_schema(
        parameters=[ReplicaIncidentsQuerySerializer],
        responses=responses.ok(responses.REPLICA_INCIDENTS),
    )
    def get(self, request: Request) -> Response:
        query = ReplicaIncidentsQuerySerializer.of(request)
        incidents = selectors.replica_incidents(broker_id=query.get("broker"))
        visible = self.authorization.filter_items(request, incidents, lambda i: str(i["topic"]))
        return Response({"results": visible})


class PartitionReassignmentsQuerySerializer(StrictSerializer):
    topic = StrictCharField(max_length=s.NAME_MAX, required=False)


class PartitionReassignmentsView(APIView):
    """The reassignments in progress (KIP-455), as ListPartitionReassignments answers them:
    every one, or one topic's (`?topic=`). DESCRIBE on the cluster, as Kafka's."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(
        parameters=[PartitionReassignmentsQuerySerializer],
        responses=responses.ok(responses.PARTITION_REASSIGNMENTS),
    )
    def get(self, request: Request) -> Response:
        query = PartitionReassignmentsQuerySerializer.validated(dict(request.query_params.items()))
        topic = query.get("topic")
        wanted = None if topic is None else {topic: None}
        return Response({"topics": selectors.partition_reassignments(topics=wanted)})
