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

from audit.api.mixins import AuditedRpcView
from controlplane.api.context import client_host, principal_of, request_context
from controlplane.api.fields import StrictSerializer
from controlplane.api.permissions import (
    ClusterActionPermission,
    ClusterAlterPermission,
    IsPrincipal,
)
from controlplane.authz import is_authorized, refuse_broker_on_public_write
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import ApiError, Errors
from replicas import selectors, services
from replicas.api import serializers as s
from replicas.filtersets import PartitionFilterSet, TopicFilterSet
from replicas.models import Partition, Topic

AUTHORIZATION_FAILED = {
    "error_code": int(Errors.TOPIC_AUTHORIZATION_FAILED),
    "error_message": "Authorization failed.",
}


class PublicWritePermission(IsPrincipal):
    """Any principal but a broker's; the view authorizes each topic (Kafka: TOPIC ACLs)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        refuse_broker_on_public_write(principal_of(request))
        return True


def _allowed(request: Request, operation: AclOperation, resource: ResourceType, name: str) -> bool:
    return is_authorized(
        principal_of(request),
        host=client_host(request),
        operation=operation,
        resource_type=resource,
        resource_name=name,
    )


def _topic_allowed(request: Request, operation: AclOperation) -> Any:
    cluster_wide = operation is AclOperation.CREATE and _allowed(
        request, operation, ResourceType.CLUSTER, CLUSTER_NAME
    )
    return lambda name: cluster_wide or _allowed(request, operation, ResourceType.TOPIC, name)


def _per_topic(
    request: Request,
    operation: AclOperation,
    topics: list[dict[str, Any]],
    send: Any,
    denied: Any,
) -> list[dict[str, Any]]:
    """Kafka's per-topic authorization: the permitted topics go to the controller in one
    request, the others are answered TOPIC_AUTHORIZATION_FAILED; answers keep request order."""
    allowed = _topic_allowed(request, operation)
    permitted = [t for t in topics if allowed(t["name"])]
    answers: dict[str, dict[str, Any]] = {}
    if permitted:
        answers = {a["name"]: a for a in send(permitted)}
    return [answers.get(t["name"]) or denied(t["name"]) for t in topics]


class CreateTopicsView(AuditedRpcView):
    permission_classes = [PublicWritePermission]

    @extend_schema(request=s.CreateTopicsSerializer)
    def post(self, request: Request) -> Response:
        body = s.CreateTopicsSerializer.validated(request.data)
        topics = _per_topic(
            request,
            AclOperation.CREATE,
            body["topics"],
            lambda permitted: services.topics_create(
                payload={**body, "topics": permitted}, context=request_context(request)
            )["topics"],
            lambda name: {
                "name": name,
                "topic_id": None,
                **AUTHORIZATION_FAILED,
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": [],
            },
        )
        return Response({"throttle_time_ms": 0, "topics": topics})


class DeleteTopicsView(AuditedRpcView):
    permission_classes = [PublicWritePermission]

    @extend_schema(request=s.DeleteTopicsSerializer)
    def post(self, request: Request) -> Response:
        body = s.DeleteTopicsSerializer.validated(request.data)
        allowed = _topic_allowed(request, AclOperation.DELETE)
        names_by_id = dict(
            Topic.objects.filter(
                topic_id__in=[t["topic_id"] for t in body["topics"] if t.get("topic_id")]
            ).values_list("topic_id", "name")
        )
        denied: list[dict[str, Any]] = []
        names = []
        for name in body["topic_names"]:
            if allowed(name):
                names.append(name)
            else:
                denied.append({"name": name, "topic_id": None, **AUTHORIZATION_FAILED})
        states = []
        for state in body["topics"]:
            name = state.get("name") or names_by_id.get(state.get("topic_id") or "")
            if name is None or allowed(name):
                states.append(state)  # unknown ids get the controller's UNKNOWN_TOPIC_ID
            else:
                denied.append(
                    {
                        "name": state.get("name"),
                        "topic_id": state.get("topic_id"),
                        **AUTHORIZATION_FAILED,
                    }
                )
        responses: list[dict[str, Any]] = []
        if names or states:
            response = services.topics_delete(
                payload={"topic_names": names, "topics": states, "timeout_ms": body["timeout_ms"]},
                context=request_context(request),
            )
            responses = response["responses"]
        return Response({"throttle_time_ms": 0, "responses": responses + denied})


class CreatePartitionsView(AuditedRpcView):
    permission_classes = [PublicWritePermission]

    @extend_schema(request=s.CreatePartitionsSerializer)
    def post(self, request: Request) -> Response:
        body = s.CreatePartitionsSerializer.validated(request.data)
        results = _per_topic(
            request,
            AclOperation.ALTER,
            body["topics"],
            lambda permitted: services.partitions_create(
                payload={**body, "topics": permitted}, context=request_context(request)
            )["results"],
            lambda name: {"name": name, **AUTHORIZATION_FAILED},
        )
        return Response({"throttle_time_ms": 0, "results": results})


class _ControllerRpcView(APIView):
    """Validate the body strictly, hand it to the service, answer what the controller answers."""

    body: type[StrictSerializer]
    send: Callable[..., dict[str, Any]]

    def post(self, request: Request) -> Response:
        payload = self.body.validated(request.data)
        return Response(type(self).send(payload=payload, context=request_context(request)))


@extend_schema_view(post=extend_schema(request=s.ElectLeadersSerializer))
class ElectLeadersView(AuditedRpcView, _ControllerRpcView):
    permission_classes = [ClusterAlterPermission]
    body = s.ElectLeadersSerializer
    send = staticmethod(services.leaders_elect)


@extend_schema_view(post=extend_schema(request=s.AlterPartitionSerializer))
class AlterPartitionView(_ControllerRpcView):
    permission_classes = [ClusterActionPermission]
    body = s.AlterPartitionSerializer
    send = staticmethod(services.partition_alter)


@extend_schema_view(post=extend_schema(request=s.AlterReplicaStateSerializer))
class AlterReplicaStateView(_ControllerRpcView):
    permission_classes = [ClusterActionPermission]
    body = s.AlterReplicaStateSerializer
    send = staticmethod(services.replica_state_alter)


class TopicListView(generics.ListAPIView):  # type: ignore[type-arg]
    """Topics the principal may DESCRIBE (as Kafka's Metadata answer)."""

    permission_classes = [IsPrincipal]
    serializer_class = s.TopicSerializer
    filterset_class = TopicFilterSet

    def get_queryset(self) -> Any:
        queryset = selectors.topic_list()
        names = list(Topic.objects.values_list("name", flat=True))
        allowed = [
            n for n in names if _allowed(self.request, AclOperation.DESCRIBE, ResourceType.TOPIC, n)
        ]
        if len(allowed) == len(names):
            return queryset
        return queryset.filter(name__in=allowed)


class TopicDetailView(generics.RetrieveAPIView):  # type: ignore[type-arg]
    permission_classes = [IsPrincipal]
    serializer_class = s.TopicDetailSerializer

    def get_object(self) -> Topic:
        name = self.kwargs["name"]
        if not _allowed(self.request, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            # Kafka does not tell an unauthorized client whether the topic exists.
            raise ApiError(Errors.TOPIC_AUTHORIZATION_FAILED, f"Not authorized to describe {name}.")
        partitions = Prefetch("partitions", queryset=Partition.objects.order_by("partition_index"))
        queryset = selectors.topic_list().prefetch_related(partitions)
        return get_object_or_404(queryset, name=name)


class PartitionListView(generics.ListAPIView):  # type: ignore[type-arg]
    """Partitions across topics, filterable by broker, leaderless, offline (UI and tools)."""

    permission_classes = [IsPrincipal]
    serializer_class = s.PartitionSerializer
    filterset_class = PartitionFilterSet

    def get_queryset(self) -> Any:
        return selectors.partition_list()


class ReplicaIncidentsView(APIView):
    permission_classes = [IsPrincipal]

    def get(self, request: Request) -> Response:
        broker = request.query_params.get("broker")
        broker_id = int(broker) if broker and broker.isdigit() else None
        return Response({"results": selectors.replica_incidents(broker_id=broker_id)})
