"""The audit trail's page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from audit.filtersets import AuditEventFilterSet
from audit.reports import ReportError, ReportRequest, audit_report, latest_export
from audit.selectors import audit_event_list, audit_export_list
from audit.spark.catalog import REPORT_NAMES
from audit.spark.times import BadTime, parse_time
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import ApiError
from frontend.forms.audit import AUDIT_APIS, AUDIT_OUTCOMES, REPORT_DESCRIPTIONS
from frontend.tables.audit import (
    audit_rows,
    audit_table,
    export_commit_row,
    export_rows,
    export_table,
)
from frontend.views.base import (
    forbidden,
    login_required,
    may,
    paginate,
    principal_required,
    render_admin,
)
from frontend.writes import audit_export_start

AUDIT_PAGE_SIZE = 50
AUDIT_FILTERS = ("principal", "api", "outcome", "forwarded", "request_id", "resource")


@principal_required
def audit_list_view(request: HttpRequest) -> HttpResponse:
    """The audit trail, newest first, with the API's filters (AuditEventFilterSet): a count
    and a slice per page, whatever the number of events."""
    filterset = AuditEventFilterSet(request.GET or None, queryset=audit_event_list())
    page = paginate(request, filterset.qs, AUDIT_PAGE_SIZE)
    filters = {name: request.GET.get(name, "")[:255] for name in AUDIT_FILTERS}
    return render_admin(
        request,
        title="Audit trail",
        section="audit",
        fragment="frontend/partials/audit_list.html",
        context={
            "events": audit_table(audit_rows(page.object_list)),
            "page_obj": page,
            "filters": filters,
            "filtered": any(filters.values()),
            "filter_errors": filterset.errors if filterset.is_bound else {},
            "apis": AUDIT_APIS,
            "outcomes": AUDIT_OUTCOMES,
        },
    )


# --- the Parquet export and the Spark reports ------------------------------------------------
EXPORTS_SHOWN = 20
# A report's HTML is a document of its own (it works offline: its Chart.js and its data are in
# it), so it runs its inline scripts, but sandboxed: an opaque origin with no access to the
# console's session, loading nothing, framed by nobody.
REPORT_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'unsafe-inline'",
        "style-src 'unsafe-inline'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "sandbox allow-scripts",
    )
)


@principal_required
def audit_export_list_view(request: HttpRequest) -> HttpResponse:
    """Export runs, newest first, with the progress of the one under way (refreshes itself)."""
    return render_admin(
        request,
        title="Audit exports",
        section="audit",
        fragment="frontend/partials/audit_exports.html",
        context={
            "exports": export_table(export_rows(audit_export_list()[:EXPORTS_SHOWN])),
            "path": settings.CP_AUDIT_EXPORT_PATH,
            "interval_s": settings.CP_AUDIT_EXPORT_INTERVAL_SECONDS,
            "may_export": may(request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME),
        },
    )


@require_POST
@login_required
def audit_export_start_view(request: HttpRequest) -> HttpResponse:
    """Start an export (ALTER on the cluster, as the API asks), then follow it on the list."""
    try:
        export = audit_export_start(request)
    except ApiError as error:
        return forbidden(
            request,
            section="audit",
            message=error.message or "",
            requirement="ALTER on the cluster",
        )
    messages.success(request, f"Export {export.pk} to {export.path} is under way.")
    return HttpResponseRedirect(reverse("frontend:audit-export-list"))


@principal_required
def audit_report_list_view(request: HttpRequest) -> HttpResponse:
    """The reports, each with its parameters and its HTML and CSV made from the latest export."""
    try:
        latest: dict[str, Any] | None = latest_export()
    except ReportError:
        latest = None
    return render_admin(
        request,
        title="Audit reports",
        section="audit",
        fragment="frontend/partials/audit_reports.html",
        context={"reports": REPORT_DESCRIPTIONS, "latest": latest and export_commit_row(latest)},
        refresh=False,
    )


PROGRESS_PARAM = "progress"


def report_progress_page(request: HttpRequest, name: str) -> HttpResponse:
    """The page a report opens on, at once: Spark takes 20 s or so the first time, and a blank
    tab for that long looks broken. It shows progress and fetches the report (ui.js), then
    replaces itself with it (made by then, so served from the kept file at once); a problem is
    shown in place. Back from the report returns to the reports list."""
    query = request.GET.copy()
    query.pop(PROGRESS_PARAM, None)
    report_url = f"{reverse('frontend:audit-report', args=[name])}?{query.urlencode()}"
    title = next((r["title"] for r in REPORT_DESCRIPTIONS if r["name"] == name), name)
    return render_admin(
        request,
        title=f"Audit report: {title}",
        section="audit",
        fragment="frontend/partials/audit_report_progress.html",
        context={"name": name, "report_title": title, "report_url": report_url},
        refresh=False,
    )


@principal_required
def audit_report_view(request: HttpRequest, name: str) -> HttpResponse:
    """One report over the latest export, as HTML (its charts) or a CSV download."""
    fmt = request.GET.get("format", "html")
    problem = ""
    if name not in REPORT_NAMES:
        problem = f"No report named {name!r}."
    elif fmt not in ("html", "csv"):
        problem = f"Unknown format {fmt!r}: html or csv."
    times: dict[str, int | None] = {}
    for key in ("from", "to", "at"):
        text = request.GET.get(key, "").strip()
        try:
            times[key] = parse_time(text, name=key) if text else None
        except BadTime as error:
            problem = problem or str(error)
    if not problem and fmt == "html" and request.GET.get(PROGRESS_PARAM) == "1":
        return report_progress_page(request, name)
    if not problem:
        wanted = ReportRequest(name, times["from"], times["to"], times["at"])
        try:
            made = audit_report(wanted, fmt=fmt)
        except ReportError as error:
            problem = str(error)
        else:
            if fmt == "csv":
                response = HttpResponse(made.read_bytes(), content_type="text/csv; charset=utf-8")
                response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
                return response
            response = HttpResponse(made.read_bytes(), content_type="text/html; charset=utf-8")
            response["Content-Security-Policy"] = REPORT_POLICY
            return response
    return render_admin(
        request,
        title="Audit report",
        section="audit",
        fragment="frontend/partials/audit_report_problem.html",
        context={"problem": problem, "name": name},
        status=404 if name not in REPORT_NAMES else 400,
        refresh=False,
    )
