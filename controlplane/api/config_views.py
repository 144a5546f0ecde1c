"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs over HTTP (thin views).

Authorization is Kafka's, per resource: ALTER_CONFIGS (writes) or DESCRIBE_CONFIGS (reads) on the
TOPIC for a topic, on the CLUSTER for BROKER and BROKER_LOGGER; a refused resource is answered
TOPIC_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED and never reaches the controller.
Writes go to the controller; DescribeConfigs reads the projection (cp_config) and settings.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from audit.api.mixins import AuditedRpcView
from brokers.selectors import broker_exists
from controlplane.api.config_serializers import (
    AlterConfigsSerializer,
    DescribeConfigsSerializer,
    IncrementalAlterConfigsSerializer,
)
from controlplane.api.context import client_host, principal_of, request_context
from controlplane.api.fields import StrictSerializer
from controlplane.api.permissions import IsPrincipal
from controlplane.authz import is_authorized, refuse_broker_on_public_write
from controlplane.controller.acl import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.config_rpcs import broker_id_of, duplicate_resources, resource_key
from controlplane.controller.configs import (
    BROKER_LOGGER,
    CLUSTER_DEFAULT,
    SUPPORTED_RESOURCE_TYPES,
    TOPIC,
)
from controlplane.controller.errors import ApiError, Errors
from controlplane.selectors import configs_describe, configs_stored
from controlplane.services import controller_call
from replicas.selectors import topic_exists


class PublicWritePermission(IsPrincipal):
    """Any principal but a broker's (KIP-590); resources are authorized one by one."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        refuse_broker_on_public_write(principal_of(request))
        return True


def _ok() -> dict[str, Any]:
    return {"error_code": 0, "error": Errors.NONE.name, "error_message": None}


def _authorization_error(
    request: Request, operation: AclOperation, resource_type: str, resource_name: str
) -> ApiError | None:
    """None when the principal may do `operation` on the resource; else Kafka's error."""
    if resource_type not in SUPPORTED_RESOURCE_TYPES:
        return None  # answered INVALID_REQUEST, without telling anything about a resource
    if resource_type == TOPIC:
        acl_type, acl_name, error = (
            ResourceType.TOPIC,
            resource_name,
            Errors.TOPIC_AUTHORIZATION_FAILED,
        )
    else:
        acl_type, acl_name, error = (
            ResourceType.CLUSTER,
            CLUSTER_NAME,
            Errors.CLUSTER_AUTHORIZATION_FAILED,
        )
    principal = principal_of(request)
    allowed = is_authorized(
        principal,
        host=client_host(request),
        operation=operation,
        resource_type=acl_type,
        resource_name=acl_name,
    )
    if allowed:
        return None
    return ApiError(
        error,
        f"{principal.principal} is not authorized for {operation.name} on "
        f"{resource_type} '{resource_name}'.",
    )


class _AlterConfigsBase(AuditedRpcView):
    permission_classes = [PublicWritePermission]
    api = ""
    serializer: type[StrictSerializer] = StrictSerializer

    def post(self, request: Request) -> Response:
        body = self.serializer.validated(request.data)
        resources = body["resources"]
        duplicates = duplicate_resources(resources)
        refused: dict[int, ApiError] = {}
        for index, resource in enumerate(resources):
            key = resource_key(resource)
            if key in duplicates:
                refused[index] = ApiError(Errors.INVALID_REQUEST, "Duplicate resource in request.")
                continue
            error = _authorization_error(request, AclOperation.ALTER_CONFIGS, *key)
            if error is not None:
                refused[index] = error
        permitted = [r for i, r in enumerate(resources) if i not in refused]
        answers: list[dict[str, Any]] = []
        if permitted:
            response = controller_call(
                api=self.api,
                payload={"resources": permitted, "validate_only": body["validate_only"]},
                context=request_context(request),
            )
            if "responses" not in response:  # a whole-request error from the controller
                raise ApiError(Errors(response["error_code"]), response.get("error_message"))
            answers = list(response["responses"])
        answered = iter(answers)
        responses = []
        for index, resource in enumerate(resources):
            if index in refused:
                resource_type, resource_name = resource_key(resource)
                responses.append(
                    {
                        **refused[index].as_fields(),
                        "resource_type": resource_type,
                        "resource_name": resource_name,
                    }
                )
            else:
                responses.append(next(answered))
        return Response({"throttle_time_ms": 0, "responses": responses})


class AlterConfigsView(_AlterConfigsBase):
    """Kafka's AlterConfigs: the given configs replace all dynamic configs of each resource."""

    api = "AlterConfigs"
    serializer = AlterConfigsSerializer

    @extend_schema(request=AlterConfigsSerializer)
    def post(self, request: Request) -> Response:
        return super().post(request)


class IncrementalAlterConfigsView(_AlterConfigsBase):
    """Kafka's IncrementalAlterConfigs: SET, DELETE, APPEND, SUBTRACT key by key."""

    api = "IncrementalAlterConfigs"
    serializer = IncrementalAlterConfigsSerializer

    @extend_schema(request=IncrementalAlterConfigsSerializer)
    def post(self, request: Request) -> Response:
        return super().post(request)


def _check_exists(resource_type: str, resource_name: str) -> None:
    """The resource exists in the projection (the same errors as the controller's)."""
    if resource_type not in SUPPORTED_RESOURCE_TYPES:
        raise ApiError(Errors.INVALID_REQUEST, f"Unexpected resource type {resource_type}.")
    if resource_type == TOPIC:
        if not resource_name:
            raise ApiError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        if not topic_exists(name=resource_name):
            raise ApiError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{resource_name}' does not exist."
            )
        return
    if resource_name == CLUSTER_DEFAULT:
        if resource_type == BROKER_LOGGER:
            raise ApiError(Errors.INVALID_REQUEST, "Broker id must not be empty.")
        return
    broker_id = broker_id_of(resource_name)
    if broker_id is None:
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"Illegal non-integral {resource_type} resource name: {resource_name}",
        )
    if not broker_exists(broker_id=broker_id):
        raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered.")


class DescribeConfigsView(AuditedRpcView):
    """Kafka's DescribeConfigs, read from the projection: each key's value and where it comes
    from (topic, broker, cluster default, static or default), sensitive values hidden."""

    permission_classes = [IsPrincipal]

    @extend_schema(request=DescribeConfigsSerializer)
    def post(self, request: Request) -> Response:
        body = DescribeConfigsSerializer.validated(request.data)
        resources = body["resources"]
        stored = configs_stored(resources=[resource_key(r) for r in resources])
        results = []
        for resource in resources:
            resource_type, resource_name = resource_key(resource)
            configs: list[dict[str, Any]] = []
            try:
                error = _authorization_error(
                    request, AclOperation.DESCRIBE_CONFIGS, resource_type, resource_name
                )
                if error is not None:
                    raise error
                _check_exists(resource_type, resource_name)
                configs = configs_describe(
                    resource_type=resource_type,
                    resource_name=resource_name,
                    stored=stored,
                    keys=resource.get("configuration_keys"),
                    include_synonyms=body["include_synonyms"],
                    include_documentation=body["include_documentation"],
                )
                fields = _ok()
            except ApiError as failure:
                fields = failure.as_fields()
            results.append(
                {
                    **fields,
                    "resource_type": resource_type,
                    "resource_name": resource_name,
                    "configs": configs,
                }
            )
        return Response({"throttle_time_ms": 0, "results": results})
