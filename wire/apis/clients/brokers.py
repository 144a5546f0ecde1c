"""UnregisterBroker (KIP-631) on the wire: the REST API's RPC, translated."""

from __future__ import annotations

from typing import Any

from kio.index import load_response_schema

from controlplane.rpc import REGISTRY, execute
from wire.apis.base import BOTH_ROLES, WireRequest, wire_api
from wire.convert import from_data

UNREGISTER_BROKER = 64


@wire_api("UnregisterBroker", UNREGISTER_BROKER, (0, 0), roles=BOTH_ROLES)
def unregister_broker(request: WireRequest) -> Any:
    answer = execute(
        REGISTRY["UnregisterBroker"], {"broker_id": int(request.body.broker_id)}, request.caller
    )
    data = answer.data
    return from_data(
        load_response_schema(UNREGISTER_BROKER, request.api_version),
        {
            "throttle_time": data.get("throttle_time_ms", 0),
            "error_code": data.get("error_code", 0),
            "error_message": data.get("error_message"),
        },
    )
