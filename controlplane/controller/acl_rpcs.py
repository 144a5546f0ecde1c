"""Controller handlers for ACL writes (Kafka's AclControlManager behind ControllerApis).

``DeleteAcls``: ``{filters:[{resource_type_filter, resource_name_filter, pattern_type_filter,
principal_filter, host_filter, operation, permission_type}]}`` → ``{filter_results:[{error_code,
error_message, matching_acls:[{error_code, error_message, resource_type, resource_name,
pattern_type, principal, host, operation, permission_type}]}]}``. Each filter removes every ACL
it matches (RemoveAccessControlEntryRecord); a filter with an UNKNOWN value answers
INVALID_REQUEST; an ACL matched by several filters is removed once. ``CreateAcls`` is registered
in dispatch.py; both build on controlplane.controller.acls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller import acls
from controlplane.controller.dispatch import ControllerEnv, handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult


@handler("DeleteAcls")
def _delete_acls(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return acls.delete_acls(view, payload["filters"])
