"""Rows of the audit trail."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from audit.models import AuditEvent
from frontend.tables.common import error_code_of, error_name, format_ms

OUTCOME_BADGES = {"SUCCESS": "ok", "PARTIAL": "warn", "FAILED": "danger", "DENIED": "danger"}


@dataclasses.dataclass(frozen=True, slots=True)
class AuditResource:
    resource_type: str
    resource_name: str
    error_code: int

    @property
    def error(self) -> str:
        return error_name(self.error_code) if self.error_code else ""


@dataclasses.dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    time: str
    principal: str
    client_id: str
    client_host: str
    forwarding_principal: str
    forwarding_host: str
    forwarding_broker_id: int | None
    api: str
    resources: list[AuditResource]
    outcome: str
    badge: str
    error_code: int
    error: str
    http_status: int
    request_id: str
    first_offset: int | None
    last_offset: int | None
    duration_ms: float

    @property
    def forwarded(self) -> bool:
        return bool(self.forwarding_principal)


def _audit_resources(value: Any) -> list[AuditResource]:
    items = value if isinstance(value, list) else []
    return [
        AuditResource(
            resource_type=str(item.get("resource_type") or ""),
            resource_name=str(item.get("resource_name") or ""),
            error_code=error_code_of(item),
        )
        for item in items
        if isinstance(item, dict)
    ]


def audit_rows(events: Iterable[AuditEvent]) -> list[AuditRow]:
    return [
        AuditRow(
            id=event.pk,
            time=format_ms(event.time_ms),
            principal=event.principal,
            client_id=event.client_id,
            client_host=event.client_host,
            forwarding_principal=event.forwarding_principal,
            forwarding_host=event.forwarding_host,
            forwarding_broker_id=event.forwarding_broker_id,
            api=event.api,
            resources=_audit_resources(event.resources),
            outcome=event.outcome,
            badge=OUTCOME_BADGES.get(event.outcome, "muted"),
            error_code=event.error_code,
            error=error_name(event.error_code) if event.error_code else "",
            http_status=event.http_status,
            request_id=event.request_id,
            first_offset=event.first_offset,
            last_offset=event.last_offset,
            duration_ms=event.duration_ms,
        )
        for event in events
    ]
