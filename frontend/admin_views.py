"""The admin pages of KIP-590's admin APIs: configs, ACLs, client quotas, delegation tokens and
the audit trail.

Reads come from the projections and the config registry, under the API's read authorization.
Every write is the public API's own request, run as the logged-in principal by
`admin_request_execute`: validated, authorized, sent to the controller and audited exactly as
if the operator had called the API. So a write view asks only for a login: refusing a
principal here would keep the refusal out of the audit trail.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.crypto import salted_hmac
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from audit.filtersets import AuditEventFilterSet
from audit.selectors import audit_event_list
from brokers.models import Broker
from brokers.selectors import broker_list
from controlplane.authz import is_authorized
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.api_keys import ADMIN_APIS
from controlplane.controller.config_schema import (
    BROKER,
    BROKER_CONFIGS,
    CLUSTER_DEFAULT,
    TOPIC,
    TOPIC_CONFIGS,
    ConfigDef,
)
from controlplane.controller.configs.describe import (
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    describe_configs,
)
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.records import QuotaEntity
from controlplane.controller.tokens.control import secret_of
from controlplane.controller.tokens.describe import describe_tokens
from controlplane.forwarding import AdminAnswer, admin_request_execute
from controlplane.lease import now_ms
from controlplane.models import Acl, ClientQuota
from controlplane.projections import delegation_token_rows
from controlplane.selectors import StoredConfigs, config_view, configs_stored
from frontend.admin_forms import (
    AUDIT_APIS,
    AUDIT_OUTCOMES,
    AclFilterForm,
    AclForm,
    ClientAclForm,
    ConfigApplyForm,
    ConfigEditForm,
    QuotaFilterForm,
    QuotaForm,
    TokenCreateForm,
    TokenExpireForm,
    TokenRenewForm,
    encode_changes,
)
from frontend.admin_tables import (
    ACL_ROW_FIELDS,
    ConfigChange,
    ConfigRow,
    KafkaProblem,
    acl_groups,
    acl_rows,
    answer_matching_acls,
    answer_problems,
    audit_rows,
    config_diff,
    config_row,
    matching_acl_problems,
    quota_rows,
    refusal_status,
    token_rows,
)
from frontend.tables import format_ms
from frontend.views import (
    TOPICS_PAGE_SIZE,
    View,
    client_host,
    hidden_topics,
    login_refusal,
    paginate,
    principal_required,
    render_page,
    topic_visibility,
)
from replicas.models import Topic

UI_CLIENT_ID = "ui"  # the client id the audit trail shows for the UI's requests
ACLS_PAGE_SIZE = 100
QUOTAS_PAGE_SIZE = 50
TOKENS_PAGE_SIZE = 50
AUDIT_PAGE_SIZE = 50
AUDIT_FILTERS = ("principal", "api", "outcome", "forwarded", "request_id", "resource")


# --- plumbing -----------------------------------------------------------------------------
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


def malformed(message: str) -> list[KafkaProblem]:
    """A form the UI itself made came back altered: refused as the API refuses a bad body."""
    error = Errors.INVALID_REQUEST
    return [KafkaProblem(error_code=int(error), error=error.name, message=message)]


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


def execute_admin_request(request: HttpRequest, api: str, body: dict[str, Any]) -> AdminAnswer:
    """The API's own request, as the logged-in principal from the browser's address."""
    return admin_request_execute(
        api=ADMIN_APIS[api],
        body=body,
        principal=request.principal,  # type: ignore[attr-defined]
        client_host=client_host(request),
        client_id=UI_CLIENT_ID,
        request_id=request.request_id,  # type: ignore[attr-defined]
    )


def redirect_with(url: str, params: Mapping[str, str] | None = None) -> HttpResponseRedirect:
    return HttpResponseRedirect(f"{url}?{urlencode(params)}" if params else url)


# --- configs ------------------------------------------------------------------------------
TOPIC_KIND, BROKER_KIND, DEFAULT_KIND = "topic", "broker", "default"
OWN_SOURCES = {
    TOPIC_KIND: DYNAMIC_TOPIC_CONFIG,
    BROKER_KIND: DYNAMIC_BROKER_CONFIG,
    DEFAULT_KIND: DYNAMIC_DEFAULT_BROKER_CONFIG,
}
# Kafka describes the cluster default (BROKER "") with only the keys set at that level. Its page
# lists every key as a broker without overrides of its own sees it (the cluster default, then
# static, then default): described as a broker that cannot exist.
BROKER_WITHOUT_OVERRIDES = "-1"
INT32_MAX = 2**31 - 1  # broker ids are Kafka's int32
CONFIG_REQUIREMENT = (
    "Viewing configs needs DESCRIBE_CONFIGS on the TOPIC (a topic's) or on the CLUSTER "
    "(a broker's and the cluster default)."
)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigTarget:
    """A resource whose configs a page shows: a topic, a broker, or the cluster default."""

    kind: str
    resource_name: str  # the topic, the broker id, or "" for the cluster default

    @property
    def resource_type(self) -> str:
        return TOPIC if self.kind == TOPIC_KIND else BROKER

    @property
    def own_source(self) -> str:
        return OWN_SOURCES[self.kind]

    @property
    def definitions(self) -> dict[str, ConfigDef]:
        return TOPIC_CONFIGS if self.kind == TOPIC_KIND else BROKER_CONFIGS

    @property
    def label(self) -> str:
        if self.kind == DEFAULT_KIND:
            return "the cluster default"
        return f"{self.kind} {self.resource_name}"

    @property
    def acl_resource(self) -> tuple[ResourceType, str]:
        if self.kind == TOPIC_KIND:
            return ResourceType.TOPIC, self.resource_name
        return ResourceType.CLUSTER, CLUSTER_NAME

    def url(self, step: str = "") -> str:
        kwargs: dict[str, Any] = {}
        if self.kind == TOPIC_KIND:
            kwargs = {"name": self.resource_name}
        elif self.kind == BROKER_KIND:
            kwargs = {"broker_id": int(self.resource_name)}
        name = f"frontend:{self.kind}-config" + (f"-{step}" if step else "")
        return reverse(name, kwargs=kwargs)

    @property
    def edit_url(self) -> str:
        return self.url("edit")

    @property
    def apply_url(self) -> str:
        return self.url("apply")


def config_target(kind: str, name: str = "", broker_id: int | None = None) -> ConfigTarget:
    if kind == TOPIC_KIND:
        return ConfigTarget(kind, name)
    if kind == BROKER_KIND:
        return ConfigTarget(kind, str(broker_id))
    return ConfigTarget(DEFAULT_KIND, CLUSTER_DEFAULT)


def stored_configs(target: ConfigTarget) -> StoredConfigs:
    return configs_stored(resources=[(target.resource_type, target.resource_name)])


def described_configs(target: ConfigTarget, stored: StoredConfigs) -> list[ConfigRow]:
    """Every key of the target as DescribeConfigs answers it (as DescribeConfigsView does)."""

    def dynamic(resource_type: str, resource_name: str, name: str) -> str | None:
        return stored.get((resource_type, resource_name), {}).get(name)

    name = BROKER_WITHOUT_OVERRIDES if target.kind == DEFAULT_KIND else target.resource_name
    entries = describe_configs(
        target.resource_type,
        name,
        dynamic=dynamic,
        static=settings.CP_STATIC_BROKER_CONFIGS,
        include_synonyms=True,
        include_documentation=True,
    )
    return [
        config_row(
            entry,
            own_source=target.own_source,
            default=target.definitions[entry["name"]].default,
        )
        for entry in entries
    ]


def config_fingerprint(target: ConfigTarget, stored: StoredConfigs) -> str:
    """A keyed digest of the target's own dynamic configs: the diff was computed from them.
    Keyed, because a secret's digest goes into the page."""
    own = sorted(stored.get((target.resource_type, target.resource_name), {}).items())
    return salted_hmac("frontend.config-diff", json.dumps(own)).hexdigest()


