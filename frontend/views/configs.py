"""The config pages (KIP-590's admin APIs): a topic's, a broker's, the cluster default's, a client
metrics subscription's (KIP-714) and a group's (KIP-848) configs as DescribeConfigs answers them,
their edit form, the diff, and IncrementalAlterConfigs through the API. What a page is about:
frontend.views.config_target; the diff and what a change does: frontend.views.config_diff."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from brokers.selectors import broker_id_list
from configs.selectors import config_resource_names
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.selectors import StoredConfigs
from frontend.forms.configs import ConfigApplyForm, ConfigEditForm, encode_changes
from frontend.tables.common import KafkaProblem
from frontend.tables.configs import (
    ConfigChange,
    ConfigRow,
    broker_config_table,
    client_config_table,
    config_table,
    topic_config_table,
)
from frontend.views.base import (
    forbidden,
    hidden_topics,
    login_required,
    may,
    paginate,
    principal_required,
    render_admin,
    result_page,
    topic_visibility,
)
from frontend.views.config_diff import config_consequences, effective_diff
from frontend.views.config_target import (
    CLIENT_METRICS_KIND,
    GROUP_KIND,
    ConfigTarget,
    config_fingerprint,
    config_target,
    config_target_exists,
    described_configs,
    stored_configs,
)
from frontend.views.topics import TOPICS_PAGE_SIZE
from frontend.writes import answer_problems, malformed, refusal_status, rpc_call
from replicas.selectors import topic_name_list

CONFIG_REQUIREMENT = (
    "Viewing configs needs DESCRIBE_CONFIGS on the TOPIC (a topic's), on the GROUP (a group's) "
    "or on the CLUSTER (a broker's, the cluster default and client metrics subscriptions)."
)
# The subscriptions and groups with configs the index lists (the rest open by name).
CLIENT_RESOURCES_SHOWN = 200


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
    hidden = hidden_topics(topic_visibility(request))
    query = request.GET.get("q", "")[:249]
    names = topic_name_list(exclude=hidden, contains=query)
    page = paginate(request, names, TOPICS_PAGE_SIZE)
    cluster_readable = may(
        request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME
    )
    brokers = broker_id_list() if cluster_readable else []
    subscriptions = client_resource_names(request, CLIENT_METRICS_KIND) if cluster_readable else []
    return render_admin(
        request,
        title="Configs",
        section="configs",
        fragment="frontend/partials/config_index.html",
        context={
            "cluster_readable": cluster_readable,
            "broker_configs": broker_config_table(brokers),
            "topics": topic_config_table(list(page.object_list)),
            "subscriptions": client_config_table(CLIENT_METRICS_KIND, subscriptions),
            "groups": client_config_table(GROUP_KIND, client_resource_names(request, GROUP_KIND)),
            "shown": CLIENT_RESOURCES_SHOWN,
            "page_obj": page,
            "query": query,
        },
    )


def client_resource_names(request: HttpRequest, kind: str) -> list[str]:
    """The subscriptions or groups with configs the principal may describe (the first ones)."""
    target = config_target(kind, "")
    names = config_resource_names(
        resource_type=target.resource_type, limit=CLIENT_RESOURCES_SHOWN * 5
    )
    visible = [
        n
        for n in names
        if may(request, AclOperation.DESCRIBE_CONFIGS, *config_target(kind, n).acl_resource)
    ]
    return visible[:CLIENT_RESOURCES_SHOWN]


@principal_required
def config_open_view(request: HttpRequest, kind: str) -> HttpResponse:
    """The configs of the subscription or group named in the index's form (it need not have
    any yet: editing one creates it, as kafka-configs does)."""
    name = request.GET.get("name", "").strip()[:255]
    if not name:
        return HttpResponseRedirect(reverse("frontend:config-index"))
    return HttpResponseRedirect(config_target(kind, name).url())


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
        context={
            "target": target,
            "rows": config_table(described_configs(target, stored_configs(target))),
        },
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
    """The diff of effective values, what the changes do, and the button that applies exactly
    them."""
    diff = effective_diff(target, changes, {row.name: row for row in rows})
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
            "diff": diff,
            "consequences": config_consequences(target, diff),
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
    answer = rpc_call(request, "IncrementalAlterConfigs", body)
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
