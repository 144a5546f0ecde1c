"""Creating a topic: the form, a `validate_only` check (Kafka's dry run) that shows what the
topic would be (its placement, canary partitions and effective configs: `CREATE_PREVIEWS`) and
warns of what would go wrong, then CreateTopics run as the logged-in principal
(`frontend.writes.rpc_call`). The actions on an existing topic: frontend.views.topic_actions."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from brokers.selectors import broker_list
from configs.selectors import configs_describe
from controlplane.controller.config_schema import BROKER, BROKER_CONFIGS, CLUSTER_DEFAULT, TOPIC
from controlplane.controller.configs.describe import (
    DEFAULT_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
)
from controlplane.selectors import StoredConfigs, configs_stored
from frontend.forms.topics import TopicCreateForm, bad_configs
from frontend.tables.common import KafkaProblem
from frontend.tables.topic_plans import BrokerRow, placement
from frontend.views.base import form_view, login_required, principal_required, render_admin
from frontend.writes import answer_problems, refusal_status, rpc_call

SECTION = "topics"


@dataclasses.dataclass(frozen=True, slots=True)
class TopicPreview:
    """A section the create form shows after a check: what the new topic would be."""

    title: str
    template: str
    context: Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class CreateWarning:
    text: str
    blocking: bool = False  # "Create" asks to tick "create it anyway" first
    note: bool = False  # said, not warned of (a count the cluster's default fills in)


@dataclasses.dataclass(slots=True)
class CreatePlan:
    """What the new topic would be, read once (the brokers, the stored configs): the cluster's
    defaults for empty counts, the effective configs and their sources, and what to warn of."""

    defaults: dict[str, tuple[str, str]]
    brokers: list[BrokerRow]
    stored: StoredConfigs

    @classmethod
    def read(cls) -> CreatePlan:
        stored = configs_stored(resources=[])
        return cls(_cluster_defaults(stored), broker_rows(), stored)

    def effective_configs(self, name: str, given: list[dict[str, str]]) -> list[dict[str, Any]]:
        """DescribeConfigs' entries for the topic as it would be: given ones DYNAMIC_TOPIC_CONFIG,
        the rest the cluster default, static or built-in value, each with its source."""
        stored = {**self.stored, (TOPIC, name): {c["name"]: c["value"] for c in given}}
        return configs_describe(resource_type=TOPIC, resource_name=name, stored=stored)

    def counts(self, form: TopicCreateForm) -> tuple[int, int]:
        data = form.cleaned_data
        partitions = data.get("num_partitions") or int(self.defaults["num.partitions"][0])
        factor = data.get("replication_factor") or int(
            self.defaults["default.replication.factor"][0]
        )
        return partitions, factor

    def warnings(self, form: TopicCreateForm, replication_factor: int) -> list[CreateWarning]:
        data = form.cleaned_data
        given = {c["name"]: c["value"] for c in data.get("configs") or ()}
        entry = next(
            (
                e
                for e in self.effective_configs(data["name"], data.get("configs") or [])
                if e["name"] == MIN_ISR
            ),
            None,
        )
        found: list[CreateWarning] = []
        try:
            min_isr = int(entry["value"]) if entry and entry["value"] is not None else 1
        except ValueError:  # a bad value: the controller names it
            min_isr = 1
        source = (
            "given" if MIN_ISR in given else f"the cluster's, {entry and entry['config_source']}"
        )
        if min_isr > replication_factor:
            found.append(
                CreateWarning(
                    f"{MIN_ISR} is {min_isr} ({source}) but the replication factor is "
                    f"{replication_factor}: the ISR can never reach {min_isr}, so producers "
                    "with acks=all would be refused (NOT_ENOUGH_REPLICAS) on every partition.",
                    blocking=True,
                )
            )
        elif min_isr == replication_factor and replication_factor > 1:
            found.append(
                CreateWarning(
                    f"{MIN_ISR} equals the replication factor ({min_isr}): one broker down stops "
                    "producers with acks=all on its partitions."
                )
            )
        unfenced = sum(1 for b in self.brokers if not b.fenced and not b.in_controlled_shutdown)
        if 0 < unfenced < replication_factor <= len(self.brokers):
            found.append(
                CreateWarning(
                    f"Only {unfenced} broker(s) are unfenced for a replication factor of "
                    f"{replication_factor}: replicas go to fenced brokers and every partition "
                    "starts under-replicated."
                )
            )
        if data.get("num_partitions") is None:
            value, origin = self.defaults["num.partitions"]
            found.append(
                CreateWarning(
                    f"Partitions left empty: the cluster's num.partitions, {value} ({origin}).",
                    note=True,
                )
            )
        if data.get("replication_factor") is None:
            value, origin = self.defaults["default.replication.factor"]
            found.append(
                CreateWarning(
                    f"Replication factor left empty: the cluster's default.replication.factor, "
                    f"{value} ({origin}).",
                    note=True,
                )
            )
        return found


MIN_ISR = "min.insync.replicas"
DEFAULTED = ("num.partitions", "default.replication.factor")


def _cluster_defaults(stored: StoredConfigs) -> dict[str, tuple[str, str]]:
    """num.partitions and default.replication.factor as the controller resolves them
    (`ConfigView.broker_value`: the cluster's dynamic default, then static, then built-in),
    each with its DescribeConfigs source."""
    dynamic = stored.get((BROKER, CLUSTER_DEFAULT), {})
    static = settings.CP_STATIC_BROKER_CONFIGS
    found = {}
    for key in DEFAULTED:
        if key in dynamic:
            found[key] = (dynamic[key], DYNAMIC_DEFAULT_BROKER_CONFIG)
        elif key in static:
            found[key] = (static[key], STATIC_BROKER_CONFIG)
        else:
            found[key] = (str(BROKER_CONFIGS[key].default), DEFAULT_CONFIG)
    return found


def broker_rows() -> list[BrokerRow]:
    """The brokers as the placement and election plans see them."""
    return [
        BrokerRow(*row)
        for row in broker_list().values_list(
            "broker_id", "rack", "fenced", "in_controlled_shutdown", "pod"
        )
    ]


def canary_preview(
    form: TopicCreateForm, checked: Mapping[str, Any], plan: CreatePlan
) -> TopicPreview | None:
    """KIP-1095: which of the new partitions would be canary, and whether they would be
    isolated on canary brokers (CreateTopics answers both, validate_only too)."""
    partitions = checked.get("canary_partitions")
    if not partitions:
        return None
    return TopicPreview(
        title="Canary partitions (KIP-1095)",
        template="frontend/partials/topic_create_canary.html",
        context={
            "partitions": list(partitions),
            "count": len(partitions),
            "total": checked.get("num_partitions"),
            "isolated": bool(checked.get("canary_isolated")),
            "replication_factor": checked.get("replication_factor"),
        },
    )


PLACEMENT_ROWS = 500  # partitions listed one by one; the per-broker table covers the rest


def placement_preview(
    form: TopicCreateForm, checked: Mapping[str, Any], plan: CreatePlan
) -> TopicPreview | None:
    """Which brokers and racks each partition's replicas would go to: the controller's own
    placement over the brokers as they are now (canary partitions marked)."""
    placed = placement(
        str(checked["name"]),
        plan.brokers,
        num_partitions=int(checked["num_partitions"]),
        replication_factor=int(checked["replication_factor"]),
        canary=list(checked.get("canary_partitions") or ()),
    )
    return TopicPreview(
        title="Placement",
        template="frontend/partials/topic_create_placement.html",
        context={
            "placement": placed,
            "rows": placed.partitions[:PLACEMENT_ROWS],
            "more": max(0, len(placed.partitions) - PLACEMENT_ROWS),
            "replication_factor": checked["replication_factor"],
        },
    )


def configs_preview(
    form: TopicCreateForm, checked: Mapping[str, Any], plan: CreatePlan
) -> TopicPreview | None:
    """The topic's effective configs: the given ones, then every other with the value it
    would take and where from (the cluster's default, static or built-in)."""
    entries = plan.effective_configs(str(checked["name"]), form.cleaned_data.get("configs") or [])
    given = [e for e in entries if e["config_source"] == DYNAMIC_TOPIC_CONFIG]
    cluster = [
        e
        for e in entries
        if e["config_source"] in (DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG)
    ]
    return TopicPreview(
        title="Effective configs",
        template="frontend/partials/topic_create_configs.html",
        context={"given": given, "cluster": cluster, "entries": entries},
    )


# What the checked topic would be, beyond CreateTopics' own answer: each function gets the form,
# the validate_only answer for the topic and the plan read for the page, and answers a section
# or None.
CREATE_PREVIEWS: list[
    Callable[[TopicCreateForm, Mapping[str, Any], CreatePlan], TopicPreview | None]
] = [placement_preview, canary_preview, configs_preview]


def topic_create_page(
    request: HttpRequest,
    form: TopicCreateForm,
    *,
    plan: CreatePlan,
    problems: list[KafkaProblem] | None = None,
    checked: Mapping[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    previews = []
    warnings: list[CreateWarning] = []
    if checked is not None:
        previews = [p for make in CREATE_PREVIEWS if (p := make(form, checked, plan)) is not None]
        warnings = plan.warnings(form, int(checked["replication_factor"]))
    defaulted = {
        "partitions": checked is not None and form.cleaned_data.get("num_partitions") is None,
        "rf": checked is not None and form.cleaned_data.get("replication_factor") is None,
    }
    return render_admin(
        request,
        title="New topic",
        section=SECTION,
        fragment="frontend/partials/topic_create.html",
        context={
            "form": form,
            "problems": problems or [],
            "checked": checked,
            "previews": previews,
            "warnings": warnings,
            "blocking": any(w.blocking for w in warnings),
            "defaults": plan.defaults,
            "defaulted": defaulted,
        },
        status=status,
        refresh=False,
    )


@principal_required
def _topic_create_form(request: HttpRequest) -> HttpResponse:
    plan = CreatePlan.read()
    return topic_create_page(request, TopicCreateForm(defaults=plan.defaults), plan=plan)


@login_required
def _topic_create_submit(request: HttpRequest) -> HttpResponse:
    """CreateTopics; "Check" sends it with validate_only (Kafka's dry run) and shows what the
    topic would be, "Create" creates it. A create that a warning blocks (min.insync.replicas
    above the replication factor) is checked instead, until "create it anyway" is ticked."""
    plan = CreatePlan.read()
    form = TopicCreateForm(request.POST, defaults=plan.defaults)
    if not form.is_valid():
        return topic_create_page(request, form, plan=plan)
    check = "check" in request.POST
    if not check and request.POST.get("accept_warnings") != "1":
        _, factor = plan.counts(form)
        check = any(w.blocking for w in plan.warnings(form, factor))
    answer = rpc_call(request, "CreateTopics", form.body(validate_only=check))
    problems = answer_problems(answer, "topics", lambda i, item: f"TOPIC {item.get('name')}")
    if problems:
        if any(p.error == "INVALID_CONFIG" for p in problems):
            # The controller names the first bad config; the field names every one.
            for message in bad_configs(form.cleaned_data["configs"]):
                form.add_error("configs", message)
        return topic_create_page(
            request, form, plan=plan, problems=problems, status=refusal_status(answer, problems)
        )
    (created,) = answer.data["topics"]
    if check:
        return topic_create_page(request, form, plan=plan, checked=created)
    messages.success(
        request,
        f"Created topic {created['name']}: {created.get('num_partitions')} partitions, "
        f"replication factor {created.get('replication_factor')}.",
    )
    for warning in plan.warnings(form, int(created.get("replication_factor") or 1)):
        if not warning.note:
            messages.warning(request, warning.text)
    return HttpResponseRedirect(reverse("frontend:topic-detail", args=[created["name"]]))


topic_create_view = form_view(_topic_create_form, _topic_create_submit)
