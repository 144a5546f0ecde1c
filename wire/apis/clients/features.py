"""UpdateFeatures (KIP-584) on the wire: `kafka-features upgrade|downgrade|disable`, through a
broker (forwarded in an Envelope) or straight to a controller listener (`--bootstrap-controller`).
The REST API's RPC, translated: v0's AllowDowngrade is a safe downgrade (Kafka's
UpdateFeaturesRequest.getFeature); v2 answers no per-feature results, as Kafka's controller."""

from __future__ import annotations

from typing import Any

from wire.apis.base import BOTH_ROLES, WireRequest, wire_api
from wire.apis.common import respond, run_rpc

UPDATE_FEATURES = 57
UPGRADE, SAFE_DOWNGRADE = 1, 2


def _update(item: Any, version: int) -> dict[str, Any]:
    if version == 0:
        kind = SAFE_DOWNGRADE if bool(item.allow_downgrade) else UPGRADE
    else:
        kind = int(item.upgrade_type)
    return {
        "feature": item.feature,
        "max_version_level": int(item.max_version_level),
        "upgrade_type": kind,
    }


@wire_api("UpdateFeatures", UPDATE_FEATURES, (0, 2), roles=BOTH_ROLES)
def update_features(request: WireRequest) -> Any:
    body = request.body
    version = request.api_version
    answered = run_rpc(
        "UpdateFeatures",
        {
            "timeout_ms": int(body.timeout.total_seconds() * 1000),
            "feature_updates": [_update(item, version) for item in body.feature_updates],
            "validate_only": bool(getattr(body, "validate_only", False)),
        },
        request,
    )
    data = answered.data
    results = [] if version >= 2 else data.get("results", [])
    if not answered.ok and version < 2:
        results = [
            {"feature": item.feature, **answered.error_fields()} for item in body.feature_updates
        ]
    return respond(
        request,
        {
            "throttle_time_ms": data.get("throttle_time_ms", 0),
            "error_code": data.get("error_code", answered.error_code),
            "error_message": data.get("error_message", answered.error_message),
            "results": results,
        },
    )
