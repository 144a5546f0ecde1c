"""The ACL pages (KIP-590's admin APIs): the ACLs grouped by principal or resource, creating
one (or a producer's or a consumer's), and deleting exactly one, through the API."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from frontend.forms.acls import AclDeleteForm, AclFilterForm, AclForm, ClientAclForm
from frontend.tables.acls import acl_groups, acl_rows
from frontend.tables.common import KafkaProblem
from frontend.views.base import (
    form_view,
    login_required,
    paginate,
    principal_required,
    redirect_with,
    render_admin,
    result_page,
)
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed
from frontend.writes import (
    answer_matching_acls,
    answer_problems,
    malformed,
    matching_acl_problems,
    refusal_status,
    rpc_call,
)
from security.selectors import acl_get, acl_list

ACLS_PAGE_SIZE = 100
ACL_ORDER = {
    "principal": ("principal", "resource_type", "resource_name", "pattern_type", "operation"),
    "resource": ("resource_type", "resource_name", "pattern_type", "principal", "operation"),
}
ACL_TIEBREAK = ("permission_type", "host", "id")


@principal_required
def acl_list_view(request: HttpRequest) -> HttpResponse:
    """Every ACL (DescribeAcls' projection), filtered, grouped by principal or resource."""
    form = AclFilterForm(request.GET)
    group_by = form.group_by()
    filters = form.filters()
    acls = acl_list(filters=filters, order_by=(*ACL_ORDER[group_by], *ACL_TIEBREAK))
    page = paginate(request, acls, ACLS_PAGE_SIZE)
    return render_admin(
        request,
        title="ACLs",
        section="acls",
        fragment="frontend/partials/acl_list.html",
        context={
            "form": form,
            "group_by": group_by,
            "groups": acl_groups(acl_rows(page.object_list), group_by),
            "page_obj": page,
            "filtered": bool(filters),
        },
    )


def acl_form_page(
    request: HttpRequest,
    form: AclForm | ClientAclForm,
    *,
    problems: list[KafkaProblem] | None = None,
    status: int = 200,
) -> HttpResponse:
    client = isinstance(form, ClientAclForm)
    return render_admin(
        request,
        title="New producer or consumer ACLs" if client else "New ACL",
        section="acls",
        fragment="frontend/partials/acl_form.html",
        context={
            "form": form,
            "client": client,
            "action": reverse("frontend:acl-create-client" if client else "frontend:acl-create"),
            "problems": problems or [],
        },
        status=status,
        refresh=False,
    )


def describe_creation(creation: Mapping[str, str]) -> str:
    return (
        f"{creation['permission_type']} {creation['principal']} {creation['operation']} on "
        f"{creation['resource_type']}:{creation['resource_name']} ({creation['pattern_type']}) "
        f"from host {creation['host']}"
    )


def create_acls(
    request: HttpRequest, form: AclForm | ClientAclForm, creations: list[dict[str, str]]
) -> HttpResponse:
    """CreateAcls through the API; back to the list of the principal's ACLs when done."""
    answer = rpc_call(request, "CreateAcls", {"creations": creations})
    problems = answer_problems(
        answer, "results", lambda index, item: describe_creation(creations[index])
    )
    if problems:
        return acl_form_page(
            request, form, problems=problems, status=refusal_status(answer, problems)
        )
    for creation in creations:
        messages.success(request, f"Created ACL: {describe_creation(creation)}.")
    return redirect_with(reverse("frontend:acl-list"), {"principal": creations[0]["principal"]})


@principal_required
def _acl_create_form(request: HttpRequest) -> HttpResponse:
    return acl_form_page(request, AclForm())


@login_required
def _acl_create_submit(request: HttpRequest) -> HttpResponse:
    form = AclForm(request.POST)
    if not form.is_valid():
        return acl_form_page(request, form)
    return create_acls(request, form, [form.creation()])


@principal_required
def _client_acl_form(request: HttpRequest) -> HttpResponse:
    return acl_form_page(request, ClientAclForm())


@login_required
def _client_acl_submit(request: HttpRequest) -> HttpResponse:
    form = ClientAclForm(request.POST)
    if not form.is_valid():
        return acl_form_page(request, form)
    return create_acls(request, form, form.creations())


acl_create_view = form_view(_acl_create_form, _acl_create_submit)
acl_create_client_view = form_view(_client_acl_form, _client_acl_submit)


def delete_confirmation(form: AclDeleteForm, described: str) -> Confirmation:
    return Confirmation(
        title="Delete this ACL?",
        action=reverse("frontend:acl-delete"),
        button="Delete the ACL",
        back_url=reverse("frontend:acl-list"),
        facts=[
            (label, str(form.initial.get(name) or form.data.get(name) or ""))
            for name, label in (
                ("resource_type", "Resource type"),
                ("resource_name", "Resource name"),
                ("pattern_type", "Pattern type"),
                ("principal", "Principal"),
                ("host", "Host"),
                ("operation", "Operation"),
                ("permission_type", "Permission"),
            )
        ],
        consequences=[
            f"{described} stops applying at once.",
            "DeleteAcls with a filter that matches exactly this binding: no other ACL goes.",
        ],
        fields={
            name: (form.initial.get(name) if not form.is_bound else form.data.get(name)) or ""
            for name in AclForm.base_fields
        },
    )


@principal_required
def acl_delete_confirm_view(request: HttpRequest, acl_id: str) -> HttpResponse:
    """The ACL to delete, and the button that deletes exactly it."""
    found = acl_get(acl_id=acl_id)
    if found is None:
        return result_page(
            request,
            title="ACL not found",
            section="acls",
            problems=[],
            back_url=reverse("frontend:acl-list"),
            status=404,
        )
    (acl,) = acl_rows([found])
    initial = {name: getattr(acl, name) for name in AclForm.base_fields}
    form = AclDeleteForm(initial=initial)
    described = describe_creation(initial)
    return confirm_page(request, delete_confirmation(form, described), section="acls")


@require_POST
@login_required
def acl_delete_view(request: HttpRequest) -> HttpResponse:
    """DeleteAcls with the filter that matches exactly the confirmed ACL, through the API."""
    back = reverse("frontend:acl-list")
    form = AclDeleteForm(request.POST)
    if not form.is_valid():
        problems = malformed("The ACL to delete is malformed.")
        return result_page(
            request,
            title="ACL not deleted",
            section="acls",
            problems=problems,
            back_url=back,
            status=400,
        )
    described = describe_creation(form.creation())
    confirmation = delete_confirmation(form, described)
    if not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section="acls")
    answer = rpc_call(request, "DeleteAcls", {"filters": [form.deletion_filter()]})
    problems = answer_problems(answer, "filter_results") or matching_acl_problems(answer)
    if problems:
        return result_page(
            request,
            title="ACL not deleted",
            section="acls",
            problems=problems,
            back_url=back,
            status=refusal_status(answer, problems),
        )
    if answer_matching_acls(answer):
        messages.success(request, f"Deleted ACL: {described}.")
    else:
        messages.warning(request, f"No ACL matched (deleted already?): {described}.")
    return HttpResponseRedirect(back)
