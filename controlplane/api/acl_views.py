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
from controlplane.controller import acls
from controlplane.controller.acl import AclBindingFilter
from controlplane.controller.errors import Errors
from controlplane.selectors import acls_describe
from controlplane.services import controller_call


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
                "resources": acls_describe(acl_filter=acl_filter),
            }
        )
