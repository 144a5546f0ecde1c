"""The client quota pages (KIP-590's admin APIs): the quotas, one row per entity, and setting
or removing one value through the API."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from configs.projection import client_quota_map
from configs.selectors import client_quota_entity_list, client_quota_list
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.quotas.control import entity_data
from controlplane.controller.quotas.describe import effective_quotas, precedence
from frontend.forms.quotas import EffectiveQuotaForm, QuotaFilterForm, QuotaForm
from frontend.tables.common import KafkaProblem
from frontend.tables.quotas import format_quota, quota_rows
from frontend.views.base import (
    forbidden,
    form_view,
    login_required,
    may,
    paginate,
    principal_required,
    render_admin,
)
from frontend.views.confirm import (
    CONFIRM_FIELD,
    Confirmation,
    ask_again,
    is_confirmed,
)
from frontend.writes import answer_problems, refusal_status, rpc_call

QUOTAS_PAGE_SIZE = 50
QUOTA_REQUIREMENT = "Client quotas need DESCRIBE_CONFIGS on the CLUSTER resource."


def quota_read_refusal(request: HttpRequest) -> HttpResponse | None:
    if may(request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return None
    return forbidden(
        request,
        section="quotas",
        message="Not authorized to describe client quotas.",
        requirement=QUOTA_REQUIREMENT,
    )


@principal_required
def quota_list_view(request: HttpRequest) -> HttpResponse:
    """Every quota (DescribeClientQuotas' projection), one row per entity; entities are paged
    (a count and a slice), then their values read in one query."""
    refusal = quota_read_refusal(request)
    if refusal is not None:
        return refusal
    form = QuotaFilterForm(request.GET)
    entity_type = form.chosen_entity_type()
    page = paginate(request, client_quota_entity_list(entity_type=entity_type), QUOTAS_PAGE_SIZE)
    rows = quota_rows(client_quota_list(entity_keys=page.object_list))
    asked = "user" in request.GET or "client_id" in request.GET
    effective_form = EffectiveQuotaForm(request.GET if asked else None)
    return render_admin(
        request,
        title="Client quotas",
        section="quotas",
        fragment="frontend/partials/quota_list.html",
        context={
            "form": form,
            "rows": rows,
            "page_obj": page,
            "entity_type": entity_type,
            "effective_form": effective_form,
            "effective": effective_answer(effective_form) if asked else None,
        },
    )


ENTITY_ORDER = ("user", "client-id", "ip")


def _user_first(entity: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An entity's parts as Kafka writes them (user, then client id: /config/users/u/clients/c)."""
    return sorted(entity, key=lambda part: ENTITY_ORDER.index(part["entity_type"]))


def effective_answer(form: EffectiveQuotaForm) -> dict[str, Any] | None:
    """Which quota applies to the pair, per key, and from which entity: the API's reading
    (GET /api/v1/client-quotas/effective, ClientQuotaManager's precedence), and that order
    itself, most specific first, so the answer can be checked against it."""
    if not form.is_valid():
        return None
    user, client_id = form.cleaned_data["user"], form.cleaned_data["client_id"]
    answer = effective_quotas(client_quota_map(), user, client_id)
    return {
        **answer,
        "values": [
            {**item, "entity_label": describe_entity(_user_first(item["entity"]))}
            for item in answer["values"]
        ],
        "order": [
            describe_entity(_user_first(entity_data(e))) for e in precedence(user, client_id)
        ],
    }


def quota_form_page(
    request: HttpRequest,
    form: QuotaForm,
    *,
    problems: list[KafkaProblem] | None = None,
    status: int = 200,
) -> HttpResponse:
    return render_admin(
        request,
        title="Set or remove a client quota",
        section="quotas",
        fragment="frontend/partials/quota_form.html",
        context={"form": form, "problems": problems or []},
        status=status,
        refresh=False,
    )


@principal_required
def _quota_form(request: HttpRequest) -> HttpResponse:
    # Prefilled from the list's "edit" links: the entity, and maybe the key.
    initial: dict[str, Any] = {
        name: request.GET[name][:1000]
        for name in ("user", "client_id", "ip", "key")
        if name in request.GET
    }
    for name in ("user_default", "client_id_default", "ip_default"):
        if request.GET.get(name):
            initial[name] = True
    return quota_form_page(request, QuotaForm(initial=initial))


def describe_entity(entity: list[dict[str, Any]]) -> str:
    def name(part: dict[str, Any]) -> str:
        return "<default>" if part["entity_name"] is None else str(part["entity_name"])

    return ", ".join(f"{part['entity_type']}={name(part)}" for part in entity)


@login_required
def _quota_submit(request: HttpRequest) -> HttpResponse:
    form = QuotaForm(request.POST)
    if not form.is_valid():
        return quota_form_page(request, form)
    entry = form.entry()
    (op,) = entry["ops"]
    if op["remove"]:
        confirmation = remove_confirmation(request, form, describe_entity(entry["entity"]))
        if not is_confirmed(request, confirmation):
            return ask_again(request, confirmation, section="quotas")
    body = {"entries": [entry], "validate_only": False}
    answer = rpc_call(request, "AlterClientQuotas", body)
    entity = describe_entity(entry["entity"])
    problems = answer_problems(answer, "entries", lambda index, item: entity)
    if problems:
        return quota_form_page(
            request, form, problems=problems, status=refusal_status(answer, problems)
        )
    if op["remove"]:
        messages.success(request, f"Removed {op['key']} of {entity}.")
    else:
        value = format_quota(op["value"])
        messages.success(request, f"Set {op['key']} = {value} for {entity}.")
    return HttpResponseRedirect(reverse("frontend:quota-list"))


def remove_confirmation(request: HttpRequest, form: QuotaForm, entity: str) -> Confirmation:
    key = form.cleaned_data["key"]
    return Confirmation(
        title=f"Remove {key} of {entity}?",
        action=reverse("frontend:quota-set"),
        button="Remove the quota",
        back_url=reverse("frontend:quota-list"),
        facts=[("Entity", entity), ("Quota", key)],
        consequences=[
            f"{entity} is no longer limited by its own {key}: the next quota in Kafka's order "
            "of precedence applies (a default entity's, or none: unlimited).",
        ],
        fields={
            name: value
            for name, value in request.POST.items()
            if name not in ("csrfmiddlewaretoken", CONFIRM_FIELD)
        },
    )


quota_set_view = form_view(_quota_form, _quota_submit)