def config_target_exists(target: ConfigTarget) -> bool:
    if target.kind == TOPIC_KIND:
        return Topic.objects.filter(name=target.resource_name).exists()
    if target.kind == BROKER_KIND:
        broker_id = int(target.resource_name)
        return 0 <= broker_id <= INT32_MAX and Broker.objects.filter(broker_id=broker_id).exists()
    return True


def config_read_refusal(request: HttpRequest, target: ConfigTarget) -> HttpResponse | None:
    """403 unless the principal may DESCRIBE_CONFIGS the target (checked before existence: an
    unauthorized principal is not told whether a topic exists, as in Kafka)."""
    if may(request, AclOperation.DESCRIBE_CONFIGS, *target.acl_resource):
        return None
    return forbidden(
        request,
        section="configs",
        message=f"Not authorized to describe the configs of {target.label}.",
        requirement=CONFIG_REQUIREMENT,
    )


def config_missing(request: HttpRequest, target: ConfigTarget) -> HttpResponse:
    return render_admin(
        request,
        title=f"{target.kind.capitalize()} not found",
        section="configs",
        fragment="frontend/partials/not_found.html",
        context={"kind": target.kind, "key": target.resource_name},
        status=404,
    )


@principal_required
def config_index_view(request: HttpRequest) -> HttpResponse:
    names = Topic.objects.order_by("name")
    hidden = hidden_topics(topic_visibility(request))
    if hidden is not None:
        names = names.exclude(name__in=hidden)
    query = request.GET.get("q", "")[:249]
    if query:
        names = names.filter(name__icontains=query)
    page = paginate(request, names.values_list("name", flat=True), TOPICS_PAGE_SIZE)
    cluster_readable = may(
        request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME
    )
    brokers = list(broker_list().values_list("broker_id", flat=True)) if cluster_readable else []
    return render_admin(
        request,
        title="Configs",
        section="configs",
        fragment="frontend/partials/config_index.html",
        context={
            "cluster_readable": cluster_readable,
            "broker_ids": brokers,
            "topics": list(page.object_list),
            "page_obj": page,
            "query": query,
        },
    )


