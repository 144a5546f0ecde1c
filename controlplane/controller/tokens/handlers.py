"""The controller's delegation token RPCs: create, renew and expire write DelegationTokenRecord /
RemoveDelegationTokenRecord (tokens.control); the hourly ExpireDelegationTokens sweep removes
expired tokens. Describe is a read of the projection (tokens.describe) and needs no controller.
The payloads carry the requester principal ("User:x").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import (
    DelegationTokenRecord,
    Record,
    RemoveDelegationTokenRecord,
)
from controlplane.controller.result import ControllerResult
from controlplane.controller.tokens.control import (
    create_token,
    expire_token,
    renew_token,
    sweep_expired,
)


def _create_delegation_token(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = create_token(
        view, payload, env.configs(view), env.now_ms, new_token_id=env.new_uuid
    )
    return ControllerResult(records, response)


def _renew_delegation_token(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = renew_token(view, payload, env.configs(view), env.now_ms)
    return ControllerResult(records, response, notes=_token_named(records))


def _expire_delegation_token(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = expire_token(view, payload, env.configs(view), env.now_ms)
    return ControllerResult(records, response, notes=_token_named(records))


TOKEN_RECORDS = (DelegationTokenRecord, RemoveDelegationTokenRecord)


def _token_named(records: list[Record]) -> dict[str, Any]:
    """Renew and expire name the token by its HMAC, and Kafka's response names no token: the
    audit trail learns its id from this note."""
    token_ids = [r.token_id for r in records if isinstance(r, TOKEN_RECORDS)]
    return {"token_id": token_ids[0]} if token_ids else {}


def _expire_delegation_tokens(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = sweep_expired(view, env.now_ms)
    return ControllerResult(records, response)


HANDLERS: Mapping[str, Handler] = {
    "CreateDelegationToken": _create_delegation_token,
    "RenewDelegationToken": _renew_delegation_token,
    "ExpireDelegationToken": _expire_delegation_token,
    "ExpireDelegationTokens": _expire_delegation_tokens,
}
# Retries of these are naturally idempotent: their outcome follows from state alone.
STATE_IDEMPOTENT_APIS = frozenset({"ExpireDelegationTokens"})
