"""Rows of the delegation token pages (an HMAC is never part of a row), and their table as its
columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.template.defaultfilters import urlencode
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from frontend.tables.columns import Column, Table, badge, dash_if_empty, joined
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


def _expires(t: TokenRow) -> Any:
    return format_html("{} {}", t.expires, badge("danger", "expired")) if t.expired else t.expires


def _expire_link(t: TokenRow) -> SafeString:
    return format_html(
        '<a class="danger-link" href="{}?token_id={}" data-testid="token-expire"'
        ' aria-label="Expire token {}">Expire…</a>',
        reverse("frontend:token-expire"),
        urlencode(t.token_id),
        t.token_id,
    )


TOKEN_COLUMNS = (
    Column("token_id", "Token id", css="mono small"),
    Column("owner", "Owner", css="mono"),
    Column("requester", "Requester", css="mono"),
    Column("renewers", "Renewers", lambda t: dash_if_empty(joined(t.renewers)), css="mono"),
    Column("issued", "Issued (UTC)", css="nowrap"),
    Column("expires", "Expires (UTC)", _expires, css="nowrap", testid="token-expiry"),
    Column("max_time", "Max (UTC)", css="nowrap"),
    Column(
        "actions",
        mark_safe('<span class="visually-hidden">Actions</span>'),
        _expire_link,
        css="nowrap",
    ),
)


def token_table(rows: Sequence[TokenRow]) -> Table:
    return Table(
        TOKEN_COLUMNS,
        rows,
        testid="token-table",
        row_attributes=lambda t: {
            "data-token-id": t.token_id,
            "class": "expired" if t.expired else None,
        },
    )
