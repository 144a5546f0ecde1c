"""The delegation token pages (KIP-590's admin APIs): the tokens the principal may describe,
and creating, renewing and expiring one through the API."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET

from controlplane.authz import client_host
from controlplane.controller.errors import ApiError, Errors
from controlplane.runtime.lease import now_ms
from frontend.forms.tokens import TokenCreateForm, TokenExpireForm, TokenRenewForm
from frontend.tables.common import KafkaProblem, format_ms
from frontend.tables.tokens import token_rows, token_table
from frontend.views.base import (
    View,
    form_view,
    login_required,
    paginate,
    principal_required,
    render_admin,
)
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed, refused
from frontend.writes import answer_problems, refusal_status, rpc_call
from security.selectors import token_hmac_matches, tokens_describe

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
            "tokens": token_table(list(page.object_list)),
            "page_obj": page,
        },
    )


TOKEN_FORMS: dict[str, tuple[type[TokenCreateForm | TokenRenewForm], str]] = {
    "create": (TokenCreateForm, "Create a delegation token"),
    "renew": (TokenRenewForm, "Renew a delegation token"),
}


def token_form_page(
    request: HttpRequest,
    step: str,
    form: TokenCreateForm | TokenRenewForm,
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


CREATED_TOKEN_KEY = "frontend:created-token"


@sensitive_variables("answer", "created", "shown")
@login_required
def _token_create_submit(request: HttpRequest) -> HttpResponse:
    """CreateDelegationToken through the API, then post/redirect/get: the token (its HMAC too)
    waits in the session for the one page that shows it, so reloading that page never creates
    another token. The HMAC is never in a URL, a message or a log line."""
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
    row = token_rows([{**created, "renewers": form.body()["renewers"]}], now_ms())[0]
    shown = {"token": dataclasses.asdict(row), "hmac": created.get("hmac") or ""}
    request.session[CREATED_TOKEN_KEY] = shown
    return HttpResponseRedirect(reverse("frontend:token-created"))


@sensitive_variables("shown")
@require_GET  # a HEAD (a prefetch, a link checker) must not take the one display
@login_required  # the creator's page, as creating needed a login alone (the API authorized it)
def token_created_view(request: HttpRequest) -> HttpResponse:
    """The token just created, with its HMAC, once: taken out of the session as it is shown,
    so a reload (or a second tab) finds it gone rather than creating or showing it again."""
    shown = request.session.pop(CREATED_TOKEN_KEY, None)
    return render_admin(
        request,
        title="Delegation token created" if shown else "Delegation token already shown",
        section="tokens",
        fragment="frontend/partials/token_created.html",
        context={
            "token": shown["token"] if shown else None,
            "hmac": shown["hmac"] if shown else "",
        },
        refresh=False,
    )


def _token_renew_submit() -> View:
    """Renew through the API; the HMAC typed in is never put back into a page."""

    @sensitive_post_parameters("hmac")
    @login_required
    def submit(request: HttpRequest) -> HttpResponse:
        form = TokenRenewForm(request.POST)
        if not form.is_valid():
            return token_form_page(request, "renew", form)
        answer = rpc_call(request, "RenewDelegationToken", form.body())
        problems = answer_problems(answer)
        if problems:
            return token_form_page(
                request, "renew", form, problems=problems, status=refusal_status(answer, problems)
            )
        expiry = int(answer.data.get("expiry_timestamp_ms", -1))
        messages.success(request, f"The token now expires at {format_ms(expiry)}.")
        return HttpResponseRedirect(reverse("frontend:token-list"))

    return submit


# --- expiring: the confirmation every destructive action asks for --------------------------
TOKEN_ID_MAX = 64


def expire_confirmation(
    token: Mapping[str, str] | None, form: TokenExpireForm, token_id: str
) -> Confirmation:
    action = reverse("frontend:token-expire")
    facts = [("Token id", token_id)] if token_id else []
    if token is not None:
        facts += [("Owner", token["owner"]), ("Expires (UTC)", token["expires"])]
    subject = f"token {token_id}" if token_id else "the token whose HMAC you give"
    return Confirmation(
        title=f"Expire {subject}?" if token_id else "Expire a delegation token?",
        action=action,
        button="Expire the token",
        back_url=reverse("frontend:token-list"),
        facts=facts,
        consequences=[
            f"With no period (or a negative one), {subject} stops authenticating at once and "
            "is removed; with a period, it expires that many milliseconds from now.",
            "Clients using it must get a new token. Its HMAC, asked for below, is never shown "
            "again.",
        ],
        fields={"token_id": token_id} if token_id else {},
        form=form,
    )


def _describable_token(request: HttpRequest, token_id: str) -> dict[str, str] | None:
    """The token as the principal may describe it (None: unknown to it, or tokens are off)."""
    if not token_id:
        return None
    try:
        described = tokens_describe(
            principal=request.principal,  # type: ignore[attr-defined]
            host=client_host(request),
        )["tokens"]
    except ApiError:
        return None
    rows = [r for r in token_rows(described, now_ms()) if r.token_id == token_id]
    return {"owner": rows[0].owner, "expires": rows[0].expires} if rows else None


def _asked_token_id(request: HttpRequest) -> str:
    value = request.GET.get("token_id") or request.POST.get("token_id") or ""
    return value[:TOKEN_ID_MAX]


@principal_required
def _token_expire_confirm(request: HttpRequest) -> HttpResponse:
    token_id = _asked_token_id(request)
    token = _describable_token(request, token_id)
    confirmation = expire_confirmation(token, TokenExpireForm(), token_id)
    return confirm_page(request, confirmation, section="tokens")


@sensitive_post_parameters("hmac")
@login_required
def _token_expire_submit(request: HttpRequest) -> HttpResponse:
    """ExpireDelegationToken through the API, once confirmed, with an HMAC that is the named
    token's; the HMAC typed in is never put back into a page."""
    token_id = _asked_token_id(request)
    form = TokenExpireForm(request.POST)
    confirmation = expire_confirmation(_describable_token(request, token_id), form, token_id)
    if not form.is_valid() or not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section="tokens")
    if token_id and not token_hmac_matches(token_id=token_id, hmac_text=form.cleaned_data["hmac"]):
        mismatch = KafkaProblem(
            error_code=int(Errors.DELEGATION_TOKEN_NOT_FOUND),
            error=Errors.DELEGATION_TOKEN_NOT_FOUND.name,
            message=f"That HMAC is not token {token_id}'s: nothing was expired.",
        )
        return confirm_page(
            request, confirmation, section="tokens", problems=[mismatch], status=200
        )
    answer = rpc_call(request, "ExpireDelegationToken", form.body())
    problems = answer_problems(answer)
    if problems:
        return refused(request, confirmation, section="tokens", answer=answer, problems=problems)
    expiry = int(answer.data.get("expiry_timestamp_ms", -1))
    if expiry <= now_ms():
        messages.success(request, "The token expired: it is removed.")
    else:
        messages.success(request, f"The token now expires at {format_ms(expiry)}.")
    return HttpResponseRedirect(reverse("frontend:token-list"))


token_create_view = form_view(_token_form("create"), _token_create_submit)
token_renew_view = form_view(_token_form("renew"), _token_renew_submit())
token_expire_view = form_view(_token_expire_confirm, _token_expire_submit)
