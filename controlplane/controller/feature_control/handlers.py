"""The features and quorum handlers: UpdateFeatures (an admin RPC) and UpdateRaftVoter (the
controller's own listener, reporting where it is)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.feature_control.control import feature_updates, update_features
from controlplane.controller.feature_control.voters import update_voter
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult


def _update_features(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return update_features(
        view,
        feature_updates(payload),
        validate_only=bool(payload.get("validate_only", False)),
        controller_id=int(payload.get("controller_id", -1)),
    )


HANDLERS: dict[str, Handler] = {
    "UpdateFeatures": _update_features,
    "UpdateRaftVoter": update_voter,
}
STATE_IDEMPOTENT_APIS = frozenset({"UpdateRaftVoter"})
