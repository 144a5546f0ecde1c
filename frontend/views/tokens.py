"""The delegation token pages (KIP-590's admin APIs): the tokens the principal may describe,
and creating, renewing and expiring one through the API."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters

from controlplane.controller.config_schema import CLUSTER_DEFAULT
from controlplane.controller.errors import ApiError
from controlplane.runtime.lease import now_ms
from frontend.forms.tokens import TokenCreateForm, TokenExpireForm, TokenRenewForm
from frontend.tables.common import KafkaProblem, format_ms
from frontend.tables.tokens import token_rows
from frontend.views.base import (
    View,
    client_host,
    form_view,
    login_required,
    paginate,
    principal_required,
    render_admin,
)
from frontend.views.configs import DEFAULT_KIND, ConfigTarget
from frontend.writes import answer_problems, refusal_status, rpc_call
from security.selectors import tokens_describe

TOKENS_PAGE_SIZE = 50


@principal_required
def token_list_view(request: HttpRequest) -> HttpResponse:
    """The tokens the principal may describe (as DescribeDelegationToken answers); never an
    HMAC: it is shown once, by the page that creates the token."""
    disabled: ApiError | None = None
    described: list[dict[str, Any]] = []
    try:
        described = tokens_describe(
            principal=request.principal,  # type: ignore[attr-defined]
            host=client_host(request),
        )["tokens"]
    except ApiError as error:  # DELEGATION_TOKEN_AUTH_DISABLED while no secret key is set
        disabled = error
    page = paginate(request, token_rows(described, now_ms()), TOKENS_PAGE_SIZE)
    return render_admin(
        request,
        title="Delegation tokens",
        section="tokens",
        fragment="frontend/partials/token_list.html",
        context={
            "disabled": disabled,
            "tokens": page.object_list,
            "page_obj": page,
            "secret_url": ConfigTarget(DEFAULT_KIND, CLUSTER_DEFAULT).edit_url,
        },
    )


TOKEN_FORMS: dict[str, tuple[type[TokenCreateForm | TokenRenewForm | TokenExpireForm], str]] = {
    "create": (TokenCreateForm, "Create a delegation token"),
    "renew": (TokenRenewForm, "Renew a delegation token"),
    "expire": (TokenExpireForm, "Expire a delegation token"),
}


def token_form_page(
    request: HttpRequest,
    step: str,
    form: TokenCreateForm | TokenRenewForm | TokenExpireForm,
    *,
    problems: list[KafkaProblem] | None = None,
    status: int = 200,
) -> HttpResponse:
    return render_admin(
        request,
        title=TOKEN_FORMS[step][1],
        section="tokens",
        fragment="frontend/partials/token_form.html",
        context={
            "form": form,
            "step": step,
            "action": reverse(f"frontend:token-{step}"),
            "problems": problems or [],
        },
        status=status,
        refresh=False,
    )


def _token_form(step: str) -> View:
    @principal_required
    def show(request: HttpRequest) -> HttpResponse:
        return token_form_page(request, step, TOKEN_FORMS[step][0]())

    return show


@login_required
def _token_create_submit(request: HttpRequest) -> HttpResponse:
    """CreateDelegationToken through the API. Its HMAC is in this response and nowhere else:
    not in the session, not in a message, not in a log line, and the page is never cached."""
    form = TokenCreateForm(request.POST)
    if not form.is_valid():
        return token_form_page(request, "create", form)
    answer = rpc_call(request, "CreateDelegationToken", form.body())
    problems = answer_problems(answer)
    if problems:
        return token_form_page(
            request, "create", form, problems=problems, status=refusal_status(answer, problems)
        )
    created = answer.data
    return render_admin(
        request,
        title="Delegation token created",
        section="tokens",
        fragment="frontend/partials/token_created.html",
        context={
            "token": token_rows([{**created, "renewers": form.body()["renewers"]}], now_ms())[0],
            "hmac": created.get("hmac") or "",
        },
    )


def _token_expiry_submit(step: str, api: str) -> View:
    """Renew or expire through the API; the HMAC typed in is never put back into a page."""

    @sensitive_post_parameters("hmac")
    @login_required
    def submit(request: HttpRequest) -> HttpResponse:
        form = TOKEN_FORMS[step][0](request.POST)
        if not form.is_valid():
            return token_form_page(request, step, form)
        answer = rpc_call(request, api, form.body())
        problems = answer_problems(answer)
        if problems:
            return token_form_page(
                request, step, form, problems=problems, status=refusal_status(answer, problems)
            )
        expiry = int(answer.data.get("expiry_timestamp_ms", -1))
        if step == "expire" and expiry <= now_ms():
            messages.success(request, "The token expired: it is removed.")
        else:
            messages.success(request, f"The token now expires at {format_ms(expiry)}.")
        return HttpResponseRedirect(reverse("frontend:token-list"))

    return submit


token_create_view = form_view(_token_form("create"), _token_create_submit)
token_renew_view = form_view(
    _token_form("renew"), _token_expiry_submit("renew", "RenewDelegationToken")
)
token_expire_view = form_view(
    _token_form("expire"), _token_expiry_submit("expire", "ExpireDelegationToken")
)
