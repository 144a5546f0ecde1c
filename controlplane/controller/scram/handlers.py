"""The controller's SCRAM RPC: AlterUserScramCredentials writes UserScramCredentialRecord and
RemoveUserScramCredentialRecord (scram.control). DescribeUserScramCredentials is a read of the
projection (scram.describe) and needs no controller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult
from controlplane.controller.scram.control import alter_credentials


def _alter_user_scram_credentials(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = alter_credentials(view, payload)
    return ControllerResult(records, response)


HANDLERS: Mapping[str, Handler] = {
    "AlterUserScramCredentials": _alter_user_scram_credentials,
}
