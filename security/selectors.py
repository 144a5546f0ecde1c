"""ACL reads: the ACL projection (cp_acl), filtered as Kafka's DescribeAcls filters."""

from __future__ import annotations

from typing import Any

from controlplane.controller.acls import control as acls
from controlplane.controller.acls.bindings import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.records import AccessControlEntryRecord
from controlplane.models import Acl

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


def acls_describe(*, acl_filter: AclBindingFilter) -> list[dict[str, Any]]:
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