@principal_required
def config_detail_view(
    request: HttpRequest, kind: str, name: str = "", broker_id: int | None = None
) -> HttpResponse:
    target = config_target(kind, name, broker_id)
    refusal = config_read_refusal(request, target)
    if refusal is not None:
        return refusal
    if not config_target_exists(target):
        return config_missing(request, target)
    return render_admin(
        request,
        title=f"Configs of {target.label}",
        section="configs",
        fragment="frontend/partials/config_detail.html",
        context={"target": target, "rows": described_configs(target, stored_configs(target))},
    )


@sensitive_post_parameters()
@principal_required
@require_http_methods(["GET", "POST"])
def config_edit_view(
    request: HttpRequest, kind: str, name: str = "", broker_id: int | None = None
) -> HttpResponse:
    """The edit form (GET), and its diff (POST): what would change, before anything does."""
    target = config_target(kind, name, broker_id)
    refusal = config_read_refusal(request, target)
    if refusal is not None:
        return refusal
    if not config_target_exists(target):
        return config_missing(request, target)
    stored = stored_configs(target)
    rows = described_configs(target, stored)
    data = request.POST if request.method == "POST" else None
    form = ConfigEditForm(rows, target.definitions, data)
    if data is not None and form.is_valid():
        return config_confirm_page(request, target, form.changes, rows, stored)
    return render_admin(
        request,
        title=f"Edit the configs of {target.label}",
        section="configs",
        fragment="frontend/partials/config_edit.html",
        context={"target": target, "form": form, "edit_rows": form.edit_rows()},
        refresh=False,
    )


