"""The SCRAM users pages (KIP-554): every user's SCRAM credentials (mechanisms and iteration
counts, as DescribeUserScramCredentials answers them; never a salt or a key), setting a user's
password for a mechanism and deleting a credential, through the API (AlterUserScramCredentials:
ALTER on the cluster, audited). A password typed in is never put back into a page."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables

from frontend.forms.scram import ScramDeleteForm, ScramUserForm
from frontend.tables.common import KafkaProblem
from frontend.tables.scram import scram_rows, scram_table
from frontend.views.base import (
    form_view,
    login_required,
    paginate,
    principal_required,
    render_admin,
)
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed, refused
from frontend.writes import answer_problems, refusal_status, rpc_call
from security.selectors import scram_users

SCRAM_PAGE_SIZE = 100
SECTION = "scram"


@principal_required
def scram_list_view(request: HttpRequest) -> HttpResponse:
    """Every credential, by user then mechanism (paged in SQL), filtered by name."""
    query = request.GET.get("q", "")[:255]
    page = paginate(request, scram_users(name_contains=query), SCRAM_PAGE_SIZE)
    return render_admin(
        request,
        title="SCRAM users",
        section=SECTION,
        fragment="frontend/partials/scram_list.html",
        context={
            "credentials": scram_table(scram_rows(page.object_list)),
            "page_obj": page,
            "query": query,
        },
    )


def scram_form_page(
    request: HttpRequest,
    form: ScramUserForm,
    *,
    problems: list[KafkaProblem] | None = None,
    status: int = 200,
) -> HttpResponse:
    return render_admin(
        request,
        title="Set a SCRAM user's password",
        section=SECTION,
        fragment="frontend/partials/scram_form.html",
        context={"form": form, "problems": problems or []},
        status=status,
        refresh=False,
    )


@principal_required
def _scram_set_form(request: HttpRequest) -> HttpResponse:
    initial = {k: request.GET[k][:255] for k in ("name", "mechanism") if k in request.GET}
    return scram_form_page(request, ScramUserForm(initial=initial))


@sensitive_variables("form")
@sensitive_post_parameters("password", "confirm_password")
@login_required
def _scram_set_submit(request: HttpRequest) -> HttpResponse:
    """AlterUserScramCredentials with the salt and salted password the form derived; the
    password itself goes no further than the form."""
    form = ScramUserForm(request.POST)
    if not form.is_valid():
        return scram_form_page(request, form)
    answer = rpc_call(request, "AlterUserScramCredentials", form.body())
    problems = answer_problems(answer, "results", lambda index, item: str(item.get("user")))
    if problems:
        return scram_form_page(
            request, form, problems=problems, status=refusal_status(answer, problems)
        )
    data = form.cleaned_data
    messages.success(request, f"{data['name']} logs in with {data['mechanism']} now.")
    return HttpResponseRedirect(reverse("frontend:scram-list"))


def delete_confirmation(name: str, mechanism: str) -> Confirmation:
    return Confirmation(
        title=f"Delete {name}'s {mechanism} credential?",
        action=reverse("frontend:scram-delete"),
        button="Delete the credential",
        back_url=reverse("frontend:scram-list"),
        facts=[("User", name), ("Mechanism", mechanism)],
        consequences=[
            f"User:{name} can no longer log in with {mechanism}, here or on the brokers "
            "(connections already open stay open until they close).",
            "Its other mechanism's credential, its ACLs and its quotas stay.",
        ],
        fields={"name": name, "mechanism": mechanism},
    )


def _asked(request: HttpRequest) -> tuple[str, str]:
    source = request.POST if request.method == "POST" else request.GET
    return source.get("name", "")[:255], source.get("mechanism", "")[:32]


@principal_required
def _scram_delete_confirm(request: HttpRequest) -> HttpResponse:
    name, mechanism = _asked(request)
    return confirm_page(request, delete_confirmation(name, mechanism), section=SECTION)


@login_required
def _scram_delete_submit(request: HttpRequest) -> HttpResponse:
    name, mechanism = _asked(request)
    form = ScramDeleteForm({"name": name, "mechanism": mechanism})
    confirmation = delete_confirmation(name, mechanism)
    if not form.is_valid() or not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section=SECTION)
    answer = rpc_call(request, "AlterUserScramCredentials", form.body())
    problems = answer_problems(answer, "results", lambda index, item: str(item.get("user")))
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    messages.success(request, f"{name}'s {mechanism} credential is deleted.")
    return HttpResponseRedirect(reverse("frontend:scram-list"))


scram_set_view = form_view(_scram_set_form, _scram_set_submit)
scram_delete_view = form_view(_scram_delete_confirm, _scram_delete_submit)
