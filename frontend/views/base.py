"""What every page shares: the page and its fragment, the login, the cluster's DESCRIBE, paging,
topic visibility, and the admin pages' plumbing (forms, refusals, a write's errors)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from controlplane.authz import client_host, is_authorized, require_cluster
from controlplane.controller.acls.bindings import AclOperation, ResourceType
from controlplane.controller.errors import ApiError
from controlplane.principals import AuthenticatedPrincipal, session_principal_of
from frontend.tables.common import KafkaProblem
from replicas.selectors import topic_name_list

HOME_URL = "/ui/"
PARTIAL_PARAM = "partial"
FRAGMENT_HEADER = "X-UI-Fragment"
PAGE_PARAM = "page"

View = Callable[..., HttpResponse]


def is_partial(request: HttpRequest) -> bool:
    return request.GET.get(PARTIAL_PARAM) == "1"


def session_principal(request: HttpRequest) -> AuthenticatedPrincipal | None:
    """The logged-in principal, while its key is the one it logged in with."""
    return session_principal_of(request.session)


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


def login_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when a principal is logged in (kept as `request.principal`); else where to log in."""
    principal = session_principal(request)
    if principal is None:
        if is_partial(request):
            return HttpResponse("Login required.", status=401, content_type="text/plain")
        return redirect_to_login(request.get_full_path(), login_url=settings.LOGIN_URL)
    request.principal = principal  # type: ignore[attr-defined]
    return None


def principal_required(view: View) -> View:
    """A logged-in principal allowed DESCRIBE on the cluster; login redirect or 403 otherwise."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = login_refusal(request)
        if refusal is not None:
            return refusal
        principal = request.principal  # type: ignore[attr-defined]
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


@dataclasses.dataclass(frozen=True, slots=True)
class Sorting:
    """How a list is sorted: `?sort=key` ascending, `?sort=-key` descending."""

    key: str
    descending: bool
    order_by: tuple[str, ...]  # the queryset's order for it (then the list's own order)


SORT_PARAM = "sort"


def sorting(request: HttpRequest, columns: Mapping[str, Sequence[str]], default: str) -> Sorting:
    """The sort the page asks for, among `columns` (key -> the fields it orders by); anything
    else falls back to `default`."""
    asked = request.GET.get(SORT_PARAM, default)
    descending = asked.startswith("-")
    key = asked.lstrip("-")
    if key not in columns:
        descending = default.startswith("-")
        key = default.lstrip("-")
    fields = tuple(f"-{f}" if descending else f for f in columns[key])
    return Sorting(key, descending, fields)


def paginate(request: HttpRequest, items: Any, per_page: int) -> Page:  # type: ignore[type-arg]
    """One page of a queryset (a count and a slice: two queries) or of a list."""
    return Paginator(items, per_page).get_page(request.GET.get(PAGE_PARAM))


# --- topic visibility -----------------------------------------------------------------------
def topic_visibility(request: HttpRequest) -> Callable[[str], bool] | None:
    """Whether the principal may DESCRIBE a topic (Kafka's TOPIC ACLs, as the API answers);
    None when it may describe every topic (a super user), so nothing needs filtering."""
    principal: AuthenticatedPrincipal = request.principal  # type: ignore[attr-defined]
    if principal.is_super:
        return None
    host = client_host(request)

    def visible(name: str) -> bool:
        return is_authorized(
            principal,
            host=host,
            operation=AclOperation.DESCRIBE,
            resource_type=ResourceType.TOPIC,
            resource_name=name,
        )

    return visible


def hidden_topics(visible: Callable[[str], bool] | None) -> list[str] | None:
    """Names of the topics the principal may not describe (one query), None if it may all."""
    if visible is None:
        return None
    hidden = [name for name in topic_name_list() if not visible(name)]
    return hidden or None


# --- the admin pages ------------------------------------------------------------------------
def login_required(view: View) -> View:
    """The logged-in principal, and nothing more: what it may do is the API's to decide."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return login_refusal(request) or view(request, *args, **kwargs)

    return never_cache(wrapped)


def form_view(show: View, submit: View) -> View:
    """GET shows a form (a page: the UI's read authorization); POST submits it (a write: only
    a login, the API authorizes and audits it)."""

    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        handler = submit if request.method == "POST" else show
        return handler(request, *args, **kwargs)

    return view


def render_admin(
    request: HttpRequest,
    *,
    title: str,
    section: str,
    fragment: str,
    context: dict[str, Any] | None = None,
    status: int = 200,
    refresh: bool = True,
) -> HttpResponse:
    """An admin page. Forms, and every answer to a POST, do not refresh themselves: a refresh
    fetches the URL anew and would replace what they show (a diff, a new token's HMAC)."""
    return render_page(
        request,
        title=title,
        section=section,
        fragment=fragment,
        context={**(context or {}), "no_refresh": not refresh or request.method == "POST"},
        status=status,
    )


def forbidden(
    request: HttpRequest, *, section: str, message: str, requirement: str
) -> HttpResponse:
    return render_admin(
        request,
        title="Not authorized",
        section=section,
        fragment="frontend/partials/forbidden.html",
        context={"message": message, "requirement": requirement},
        status=403,
    )


def result_page(
    request: HttpRequest,
    *,
    title: str,
    section: str,
    problems: list[KafkaProblem],
    back_url: str,
    status: int,
) -> HttpResponse:
    """A write's errors alone, where the form cannot come back (it would show data the
    principal may not read)."""
    return render_admin(
        request,
        title=title,
        section=section,
        fragment="frontend/partials/admin_result.html",
        context={"problems": problems, "back_url": back_url},
        status=status,
    )


def may(
    request: HttpRequest, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    return is_authorized(
        request.principal,  # type: ignore[attr-defined]
        host=client_host(request),
        operation=operation,
        resource_type=resource_type,
        resource_name=name,
    )


def redirect_with(url: str, params: Mapping[str, str] | None = None) -> HttpResponseRedirect:
    return HttpResponseRedirect(f"{url}?{urlencode(params)}" if params else url)
