"""The browser admin UI: server-rendered pages whose inner fragment refreshes itself.

Every page is `frontend/page.html` around one fragment template; `?partial=1` answers the
fragment alone (with the `X-UI-Fragment` header), which `ui.js` swaps in every 2 s.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import rotate_token
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from brokers.selectors import broker_list, broker_records, broker_sessions
from controlplane.authentication import SESSION_KEY
from controlplane.authz import require_cluster
from controlplane.controller.acl import AclOperation
from controlplane.controller.errors import ApiError
from controlplane.lease import now_ms
from controlplane.principals import AuthenticatedPrincipal, principal_by_id
from controlplane.selectors import cluster_summary
from frontend.forms import LoginForm
from frontend.tables import STATE_BADGES, broker_row, broker_rows, record_rows

HOME_URL = "/ui/"
PARTIAL_PARAM = "partial"
FRAGMENT_HEADER = "X-UI-Fragment"
RECORDS_LIMIT = 100

View = Callable[..., HttpResponse]


def is_partial(request: HttpRequest) -> bool:
    return request.GET.get(PARTIAL_PARAM) == "1"


def client_host(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "")


def session_principal(request: HttpRequest) -> AuthenticatedPrincipal | None:
    principal_id = request.session.get(SESSION_KEY)
    if not isinstance(principal_id, int):
        return None
    return principal_by_id(principal_id)


def render_page(
    request: HttpRequest,
    *,
    title: str,
    fragment: str,
    section: str = "",
    context: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The whole page, or with `?partial=1` only its fragment."""
    full_context = {
        **(context or {}),
        "title": title,
        "section": section,
        "fragment_template": fragment,
        "principal": getattr(request, "principal", None),
        "rendered_at": dt.datetime.now(tz=dt.UTC),
    }
    if is_partial(request):
        response = render(request, fragment, full_context, status=status)
        response[FRAGMENT_HEADER] = "1"
        return response
    return render(request, "frontend/page.html", full_context, status=status)


def principal_required(view: View) -> View:
    """A logged-in principal allowed DESCRIBE on the cluster; login redirect or 403 otherwise."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        principal = session_principal(request)
        if principal is None:
            if is_partial(request):
                return HttpResponse("Login required.", status=401, content_type="text/plain")
            return redirect_to_login(request.get_full_path(), login_url=settings.LOGIN_URL)
        request.principal = principal  # type: ignore[attr-defined]
        try:
            require_cluster(principal, host=client_host(request), operation=AclOperation.DESCRIBE)
        except ApiError as error:
            return render_page(
                request,
                title="Not authorized",
                fragment="frontend/partials/forbidden.html",
                context={"message": error.message},
                status=403,
            )
        return view(request, *args, **kwargs)

    return never_cache(wrapped)


# --- login / logout -------------------------------------------------------------------------
def _safe_next(request: HttpRequest, candidate: str) -> str:
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return ""


@sensitive_post_parameters("token")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request, request.POST.get("next") or request.GET.get("next") or "")
    form = LoginForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        principal = form.principal
        assert principal is not None
        if request.session.get(SESSION_KEY) not in (None, principal.id):
            request.session.flush()
        else:
            request.session.cycle_key()
        request.session[SESSION_KEY] = principal.id
        rotate_token(request)
        return HttpResponseRedirect(next_url or HOME_URL)
    return render(
        request,
        "frontend/login.html",
        {"form": form, "next": next_url, "title": "Log in"},
    )


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    request.session.flush()
    return HttpResponseRedirect(settings.LOGIN_URL)


# --- pages ----------------------------------------------------------------------------------
@principal_required
def overview_view(request: HttpRequest) -> HttpResponse:
    summary = cluster_summary()
    states = [
        {"state": state, "count": count, "badge": STATE_BADGES.get(state, "muted")}
        for state, count in summary["broker_states"].items()
    ]
    pods = [{"pod": pod, "count": count} for pod, count in summary["broker_pods"].items()]
    return render_page(
        request,
        title="Cluster overview",
        section="overview",
        fragment="frontend/partials/overview.html",
        context={
            "summary": summary,
            "states": states,
            "pods": pods,
            "broker_total": sum(summary["broker_pods"].values()),
        },
    )


@principal_required
def broker_list_view(request: HttpRequest) -> HttpResponse:
    sessions = broker_sessions()
    rows = broker_rows(broker_list(), sessions, now_ms())
    return render_page(
        request,
        title="Brokers",
        section="brokers",
        fragment="frontend/partials/broker_list.html",
        context={"brokers": rows},
    )


@principal_required
def broker_detail_view(request: HttpRequest, broker_id: int) -> HttpResponse:
    broker = broker_list().filter(broker_id=broker_id).first()
    if broker is None:
        return render_page(
            request,
            title="Broker not found",
            section="brokers",
            fragment="frontend/partials/not_found.html",
            context={"broker_id": broker_id},
            status=404,
        )
    row = broker_row(broker, broker_sessions(), now_ms())
    records = record_rows(broker_records(broker_id=broker_id, limit=RECORDS_LIMIT))
    return render_page(
        request,
        title=f"Broker {broker_id}",
        section="brokers",
        fragment="frontend/partials/broker_detail.html",
        context={"broker": row, "records": records, "records_limit": RECORDS_LIMIT},
    )
