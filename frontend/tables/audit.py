"""Rows of the audit trail and of its exports, and their tables as their columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from django.template.defaultfilters import floatformat, truncatechars, urlencode
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from audit.models import AuditEvent, AuditExport
from frontend.tables.columns import Column, Table, badge, dash_if_empty, muted
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


def _time(e: AuditRow) -> SafeString:
    duration = floatformat(e.duration_ms, 1)
    return format_html('{}<div class="muted">{} ms</div>', e.time, duration)


def _client(e: AuditRow) -> SafeString:
    host = dash_if_empty(e.client_host)
    return format_html('{}<div class="muted">{}</div>', dash_if_empty(e.client_id), host)


def _forwarding(e: AuditRow) -> SafeString:
    if not e.forwarded:
        return muted("direct")
    broker = e.forwarding_broker_id
    by_broker = "" if broker is None else format_html("<div>broker {}</div>", broker)
    host = format_html('<div class="muted">{}</div>', e.forwarding_host)
    return format_html("{}{}{}", e.forwarding_principal, by_broker, host)


def _resource(resource: AuditResource) -> SafeString:
    error = badge("danger", resource.error) if resource.error_code else ""
    name = f"{resource.resource_type} {resource.resource_name}"
    return format_html("<div>{}{}</div>", name, format_html(" {}", error) if error else "")


def _resources(e: AuditRow) -> Any:
    return format_html_join("", "{}", ((_resource(r),) for r in e.resources)) or "—"


def _outcome(e: AuditRow) -> SafeString:
    shown = badge(e.badge, e.outcome, testid="audit-outcome")
    return format_html('{}<div class="muted small">HTTP {}</div>', shown, e.http_status)


def _error(e: AuditRow) -> Any:
    if not e.error_code:
        return "—"
    return format_html('{} <span class="muted">({})</span>', e.error, e.error_code)


def _request_id(e: AuditRow) -> Any:
    if not e.request_id:
        return "—"
    url = f"{reverse('frontend:audit-list')}?request_id={urlencode(e.request_id)}"
    shown = truncatechars(e.request_id, 13)
    return format_html('<a href="{}" title="{}">{}</a>', url, e.request_id, shown)


def _offsets(e: AuditRow) -> Any:
    if e.first_offset is None:
        return "—"
    if e.last_offset == e.first_offset:
        return e.first_offset
    return f"{e.first_offset}\N{EN DASH}{e.last_offset}"


AUDIT_COLUMNS = (
    Column("time", "Time (UTC)", _time, css="nowrap small"),
    Column("principal", "Principal", css="mono nowrap", testid="audit-principal"),
    Column("client", "Client", _client, css="mono small", testid="audit-client"),
    Column("forwarding", "Forwarded by", _forwarding, css="mono small", testid="audit-forwarding"),
    Column("api", "API", css="mono", testid="audit-api"),
    Column("resources", "Resources", _resources, css="mono small", testid="audit-resources"),
    Column("outcome", "Outcome", _outcome),
    Column("error", "Error", _error, css="mono small", testid="audit-error"),
    Column("request_id", "Request id", _request_id, css="mono small", testid="audit-request-id"),
    Column("offsets", "Offsets", _offsets, num=True, css="mono small", testid="audit-offsets"),
)


def audit_table(rows: Sequence[AuditRow]) -> Table:
    return Table(
        AUDIT_COLUMNS,
        rows,
        testid="audit-table",
        row_attributes=lambda e: {
            "id": f"audit-{e.id}",
            "data-audit-id": e.id,
            "data-api": e.api,
            "data-outcome": e.outcome,
        },
    )


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


EXPORT_BADGES = {"SUCCEEDED": "ok", "RUNNING": "info", "PENDING": "info", "FAILED": "danger"}


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


def _export_state(x: ExportRow) -> SafeString:
    state = badge(x.badge, x.state, testid="export-state")
    if not x.commit:
        return state
    return format_html('{}<div class="muted small">commit {}</div>', state, x.commit)


def _export_progress(x: ExportRow) -> SafeString:
    if x.under_way:
        percent = floatformat(x.percent, 0)
        eta = "" if x.eta_s is None else f", ETA {floatformat(x.eta_s, 0)} s"
        return format_html(
            '<progress max="100" value="{}" aria-label="Export {} progress">{}%</progress>'
            '<div class="small">{}: {} / {} rows ({}%), {} rows/s{}</div>',
            percent,
            x.id,
            percent,
            x.phase,
            x.rows_done,
            x.rows_total,
            percent,
            floatformat(x.rate, 0),
            eta,
        )
    if x.state == "FAILED":
        return format_html(
            '<span class="offline-text small" data-testid="export-message">{}</span>', x.message
        )
    if x.commit:
        rate = floatformat(x.rate, 0)
        return format_html('<span class="small">{} rows, {} rows/s</span>', x.rows_done, rate)
    return muted("nothing new", css="small")


def _export_rows(x: ExportRow) -> Any:
    return format_html_join("", "<div>{}: {}</div>", x.rows.items()) or "—"


EXPORT_COLUMNS = (
    Column("id", "#", num=True, css="mono"),
    Column("state", "State", _export_state),
    Column("progress", "Progress", _export_progress, testid="export-progress"),
    Column("requested_by", "Requested by", css="mono small"),
    Column("created", "Started (UTC)", css="nowrap small"),
    Column("finished", "Finished (UTC)", lambda x: dash_if_empty(x.finished), css="nowrap small"),
    Column("rows", "Rows", _export_rows, css="small mono"),
)


def export_table(rows: Sequence[ExportRow]) -> Table:
    return Table(
        EXPORT_COLUMNS,
        rows,
        testid="export-table",
        row_attributes=lambda x: {"data-export-id": x.id, "data-state": x.state},
    )


def export_commit_row(commit: dict[str, Any]) -> dict[str, Any]:
    """The latest export commit as the reports page tells it."""
    datasets = commit.get("datasets", {})
    return {
        "commit": commit.get("commit"),
        "committed": format_ms(int(commit.get("committed_ms", 0))),
        "offset": commit.get("watermark", {}).get("metadata_log", {}).get("offset"),
        "rows": {name: part.get("rows", 0) for name, part in datasets.items()},
    }
