"""Delegation tokens: Kafka's DelegationTokenControlManager (create, renew, expire, sweep).

A token's HMAC is HMAC-SHA512 of its id keyed with `delegation.token.secret.key`; it is answered
once, by create, and never stored: renew and expire find a token by recomputing the HMACs of
the live tokens. With no secret every token RPC answers DELEGATION_TOKEN_AUTH_DISABLED.
Principals are "Type:name" strings, as on every record; only "User" may own or renew a token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.config_schema import ConfigView
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import (
    DelegationTokenRecord,
    Record,
    RemoveDelegationTokenRecord,
)

USER_TYPE = "User"
SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME_KEY = "delegation.token.max.lifetime.ms"
EXPIRY_TIME_KEY = "delegation.token.expiry.time.ms"


def split_principal(principal: str) -> tuple[str, str]:
    principal_type, _, name = principal.partition(":")
    return principal_type, name


def join_principal(principal_type: str, name: str) -> str:
    return f"{principal_type}:{name}"


def compute_hmac(secret: str, token_id: str) -> bytes:
    """Kafka's DelegationTokenManager.createHmac: HmacSHA512 over the UTF-8 token id."""
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


def encode_hmac(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def secret_of(configs: ConfigView) -> str:
    """The secret key, or DELEGATION_TOKEN_AUTH_DISABLED when none is set."""
    secret = configs.broker_value(SECRET_KEY)
    if not secret:
        raise ApiError(
            Errors.DELEGATION_TOKEN_AUTH_DISABLED, "Delegation Token feature is not enabled."
        )
    return str(secret)


def _user_principal(principal_type: Any, name: Any, what: str) -> str:
    if principal_type != USER_TYPE:
        raise ApiError(
            Errors.INVALID_PRINCIPAL_TYPE, f"The {what} principal type must be {USER_TYPE}."
        )
    if not isinstance(name, str) or not name:
        raise ApiError(Errors.INVALID_REQUEST, f"The {what} principal name must not be empty.")
    return join_principal(USER_TYPE, name)


def create_token(
    view: MetadataDelta,
    payload: Mapping[str, Any],
    configs: ConfigView,
    now_ms: int,
    new_token_id: Callable[[], str],
) -> tuple[list[Record], dict[str, Any]]:
    secret = secret_of(configs)
    requester = str(payload["requester"])
    owner_type, owner_name = (
        payload.get("owner_principal_type"),
        payload.get("owner_principal_name"),
    )
    if not owner_name:  # Kafka: no owner name (null or empty, as its Java admin sends) is
        owner_type, owner_name = split_principal(requester)  # the requester
    owner = _user_principal(owner_type, owner_name, "owner")
    renewers = tuple(
        _user_principal(r.get("principal_type"), r.get("principal_name"), "renewer")
        for r in payload.get("renewers", ())
    )
    max_lifetime: int = configs.broker_value(MAX_LIFETIME_KEY)
    requested = int(payload.get("max_lifetime_ms", -1))
    if requested > 0:
        max_lifetime = min(requested, max_lifetime)
    max_timestamp = now_ms + max_lifetime
    expiry = min(max_timestamp, now_ms + int(configs.broker_value(EXPIRY_TIME_KEY)))
    token_id = new_token_id()
    record = DelegationTokenRecord(
        token_id=token_id,
        owner=owner,
        requester=requester,
        renewers=renewers,
        issue_timestamp=now_ms,
        max_timestamp=max_timestamp,
        expiration_timestamp=expiry,
    )
    return [record], {
        **created_response(record),
        "hmac": encode_hmac(compute_hmac(secret, token_id)),
    }


def created_response(record: DelegationTokenRecord) -> dict[str, Any]:
    owner_type, owner_name = split_principal(record.owner)
    requester_type, requester_name = split_principal(record.requester)
    return {
        "error_code": int(Errors.NONE),
        "error_message": None,
        "principal_type": owner_type,
        "principal_name": owner_name,
        "token_requester_principal_type": requester_type,
        "token_requester_principal_name": requester_name,
        "issue_timestamp_ms": record.issue_timestamp,
        "expiry_timestamp_ms": record.expiration_timestamp,
        "max_timestamp_ms": record.max_timestamp,
        "token_id": record.token_id,
        "hmac": None,
    }


def find_by_hmac(view: MetadataDelta, secret: str, encoded: Any) -> DelegationTokenRecord:
    not_found = ApiError(Errors.DELEGATION_TOKEN_NOT_FOUND, "Delegation token not found.")
    if not isinstance(encoded, str):
        raise not_found
    try:
        wanted = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise not_found from None
    for token in view.all_delegation_tokens():
        if hmac.compare_digest(compute_hmac(secret, token.token_id), wanted):
            return token
    raise not_found


def _live_token_of(
    view: MetadataDelta, payload: Mapping[str, Any], configs: ConfigView, now_ms: int
) -> DelegationTokenRecord:
    """Kafka's checks, in its order: not found, expired, then owner or renewer."""
    token = find_by_hmac(view, secret_of(configs), payload.get("hmac"))
    if token.max_timestamp < now_ms or token.expiration_timestamp < now_ms:
        raise ApiError(Errors.DELEGATION_TOKEN_EXPIRED, "Delegation token has expired.")
    requester = str(payload["requester"])
    if requester != token.owner and requester not in token.renewers:
        raise ApiError(
            Errors.DELEGATION_TOKEN_OWNER_MISMATCH,
            "Only the owner or a renewer of the token may renew or expire it.",
        )
    return token


def _expiry_response(expiry: int) -> dict[str, Any]:
    return {"error_code": int(Errors.NONE), "error_message": None, "expiry_timestamp_ms": expiry}


def renew_token(
    view: MetadataDelta, payload: Mapping[str, Any], configs: ConfigView, now_ms: int
) -> tuple[list[Record], dict[str, Any]]:
    token = _live_token_of(view, payload, configs, now_ms)
    period = int(payload.get("renew_period_ms", -1))
    if period < 0:
        period = int(configs.broker_value(EXPIRY_TIME_KEY))
    expiry = min(token.max_timestamp, now_ms + period)
    renewed = DelegationTokenRecord(
        token_id=token.token_id,
        owner=token.owner,
        requester=token.requester,
        renewers=token.renewers,
        issue_timestamp=token.issue_timestamp,
        max_timestamp=token.max_timestamp,
        expiration_timestamp=expiry,
    )
    return [renewed], _expiry_response(expiry)


def expire_token(
    view: MetadataDelta, payload: Mapping[str, Any], configs: ConfigView, now_ms: int
) -> tuple[list[Record], dict[str, Any]]:
    token = _live_token_of(view, payload, configs, now_ms)
    period = int(payload.get("expiry_time_period_ms", -1))
    if period < 0:
        return [RemoveDelegationTokenRecord(token.token_id)], _expiry_response(now_ms)
    expiry = min(token.max_timestamp, now_ms + period)
    changed = DelegationTokenRecord(
        token_id=token.token_id,
        owner=token.owner,
        requester=token.requester,
        renewers=token.renewers,
        issue_timestamp=token.issue_timestamp,
        max_timestamp=token.max_timestamp,
        expiration_timestamp=expiry,
    )
    return [changed], _expiry_response(expiry)


def sweep_expired(view: MetadataDelta, now_ms: int) -> tuple[list[Record], dict[str, Any]]:
    """Kafka's sweepExpiredDelegationTokens: remove every token whose expiry has passed."""
    removed: list[Record] = [
        RemoveDelegationTokenRecord(token.token_id)
        for token in sorted(view.all_delegation_tokens(), key=lambda t: t.token_id)
        if token.expiration_timestamp < now_ms
    ]
    return removed, {"error_code": int(Errors.NONE), "removed": len(removed)}
