"""The topic actions: create a topic, delete one (typing its name), add partitions, and
preferred or unclean leader elections for a topic or one partition. Each is the API's own RPC
run as the logged-in principal (`frontend.writes.rpc_call`): validated, authorized, sent to the
controller and audited as the API does it; every destructive one asks first
(`frontend.views.confirm`)."""

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
from frontend.forms.topics import AddPartitionsForm, ElectionForm, TopicCreateForm, bad_configs
from frontend.tables.common import KafkaProblem
from frontend.tables.topic_plans import (
    BrokerRow,
    PartitionRow,
    election_result,
    placement,
    plan_election,
)
from frontend.views.base import (
    form_view,
    login_required,
    principal_required,
    render_admin,
    render_page,
    topic_visibility,
)
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed, refused
from frontend.writes import RpcAnswer, answer_problems, refusal_status, rpc_call
from replicas.selectors import partition_list, topic_get

SECTION = "topics"


# --- create ------------------------------------------------------------------------------
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
        return cls(_cluster_defaults(stored), _broker_rows(), stored)

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


def _broker_rows() -> list[BrokerRow]:
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


# --- the topic the action is about ----------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class TopicRef:
    name: str
    partition_count: int
    topic_id: str = ""  # "" : the topic is gone


def _topic_ref(name: str) -> TopicRef:
    """The topic as it is now (a topic gone meanwhile has no partitions)."""
    topic = topic_get(name=name)
    if topic is None:
        return TopicRef(name, 0)
    return TopicRef(name, topic.partition_count, topic.topic_id)


def _topic_or_refusal(request: HttpRequest, name: str) -> TopicRef | HttpResponse:
    """The topic, if the principal may describe it (else 403, as the topic page) and it
    exists (else 404)."""
    visible = topic_visibility(request)
    if visible is not None and not visible(name):
        return render_page(
            request,
            title="Not authorized",
            section=SECTION,
            fragment="frontend/partials/forbidden.html",
            context={
                "message": f"Not authorized to describe topic {name}.",
                "requirement": "Topic actions need DESCRIBE on the TOPIC resource to be shown.",
            },
            status=403,
        )
    topic = topic_get(name=name)
    if topic is None:
        return render_page(
            request,
            title="Topic not found",
            section=SECTION,
            fragment="frontend/partials/not_found.html",
            context={"kind": "topic", "key": name},
            status=404,
        )
    return TopicRef(topic.name, topic.partition_count, topic.topic_id)


def _topic_url(name: str) -> str:
    return reverse("frontend:topic-detail", args=[name])


# --- delete --------------------------------------------------------------------------------
def delete_confirmation(topic: TopicRef) -> Confirmation:
    return Confirmation(
        title=f"Delete topic {topic.name}?",
        action=reverse("frontend:topic-delete", args=[topic.name]),
        button="Delete the topic",
        back_url=_topic_url(topic.name),
        consequences=[
            f"Its {topic.partition_count} partitions and every message in them are deleted "
            "from every broker; this cannot be undone.",
            "Producers and consumers of it get UNKNOWN_TOPIC_OR_PARTITION; a producer with "
            "auto-creation may create it again, empty.",
            "Its configs go with it. ACLs naming it stay, as Kafka keeps them.",
        ],
        typed=topic.name,
        loud=True,
    )


def _delete_problems(answer: RpcAnswer) -> list[KafkaProblem]:
    return answer_problems(answer, "responses", lambda i, item: f"TOPIC {item.get('name')}")


@principal_required
def _topic_delete_confirm(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_or_refusal(request, name)
    if isinstance(topic, HttpResponse):
        return topic
    return confirm_page(request, delete_confirmation(topic), section=SECTION)


@login_required
def _topic_delete_submit(request: HttpRequest, name: str) -> HttpResponse:
    confirmation = delete_confirmation(_topic_ref(name))
    if not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section=SECTION)
    answer = rpc_call(request, "DeleteTopics", {"topic_names": [name]})
    problems = _delete_problems(answer)
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    messages.success(request, f"Deleted topic {name}.")
    return HttpResponseRedirect(reverse("frontend:topic-list"))


