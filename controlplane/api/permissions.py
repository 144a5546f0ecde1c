"""Kafka ACL checks as DRF permissions; refusals answer CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from controlplane.api.context import principal_of
from controlplane.authz import client_host, refuse_broker_on_public_write, require_cluster
from controlplane.controller.acls.bindings import AclOperation


class IsPrincipal(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user is not None and getattr(request.user, "is_authenticated", False))


class _ClusterOperation(IsPrincipal):
    operation: AclOperation
    public_write = False

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        principal = principal_of(request)
        if self.public_write:
            refuse_broker_on_public_write(principal)
        require_cluster(principal, host=client_host(request), operation=self.operation)
        return True


class ClusterActionPermission(_ClusterOperation):
    """Brokers' internal API: CLUSTER_ACTION on CLUSTER."""

    operation = AclOperation.CLUSTER_ACTION


class ClusterAlterPermission(_ClusterOperation):
    """Public admin writes on the cluster: ALTER on CLUSTER, never from a broker principal."""

    operation = AclOperation.ALTER
    public_write = True


class ClusterDescribePermission(_ClusterOperation):
    operation = AclOperation.DESCRIBE
