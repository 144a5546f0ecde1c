"""Logging in and out of the UI."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import rotate_token
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from controlplane.authentication import SESSION_KEY
from controlplane.authz import client_host
from controlplane.login_failures import FAILED_LOGINS, UI_DOOR
from controlplane.principals import session_login
from frontend.forms.auth import PRINCIPAL_PREFIX, LoginForm
from frontend.views.base import HOME_URL


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
    host = client_host(request)
    name = str(request.POST.get("name", "")).strip().removeprefix(PRINCIPAL_PREFIX)
    if request.method == "POST":
        wait_s = FAILED_LOGINS.retry_after_s(door=UI_DOOR, host=host, name=name)
        if wait_s > 0:  # refused before the token is looked at
            FAILED_LOGINS.failed(host=host, name=name, door=UI_DOOR, why="throttled")
            response = render(
                request,
                "frontend/login.html",
                {
                    "form": LoginForm(),
                    "next": next_url,
                    "title": "Log in",
                    "throttled": f"Too many failed logins; try again in {wait_s:.0f} s.",
                },
                status=429,
            )
            response["Retry-After"] = str(max(1, round(wait_s)))
            return response
    if request.method == "POST" and form.is_valid():
        principal = form.principal
        assert principal is not None
        if request.session.get(SESSION_KEY) not in (None, principal.id):
            request.session.flush()
        else:
            request.session.cycle_key()
        session_login(request.session, principal)
        rotate_token(request)
        return HttpResponseRedirect(next_url or HOME_URL)
    if request.method == "POST":
        FAILED_LOGINS.failed(host=host, name=name, door=UI_DOOR, why="invalid name or token")
    return render(
        request,
        "frontend/login.html",
        {"form": form, "next": next_url, "title": "Log in"},
    )


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    request.session.flush()
    return HttpResponseRedirect(settings.LOGIN_URL)
