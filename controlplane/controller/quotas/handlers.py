"""The controller's client quota RPC: AlterClientQuotas turns validated ops into
ClientQuotaRecords (quotas.control). DescribeClientQuotas and the effective quota are reads of
the projection (quotas.describe) and need no controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.quotas.control import alter_client_quotas
from controlplane.controller.result import ControllerResult


def _alter_client_quotas(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = alter_client_quotas(view, payload)
    return ControllerResult(list(records), response)


HANDLERS: Mapping[str, Handler] = {"AlterClientQuotas": _alter_client_quotas}
