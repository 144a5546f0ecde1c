"""Broker actions: unregistering a broker (Kafka's UnregisterBroker), through the API, after the
confirmation every destructive action asks for."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from brokers.selectors import broker_get
from frontend.views.base import form_view, login_required, principal_required, render_page
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed, refused
from frontend.writes import answer_problems, rpc_call
from replicas.selectors import broker_replica_counts

SECTION = "brokers"


def unregister_confirmation(
    broker_id: int, state: str, counts: Mapping[str, int] | None = None
) -> Confirmation:
    """Unregistering asks for the broker's id typed, always. A live broker (heartbeating: not
    FENCED) is warned of loudly with what it leads: Kafka's UnregisterBroker is for a broker
    that is gone, and one still running leaves every ISR at once."""
    leads = int((counts or {}).get("leaders") or 0)
    replicas = int((counts or {}).get("total") or 0)
    live = state != "FENCED" and state != "gone"
    consequences = [
        f"Broker {broker_id} ({state}) leaves every ISR and every partition it leads gets "
        "a new leader from its ISR; a partition it alone was in sync for goes without a "
        "leader.",
        "Its registration is removed: a broker process still running under this id gets "
        "STALE_BROKER_EPOCH and registers again, fenced until it catches up.",
        "Meant for a broker taken out of the cluster for good (Kafka's "
        "kafka-cluster.sh unregister).",
    ]
    if live:
        consequences.insert(
            0,
            f"Broker {broker_id} is alive: it heartbeats and leads {leads} partition"
            f"{'' if leads == 1 else 's'} ({replicas} replicas). Stop the broker, or move its "
            "partitions away, before unregistering it: every one of them moves at once.",
        )
    return Confirmation(
        title=f"Unregister broker {broker_id}?",
        action=reverse("frontend:broker-unregister", args=[broker_id]),
        button="Unregister the broker",
        back_url=reverse("frontend:broker-detail", args=[broker_id]),
        consequences=consequences,
        facts=[
            ("State", state),
            ("Leads", f"{leads} partition{'' if leads == 1 else 's'}"),
            ("Replicas", str(replicas)),
        ],
        typed=str(broker_id),
        loud=live,
    )


def _counts(broker_id: int) -> dict[str, int]:
    return broker_replica_counts(broker_id=broker_id)


@principal_required
def _unregister_confirm(request: HttpRequest, broker_id: int) -> HttpResponse:
    broker = broker_get(broker_id=broker_id)
    if broker is None:
        return render_page(
            request,
            title="Broker not found",
            section=SECTION,
            fragment="frontend/partials/not_found.html",
            context={"kind": "broker", "key": broker_id},
            status=404,
        )
    confirmation = unregister_confirmation(broker_id, broker.state, _counts(broker_id))
    return confirm_page(request, confirmation, section=SECTION)


@login_required
def _unregister_submit(request: HttpRequest, broker_id: int) -> HttpResponse:
    broker = broker_get(broker_id=broker_id)
    confirmation = unregister_confirmation(
        broker_id, broker.state if broker else "gone", _counts(broker_id)
    )
    if not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section=SECTION)
    answer = rpc_call(request, "UnregisterBroker", {"broker_id": broker_id})
    problems = answer_problems(answer)
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    messages.success(request, f"Unregistered broker {broker_id}.")
    return HttpResponseRedirect(reverse("frontend:broker-list"))


broker_unregister_view = form_view(_unregister_confirm, _unregister_submit)
