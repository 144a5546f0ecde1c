"""CreateAcls, DescribeAcls and DeleteAcls over HTTP (Kafka's AclApis / ControllerApis).

Writes need ALTER on CLUSTER (and are refused to broker principals) and go to the active
controller; DescribeAcls needs DESCRIBE on CLUSTER and reads the ACL projection (cp_acl).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from audit.api.mixins import AuditedRpcView
from controlplane.api import acl_serializers as s
from controlplane.api.context import request_context
from controlplane.api.errors import error_body
from controlplane.api.permissions import ClusterAlterPermission, ClusterDescribePermission
from controlplane.controller.acls import control as acls
from controlplane.controller.acls.bindings import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.errors import Errors
from controlplane.controller.records import AccessControlEntryRecord
from controlplane.models import Acl
from controlplane.services import controller_call

ACL_FIELDS = (
    "id",
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


class CreateAclsView(AuditedRpcView):
    permission_classes = [ClusterAlterPermission]

    @extend_schema(request=s.CreateAclsSerializer)
    def post(self, request: Request) -> Response:
        body = s.CreateAclsSerializer.validated(request.data)
        creations = [s.as_names(c) for c in body["creations"]]
        results: list[Any] = []
        if creations:
            response = controller_call(
                api="CreateAcls",
                payload={"creations": creations},
                context=request_context(request),
            )
            results = response["results"]
        return Response({"throttle_time_ms": 0, "results": results})


class DeleteAclsView(AuditedRpcView):
    permission_classes = [ClusterAlterPermission]

    @extend_schema(request=s.DeleteAclsSerializer)
    def post(self, request: Request) -> Response:
        body = s.DeleteAclsSerializer.validated(request.data)
        filters = [s.as_names(f) for f in body["filters"]]
        results: list[Any] = []
        if filters:
            response = controller_call(
                api="DeleteAcls", payload={"filters": filters}, context=request_context(request)
            )
            results = response["filter_results"]
        return Response({"throttle_time_ms": 0, "filter_results": results})


class DescribeAclsView(AuditedRpcView):
    permission_classes = [ClusterDescribePermission]

    @extend_schema(request=s.DescribeAclsSerializer)
    def post(self, request: Request) -> Response:
        body = s.DescribeAclsSerializer.validated(request.data)
        acl_filter = AclBindingFilter(**body)
        problem = acls.filter_validation_error(acl_filter)
        if problem is not None:
            return Response(
                {
                    "throttle_time_ms": 0,
                    **error_body(Errors.INVALID_REQUEST, problem),
                    "resources": [],
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "error_message": None,
                "resources": describe_acls(acl_filter),
            }
        )


def describe_acls(acl_filter: AclBindingFilter) -> list[dict[str, Any]]:
    """The ACLs of the projection that pass the filter, grouped by resource pattern (Kafka's
    DescribeAclsResponse), in the projection's order."""
    resources: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for binding in _candidates(acl_filter):
        if not acl_filter.matches(binding):
            continue
        key = (binding.resource_type.name, binding.resource_name, binding.pattern_type.name)
        resources.setdefault(key, []).append(
            {
                "principal": binding.principal,
                "host": binding.host,
                "operation": binding.operation.name,
                "permission_type": binding.permission_type.name,
            }
        )
    return [
        {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": entries}
        for (rt, name, pt), entries in resources.items()
    ]


def _candidates(acl_filter: AclBindingFilter) -> list[AclBinding]:
    """The projection's ACLs, narrowed in SQL by the filter's exact fields; the filter itself
    (with its LITERAL / PREFIXED / MATCH rules) decides."""
    rows = Acl.objects.all()
    resource_type, operation = acl_filter.resource_type, acl_filter.operation
    permission_type = acl_filter.permission_type
    if resource_type is not None and resource_type is not ResourceType.ANY:
        rows = rows.filter(resource_type=resource_type.name)
    if acl_filter.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        rows = rows.filter(pattern_type=acl_filter.pattern_type.name)
    if acl_filter.pattern_type is not PatternType.MATCH and acl_filter.resource_name is not None:
        rows = rows.filter(resource_name=acl_filter.resource_name)
    if acl_filter.principal is not None:
        rows = rows.filter(principal=acl_filter.principal)
    if acl_filter.host is not None:
        rows = rows.filter(host=acl_filter.host)
    if operation is not None and operation is not AclOperation.ANY:
        rows = rows.filter(operation=operation.name)
    if permission_type is not None and permission_type is not AclPermissionType.ANY:
        rows = rows.filter(permission_type=permission_type.name)
    return [
        acls.binding_of(AccessControlEntryRecord(*row)) for row in rows.values_list(*ACL_FIELDS)
    ]
