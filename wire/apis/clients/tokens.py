"""The delegation token RPCs on the wire. The REST bodies name periods and timestamps in
milliseconds (`*_ms`) and carry an HMAC as base64; kio has timedeltas, datetimes and bytes.

A principal that authenticated with a delegation token (the server core marks it
`token_authenticated`) is refused new tokens by the RPC itself; its answer passes through.
No HMAC is ever logged here: it is only converted, and the RPC's audit trail names tokens by id.
"""

from __future__ import annotations

import base64
from typing import Any

from wire.apis.base import BOTH_ROLES, WireRequest, wire_api
from wire.apis.common import respond, run_rpc
from wire.convert import Data, to_data

# Kafka answers -1 for the timestamps of a refused request; kio cannot encode a timestamp
# before the epoch, so the wire answers the epoch (clients read no timestamp of an error).
NO_TIME = 0


def _time(data: Data, field: str) -> int:
    value = data.get(field, NO_TIME)
    return value if isinstance(value, int) and value >= 0 else NO_TIME


def _b64(raw: bytes | None) -> str:
    return base64.b64encode(raw or b"").decode("ascii")


def _raw(encoded: Any) -> bytes:
    return base64.b64decode(encoded) if isinstance(encoded, str) else b""


@wire_api("CreateDelegationToken", 38, (1, 3), roles=BOTH_ROLES)
def create_delegation_token(request: WireRequest) -> Any:
    wire = to_data(request.body)
    body = {
        # v1 and v2 have no owner: the token is the requester's, as the REST default
        "owner_principal_type": wire.get("owner_principal_type"),
        "owner_principal_name": wire.get("owner_principal_name"),
        "renewers": wire["renewers"],
        "max_lifetime_ms": wire["max_lifetime"],
    }
    answered = run_rpc("CreateDelegationToken", body, request)
    data = answered.data if answered.ok else answered.error_fields()
    return respond(
        request,
        {
            **data,
            "issue_timestamp": _time(data, "issue_timestamp_ms"),
            "expiry_timestamp": _time(data, "expiry_timestamp_ms"),
            "max_timestamp": _time(data, "max_timestamp_ms"),
            "hmac": _raw(data.get("hmac")),
        },
    )


def _expiry(name: str, period: str, request: WireRequest) -> Any:
    wire = to_data(request.body)
    body = {"hmac": _b64(wire["hmac"]), f"{period}_ms": wire[period]}
    answered = run_rpc(name, body, request)
    data = answered.data if answered.ok else answered.error_fields()
    return respond(request, {**data, "expiry_timestamp": _time(data, "expiry_timestamp_ms")})


@wire_api("RenewDelegationToken", 39, (1, 2), roles=BOTH_ROLES)
def renew_delegation_token(request: WireRequest) -> Any:
    return _expiry("RenewDelegationToken", "renew_period", request)


@wire_api("ExpireDelegationToken", 40, (1, 2), roles=BOTH_ROLES)
def expire_delegation_token(request: WireRequest) -> Any:
    return _expiry("ExpireDelegationToken", "expiry_time_period", request)


@wire_api("DescribeDelegationToken", 41, (1, 3), roles=BOTH_ROLES)
def describe_delegation_token(request: WireRequest) -> Any:
    wire = to_data(request.body)
    answered = run_rpc("DescribeDelegationToken", {"owners": wire["owners"]}, request)
    if not answered.ok:
        return respond(request, {**answered.error_fields(), "tokens": []})
    tokens: list[Data] = [
        {**t, "hmac": _raw(t.get("hmac"))} for t in answered.data.get("tokens") or ()
    ]
    return respond(request, {**answered.data, "tokens": tokens})
