"""Rows of the audit trail."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from audit.models import AuditEvent, AuditExport
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


@dataclasses.dataclass(frozen=True, slots=True)
class ExportRow:
    id: int
    state: str
    badge: str
    requested_by: str
    created: str
    finished: str
    phase: str
    percent: float
    rows_done: int
    rows_total: int
    rate: float
    eta_s: float | None
    commit: int | None
    rows: dict[str, int]
    message: str

    @property
    def under_way(self) -> bool:
        return self.state in ("PENDING", "RUNNING")


EXPORT_BADGES = {"SUCCEEDED": "ok", "RUNNING": "warn", "PENDING": "muted", "FAILED": "danger"}


def export_rows(exports: Iterable[AuditExport]) -> list[ExportRow]:
    rows = []
    for export in exports:
        progress: dict[str, Any] = export.progress or {}
        rows.append(
            ExportRow(
                id=export.pk,
                state=export.state,
                badge=EXPORT_BADGES.get(export.state, "muted"),
                requested_by=export.requested_by,
                created=format_ms(export.created_ms),
                finished=format_ms(export.finished_ms) if export.finished_ms else "",
                phase=str(progress.get("phase", "")),
                percent=float(progress.get("percent") or 0.0),
                rows_done=int(progress.get("rows_done") or 0),
                rows_total=int(progress.get("rows_total") or 0),
                rate=float(progress.get("rows_per_second") or 0.0),
                eta_s=progress.get("eta_seconds"),
                commit=export.commit,
                rows=dict(export.rows or {}),
                message=export.message,
            )
        )
    return rows


def export_commit_row(commit: dict[str, Any]) -> dict[str, Any]:
    """The latest export commit as the reports page tells it."""
    datasets = commit.get("datasets", {})
    return {
        "commit": commit.get("commit"),
        "committed": format_ms(int(commit.get("committed_ms", 0))),
        "offset": commit.get("watermark", {}).get("metadata_log", {}).get("offset"),
        "rows": {name: part.get("rows", 0) for name, part in datasets.items()},
    }