def config_confirm_page(
    request: HttpRequest,
    target: ConfigTarget,
    changes: list[ConfigChange],
    rows: list[ConfigRow],
    stored: StoredConfigs,
    *,
    problems: list[KafkaProblem] | None = None,
    warning: str = "",
    status: int = 200,
) -> HttpResponse:
    """The diff and the button that applies exactly it."""
    form = ConfigApplyForm(
        initial={
            "changes": encode_changes(changes),
            "fingerprint": config_fingerprint(target, stored),
        }
    )
    return render_admin(
        request,
        title=f"Confirm the config changes of {target.label}",
        section="configs",
        fragment="frontend/partials/config_confirm.html",
        context={
            "target": target,
            "diff": config_diff(changes, {row.name: row for row in rows}),
            "form": form,
            "problems": problems or [],
            "warning": warning,
        },
        status=status,
    )


@sensitive_post_parameters()
@require_POST
@login_required
def config_apply_view(
    request: HttpRequest, kind: str, name: str = "", broker_id: int | None = None
) -> HttpResponse:
    """IncrementalAlterConfigs with the confirmed changes, through the API."""
    target = config_target(kind, name, broker_id)
    form = ConfigApplyForm(request.POST)
    if not form.is_valid():
        return result_page(
            request,
            title="Configs not changed",
            section="configs",
            problems=malformed("The confirmed changes are malformed; edit the configs again."),
            back_url=target.edit_url,
            status=400,
        )
    changes: list[ConfigChange] = form.cleaned_data["changes"]
    # Only a principal that may read the configs is shown them again (a stale diff, errors);
    # any other one's request still goes to the API, which refuses and audits it.
    readable = may(request, AclOperation.DESCRIBE_CONFIGS, *target.acl_resource)
    if readable:
        stored = stored_configs(target)
        if form.cleaned_data["fingerprint"] != config_fingerprint(target, stored):
            return config_confirm_page(
                request,
                target,
                changes,
                described_configs(target, stored),
                stored,
                warning="The configs changed since this diff was made: check it again.",
                status=409,
            )
    body = {
        "resources": [
            {
                "resource_type": target.resource_type,
                "resource_name": target.resource_name,
                "configs": [change.as_body() for change in changes],
            }
        ],
        "validate_only": False,
    }
    answer = execute_admin_request(request, "IncrementalAlterConfigs", body)
    problems = answer_problems(answer, "responses", lambda index, item: target.label)
    if not problems:
        count = len(changes)
        messages.success(
            request, f"Changed {count} config{'s' if count != 1 else ''} of {target.label}."
        )
        return HttpResponseRedirect(target.url())
    status = refusal_status(answer, problems)
    if not readable:
        return result_page(
            request,
            title="Configs not changed",
            section="configs",
            problems=problems,
            back_url=target.url(),
            status=status,
        )
    stored = stored_configs(target)
    return config_confirm_page(
        request,
        target,
        changes,
        described_configs(target, stored),
        stored,
        problems=problems,
        status=status,
    )


# --- ACLs ---------------------------------------------------------------------------------
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
    acls = Acl.objects.filter(**filters).order_by(*ACL_ORDER[group_by], *ACL_TIEBREAK)
    page = paginate(request, acls.values_list(*ACL_ROW_FIELDS), ACLS_PAGE_SIZE)
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
    answer = execute_admin_request(request, "CreateAcls", {"creations": creations})
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


@principal_required
def acl_delete_confirm_view(request: HttpRequest, acl_id: str) -> HttpResponse:
    """The ACL to delete, and the button that deletes exactly it."""
    found = Acl.objects.filter(pk=acl_id).values_list(*ACL_ROW_FIELDS).first()
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
    form = AclForm(initial={name: getattr(acl, name) for name in AclForm.base_fields})
    return render_admin(
        request,
        title="Delete an ACL",
        section="acls",
        fragment="frontend/partials/acl_delete.html",
        context={"acl": acl, "form": form},
        refresh=False,
    )


