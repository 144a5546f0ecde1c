"""The controller's ACL RPCs (Kafka's AclControlManager behind ControllerApis).

``CreateAcls``: ``{creations:[{resource_type, resource_name, pattern_type, principal, host,
operation, permission_type}]}`` → ``{results:[{error_code, error_message}]}``. Each creation is
validated on its own; an ACL identical to an existing one is a no-op.

``DeleteAcls``: ``{filters:[{resource_type_filter, resource_name_filter, pattern_type_filter,
principal_filter, host_filter, operation, permission_type}]}`` → ``{filter_results:[{error_code,
error_message, matching_acls:[{error_code, error_message, resource_type, resource_name,
pattern_type, principal, host, operation, permission_type}]}]}``. Each filter removes every ACL
it matches (RemoveAccessControlEntryRecord); a filter with an UNKNOWN value answers
INVALID_REQUEST; an ACL matched by several filters is removed once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.acls.control import create_acls, delete_acls
from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult


def _create_acls(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return create_acls(view, payload["creations"], new_acl_id=env.new_uuid)


def _delete_acls(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return delete_acls(view, payload["filters"])


HANDLERS: Mapping[str, Handler] = {
    "CreateAcls": _create_acls,
    "DeleteAcls": _delete_acls,
}
