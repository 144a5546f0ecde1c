"""The audit trail's page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from audit.filtersets import AuditEventFilterSet
from audit.selectors import audit_event_list
from frontend.forms.audit import AUDIT_APIS, AUDIT_OUTCOMES
from frontend.tables.audit import audit_rows
from frontend.views.base import paginate, principal_required, render_admin

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
            "events": audit_rows(page.object_list),
            "page_obj": page,
            "filters": filters,
            "filtered": any(filters.values()),
            "filter_errors": filterset.errors if filterset.is_bound else {},
            "apis": AUDIT_APIS,
            "outcomes": AUDIT_OUTCOMES,
        },
    )