@require_POST
@login_required
def acl_delete_view(request: HttpRequest) -> HttpResponse:
    """DeleteAcls with the filter that matches exactly the confirmed ACL, through the API."""
    back = reverse("frontend:acl-list")
    form = AclForm(request.POST)
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
    answer = execute_admin_request(request, "DeleteAcls", {"filters": [form.deletion_filter()]})
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
    described = describe_creation(form.creation())
    if answer_matching_acls(answer):
        messages.success(request, f"Deleted ACL: {described}.")
    else:
        messages.warning(request, f"No ACL matched (deleted already?): {described}.")
    return HttpResponseRedirect(back)


# --- client quotas ------------------------------------------------------------------------
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


def _quota_entity(value: Any) -> QuotaEntity:
    return tuple((str(kind), None if name is None else str(name)) for kind, name in value)


@principal_required
def quota_list_view(request: HttpRequest) -> HttpResponse:
    """Every quota (DescribeClientQuotas' projection), one row per entity; entities are paged
    (a count and a slice), then their values read in one query."""
    refusal = quota_read_refusal(request)
    if refusal is not None:
        return refusal
    form = QuotaFilterForm(request.GET)
    keys = ClientQuota.objects.order_by("entity_key").values_list("entity_key", flat=True)
    entity_type = form.chosen_entity_type()
    if entity_type:
        # entity_key is canonical JSON: `["user",` can only be an entity type, never in a name.
        keys = keys.filter(entity_key__contains=json.dumps([entity_type])[:-1] + ",")
    page = paginate(request, keys.distinct(), QUOTAS_PAGE_SIZE)
    values = (
        ClientQuota.objects.filter(entity_key__in=list(page.object_list))
        .order_by("entity_key", "key")
        .values_list("entity", "key", "value")
    )
    rows = quota_rows((_quota_entity(entity), key, value) for entity, key, value in values)
    return render_admin(
        request,
        title="Client quotas",
        section="quotas",
        fragment="frontend/partials/quota_list.html",
        context={"form": form, "rows": rows, "page_obj": page, "entity_type": entity_type},
    )


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
    body = {"entries": [entry], "validate_only": False}
    answer = execute_admin_request(request, "AlterClientQuotas", body)
    entity = describe_entity(entry["entity"])
    problems = answer_problems(answer, "entries", lambda index, item: entity)
    if problems:
        return quota_form_page(
            request, form, problems=problems, status=refusal_status(answer, problems)
        )
    (op,) = entry["ops"]
    if op["remove"]:
        messages.success(request, f"Removed {op['key']} of {entity}.")
    else:
        messages.success(request, f"Set {op['key']} = {op['value']:g} for {entity}.")
    return HttpResponseRedirect(reverse("frontend:quota-list"))


quota_set_view = form_view(_quota_form, _quota_submit)


# --- delegation tokens --------------------------------------------------------------------
def tokens_disabled() -> ApiError | None:
    """DELEGATION_TOKEN_AUTH_DISABLED while no secret key is set (as the API answers)."""
    try:
        secret_of(config_view())
    except ApiError as error:
        return error
    return None


@principal_required
def token_list_view(request: HttpRequest) -> HttpResponse:
    """The tokens the principal may describe (as DescribeDelegationToken answers); never an
    HMAC: it is shown once, by the page that creates the token."""
    principal = request.principal  # type: ignore[attr-defined]
    disabled = tokens_disabled()
    described: list[dict[str, Any]] = []
    if disabled is None:

        def may_describe(token_id: str) -> bool:
            return may(request, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id)

        described = describe_tokens(
            delegation_token_rows(),
            owners=None,
            requester=principal.principal,
            is_super=principal.is_super,
            may_describe=may_describe,
        )["tokens"]
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
    answer = execute_admin_request(request, "CreateDelegationToken", form.body())
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
        answer = execute_admin_request(request, api, form.body())
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


# --- the audit trail ----------------------------------------------------------------------
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