# --- add partitions ------------------------------------------------------------------------
def partitions_confirmation(topic: TopicRef, form: AddPartitionsForm) -> Confirmation:
    return Confirmation(
        title=f"Add partitions to {topic.name}?",
        action=reverse("frontend:topic-partitions", args=[topic.name]),
        button="Add the partitions",
        back_url=_topic_url(topic.name),
        consequences=[
            f"{topic.name} has {topic.partition_count} partitions. Partitions are never removed "
            "again: only deleting the topic takes them away.",
            "Messages with a key go to the key's hash modulo the partition count: after the "
            "change, a key's new messages may land in another partition than its old ones, so "
            "per-key order across the change is lost.",
            "The new partitions are placed as a new topic's are (rack-aware, on unfenced "
            "brokers), with the topic's replication factor.",
        ],
        form=form,
    )


@principal_required
def _topic_partitions_confirm(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_or_refusal(request, name)
    if isinstance(topic, HttpResponse):
        return topic
    form = AddPartitionsForm(initial={"count": topic.partition_count + 1})
    return confirm_page(request, partitions_confirmation(topic, form), section=SECTION)


@login_required
def _topic_partitions_submit(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_ref(name)
    form = AddPartitionsForm(request.POST)
    confirmation = partitions_confirmation(topic, form)
    if not form.is_valid() or not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section=SECTION)
    count = form.cleaned_data["count"]
    answer = rpc_call(
        request,
        "CreatePartitions",
        {"topics": [{"name": name, "count": count, "assignments": None}], "validate_only": False},
    )
    problems = answer_problems(answer, "results", lambda i, item: f"TOPIC {item.get('name')}")
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    messages.success(request, f"{name} now has {count} partitions.")
    return HttpResponseRedirect(_topic_url(name))


# --- elections -----------------------------------------------------------------------------
UNCLEAN = "UNCLEAN"
PREFERRED = "PREFERRED"


def _partition_rows(topic_id: str, partition: int | None) -> list[PartitionRow]:
    """The topic's partitions as the projection has them, in one query."""
    rows = partition_list(topic_id=topic_id)
    if partition is not None:
        rows = rows.filter(partition_index=partition)
    return [
        PartitionRow(index, leader, tuple(replicas), tuple(isr), tuple(offline), canary)
        for index, leader, replicas, isr, offline, canary in rows.values_list(
            "partition_index", "leader", "replicas", "isr", "offline_replicas", "is_canary"
        )
    ]


def _election_plan(topic: TopicRef, election_type: str, partition: int | None) -> dict[str, Any]:
    """The preview a confirmation shows: what the controller would answer for each partition
    now (from the partitions' leader, replicas and ISR and the brokers' states; no write)."""
    brokers = {b.broker_id: b for b in _broker_rows()}
    rows = _partition_rows(topic.topic_id, partition) if topic.topic_id else []
    plan = plan_election(topic.name, rows, brokers, election_type)
    return {"plan": plan, "groups": plan.groups(brokers), "mode": "preview"}


def election_confirmation(
    topic: TopicRef,
    election_type: str,
    form: ElectionForm,
    preview: Mapping[str, Any] | None = None,
) -> Confirmation:
    unclean = election_type == UNCLEAN
    url = reverse("frontend:topic-elect", args=[topic.name])
    if unclean:
        consequences = [
            "For a partition without a leader, a replica outside the ISR may become leader: "
            "messages it never received are lost for good, and consumers may see offsets "
            "go back.",
            "Use it only when the ISR's replicas are gone and availability matters more than "
            "the data.",
        ]
    else:
        consequences = [
            "Each partition whose first replica is in the ISR but not leading gets it back as "
            "leader (Kafka's preferred leader election); nothing is lost.",
            "Clients of a moved partition reconnect to its new leader; partitions already "
            "led by their preferred replica are left alone.",
        ]
    return Confirmation(
        title=f"{'UNCLEAN' if unclean else 'Preferred'} leader election on {topic.name}?",
        action=f"{url}?type={election_type}",
        button="Run the unclean election" if unclean else "Elect the preferred leaders",
        back_url=_topic_url(topic.name),
        consequences=consequences,
        fields={"election_type": election_type},
        typed=topic.name if unclean else "",
        loud=unclean,
        form=form,
        preview_template="frontend/partials/topic_elect_plan.html" if preview else "",
        preview=preview,
    )


def _election_type(request: HttpRequest) -> str:
    asked = request.GET.get("type") or request.POST.get("election_type")
    return UNCLEAN if asked == UNCLEAN else PREFERRED


@principal_required
def _topic_elect_confirm(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_or_refusal(request, name)
    if isinstance(topic, HttpResponse):
        return topic
    asked = request.GET.get("partition", "")
    partition = int(asked) if asked.isdigit() else None
    form = ElectionForm(initial={"partition": partition})
    election_type = _election_type(request)
    preview = _election_plan(topic, election_type, partition)
    confirmation = election_confirmation(topic, election_type, form, preview)
    return confirm_page(request, confirmation, section=SECTION)


@login_required
def _topic_elect_submit(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_ref(name)
    form = ElectionForm(request.POST)
    election_type = _election_type(request)
    confirmation = election_confirmation(topic, election_type, form)
    if not form.is_valid() or not is_confirmed(request, confirmation):
        partition = form.cleaned_data.get("partition") if form.is_valid() else None
        preview = _election_plan(topic, election_type, partition)
        confirmation = election_confirmation(topic, election_type, form, preview)
        return ask_again(request, confirmation, section=SECTION)
    partition = form.cleaned_data["partition"]
    partitions = list(range(topic.partition_count)) if partition is None else [partition]
    answer = rpc_call(
        request,
        "ElectLeaders",
        {
            "election_type": election_type,
            "topic_partitions": [{"topic": name, "partitions": partitions}],
        },
    )
    problems = answer_problems(answer)
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    brokers = {b.broker_id: b for b in _broker_rows()}
    now = _topic_ref(name)
    rows = {
        r.partition: r for r in (_partition_rows(now.topic_id, partition) if now.topic_id else [])
    }
    result = election_result(name, election_type, _answered(answer), rows, brokers)
    if result.not_possible:
        # Not a wall of errors: a summary, grouped by reason and broker, the details folded.
        return render_admin(
            request,
            title=f"{election_type.capitalize()} election on {name}",
            section=SECTION,
            fragment="frontend/partials/topic_elect_result.html",
            context={
                "topic": name,
                "plan": result,
                "groups": result.groups(brokers),
                "mode": "result",
                "election_type": election_type,
                "back_url": _topic_url(name),
                "again_url": f"{reverse('frontend:topic-elect', args=[name])}?type={election_type}",
            },
        )
    text = f"{election_type.capitalize()} election on {name}: {result.elected} partition(s) elected"
    if result.by_broker:
        text += " (" + ", ".join(f"to broker {b}: {n}" for b, n in result.by_broker) + ")"
    if result.not_needed:
        text += f", {result.not_needed} needed no election"
    messages.success(request, text + ".")
    return HttpResponseRedirect(_topic_url(name))


def _answered(answer: RpcAnswer) -> dict[int, tuple[int, str]]:
    """An ElectLeaders answer's partitions: index -> (error code, message)."""
    found: dict[int, tuple[int, str]] = {}
    for topic in answer.data.get("replica_election_results") or []:
        for result in topic.get("partition_result") or []:
            found[int(result["partition_id"])] = (
                int(result.get("error_code") or 0),
                str(result.get("error_message") or ""),
            )
    return found


topic_delete_view = form_view(_topic_delete_confirm, _topic_delete_submit)


topic_partitions_view = form_view(_topic_partitions_confirm, _topic_partitions_submit)


topic_elect_view = form_view(_topic_elect_confirm, _topic_elect_submit)
