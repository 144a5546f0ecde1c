"""The actions on an existing topic: delete it (typing its name), add partitions, and preferred
or unclean leader elections for the topic or one partition. Each is the API's own RPC run as the
logged-in principal (`frontend.writes.rpc_call`): validated, authorized, sent to the controller
and audited as the API does it; every one asks first (`frontend.views.confirm`). Creating a
topic: frontend.views.topic_create."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from frontend.forms.topics import AddPartitionsForm, ElectionForm
from frontend.tables.common import KafkaProblem
from frontend.tables.topic_plans import PartitionRow, election_result, plan_election
from frontend.views.base import (
    form_view,
    login_required,
    principal_required,
    render_admin,
    render_page,
    topic_visibility,
)
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed, refused
from frontend.views.topic_create import SECTION, broker_rows
from frontend.writes import RpcAnswer, answer_problems, rpc_call
from replicas.selectors import partition_list, topic_get


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
    brokers = {b.broker_id: b for b in broker_rows()}
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
    brokers = {b.broker_id: b for b in broker_rows()}
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
