"""The topic actions: create a topic, delete one (typing its name), add partitions, and
preferred or unclean leader elections for a topic or one partition. Each is the API's own RPC
run as the logged-in principal (`frontend.writes.rpc_call`): validated, authorized, sent to the
controller and audited as the API does it; every destructive one asks first
(`frontend.views.confirm`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from controlplane.controller.errors import Errors
from frontend.forms.topics import AddPartitionsForm, ElectionForm, TopicCreateForm
from frontend.tables.common import KafkaProblem, error_name
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
from replicas.selectors import topic_get

SECTION = "topics"


# --- create ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class TopicPreview:
    """A section the create form shows after a check: what the new topic would be."""

    title: str
    template: str
    context: Mapping[str, Any]


def canary_preview(form: TopicCreateForm, checked: Mapping[str, Any]) -> TopicPreview | None:
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


# What the checked topic would be, beyond CreateTopics' own answer: each function gets the form
# and the validate_only answer for the topic, and answers a section or None.
CREATE_PREVIEWS: list[Callable[[TopicCreateForm, Mapping[str, Any]], TopicPreview | None]] = [
    canary_preview
]


def topic_create_page(
    request: HttpRequest,
    form: TopicCreateForm,
    *,
    problems: list[KafkaProblem] | None = None,
    checked: Mapping[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    previews = []
    if checked is not None:
        previews = [p for make in CREATE_PREVIEWS if (p := make(form, checked)) is not None]
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
        },
        status=status,
        refresh=False,
    )


@principal_required
def _topic_create_form(request: HttpRequest) -> HttpResponse:
    return topic_create_page(request, TopicCreateForm())


@login_required
def _topic_create_submit(request: HttpRequest) -> HttpResponse:
    """CreateTopics; "Check" sends it with validate_only (Kafka's dry run) and shows what the
    topic would be, "Create" creates it."""
    form = TopicCreateForm(request.POST)
    if not form.is_valid():
        return topic_create_page(request, form)
    check = "check" in request.POST
    answer = rpc_call(request, "CreateTopics", form.body(validate_only=check))
    problems = answer_problems(answer, "topics", lambda i, item: f"TOPIC {item.get('name')}")
    if problems:
        return topic_create_page(
            request, form, problems=problems, status=refusal_status(answer, problems)
        )
    (created,) = answer.data["topics"]
    if check:
        return topic_create_page(request, form, checked=created)
    messages.success(
        request,
        f"Created topic {created['name']}: {created.get('num_partitions')} partitions, "
        f"replication factor {created.get('replication_factor')}.",
    )
    return HttpResponseRedirect(reverse("frontend:topic-detail", args=[created["name"]]))


topic_create_view = form_view(_topic_create_form, _topic_create_submit)


# --- the topic the action is about ----------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class TopicRef:
    name: str
    partition_count: int


def _topic_ref(name: str) -> TopicRef:
    """The topic as it is now (a topic gone meanwhile has no partitions)."""
    topic = topic_get(name=name)
    return TopicRef(name, topic.partition_count if topic is not None else 0)


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
    return TopicRef(topic.name, topic.partition_count)


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


def election_confirmation(topic: TopicRef, election_type: str, form: ElectionForm) -> Confirmation:
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
    )


def _election_type(request: HttpRequest) -> str:
    asked = request.GET.get("type") or request.POST.get("election_type")
    return UNCLEAN if asked == UNCLEAN else PREFERRED


@principal_required
def _topic_elect_confirm(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_or_refusal(request, name)
    if isinstance(topic, HttpResponse):
        return topic
    partition = request.GET.get("partition", "")
    form = ElectionForm(initial={"partition": partition if partition.isdigit() else None})
    confirmation = election_confirmation(topic, _election_type(request), form)
    return confirm_page(request, confirmation, section=SECTION)


@login_required
def _topic_elect_submit(request: HttpRequest, name: str) -> HttpResponse:
    topic = _topic_ref(name)
    form = ElectionForm(request.POST)
    election_type = _election_type(request)
    confirmation = election_confirmation(topic, election_type, form)
    if not form.is_valid() or not is_confirmed(request, confirmation):
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
    problems, elected, not_needed = _election_outcome(answer)
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    text = f"{election_type.capitalize()} election on {name}: {elected} partition(s) elected"
    if not_needed:
        text += f", {not_needed} needed no election"
    messages.success(request, text + ".")
    return HttpResponseRedirect(_topic_url(name))


def _election_outcome(answer: RpcAnswer) -> tuple[list[KafkaProblem], int, int]:
    """The errors of an ElectLeaders answer (ELECTION_NOT_NEEDED is no error: that partition
    is led as asked already), and how many partitions were elected and needed none."""
    problems = answer_problems(answer)
    if problems:
        return problems, 0, 0
    elected = not_needed = 0
    found: list[KafkaProblem] = []
    for topic in answer.data.get("replica_election_results") or []:
        for result in topic.get("partition_result") or []:
            code = int(result.get("error_code") or 0)
            if code == Errors.NONE:
                elected += 1
            elif code == Errors.ELECTION_NOT_NEEDED:
                not_needed += 1
            else:
                found.append(
                    KafkaProblem(
                        error_code=code,
                        error=error_name(code),
                        message=str(result.get("error_message") or ""),
                        subject=f"{topic.get('topic')}-{result.get('partition_id')}",
                    )
                )
    return found, elected, not_needed


topic_delete_view = form_view(_topic_delete_confirm, _topic_delete_submit)


topic_partitions_view = form_view(_topic_partitions_confirm, _topic_partitions_submit)


topic_elect_view = form_view(_topic_elect_confirm, _topic_elect_submit)
