"""Controller handlers for client quotas (registered with dispatch.handler).

AlterClientQuotas turns validated ops into ClientQuotaRecords (controlplane.controller.quotas);
describe and the effective quota are reads of the projection and need no controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controlplane.controller import quotas
from controlplane.controller.dispatch import handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult

if TYPE_CHECKING:
    from controlplane.controller.dispatch import ControllerEnv


@handler("AlterClientQuotas")
def _alter_client_quotas(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = quotas.alter_client_quotas(view, payload)
    return ControllerResult(list(records), response)
