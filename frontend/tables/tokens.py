"""Rows of the delegation token pages; an HMAC is never part of a row."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from frontend.tables.common import format_ms


@dataclasses.dataclass(frozen=True, slots=True)
class TokenRow:
    token_id: str
    owner: str
    requester: str
    renewers: list[str]
    issued: str
    expires: str
    max_time: str
    expired: bool


def _principal(kind: Any, name: Any) -> str:
    return f"{kind}:{name}"


def _timestamp(token: Mapping[str, Any], name: str) -> int:
    """DescribeDelegationToken says `expiry_timestamp`, CreateDelegationToken
    `expiry_timestamp_ms` (as Kafka's responses do)."""
    value = token.get(name, token.get(f"{name}_ms", -1))
    return int(value) if isinstance(value, int) else -1


def token_rows(tokens: Iterable[Mapping[str, Any]], now_ms: int) -> list[TokenRow]:
    """Rows from DescribeDelegationToken's `tokens` or a CreateDelegationToken answer; an
    HMAC is never part of a row."""
    return [
        TokenRow(
            token_id=str(token["token_id"]),
            owner=_principal(token["principal_type"], token["principal_name"]),
            requester=_principal(
                token["token_requester_principal_type"], token["token_requester_principal_name"]
            ),
            renewers=[
                _principal(r["principal_type"], r["principal_name"])
                for r in token.get("renewers") or []
            ],
            issued=format_ms(_timestamp(token, "issue_timestamp")),
            expires=format_ms(_timestamp(token, "expiry_timestamp")),
            max_time=format_ms(_timestamp(token, "max_timestamp")),
            expired=_timestamp(token, "expiry_timestamp") < now_ms,
        )
        for token in tokens
    ]
