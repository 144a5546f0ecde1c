"""Broker actions: unregistering a broker (Kafka's UnregisterBroker), through the API, after the
confirmation every destructive action asks for."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from brokers.selectors import broker_get
from frontend.views.base import form_view, login_required, principal_required, render_page
from frontend.views.confirm import Confirmation, ask_again, confirm_page, is_confirmed, refused
from frontend.writes import answer_problems, rpc_call

SECTION = "brokers"


def unregister_confirmation(broker_id: int, state: str) -> Confirmation:
    return Confirmation(
        title=f"Unregister broker {broker_id}?",
        action=reverse("frontend:broker-unregister", args=[broker_id]),
        button="Unregister the broker",
        back_url=reverse("frontend:broker-detail", args=[broker_id]),
        consequences=[
            f"Broker {broker_id} ({state}) leaves every ISR and every partition it leads gets "
            "a new leader from its ISR; a partition it alone was in sync for goes without a "
            "leader.",
            "Its registration is removed: a broker process still running under this id gets "
            "STALE_BROKER_EPOCH and registers again, fenced until it catches up.",
            "Meant for a broker taken out of the cluster for good (Kafka's "
            "kafka-cluster.sh unregister).",
        ],
    )


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
    return confirm_page(request, unregister_confirmation(broker_id, broker.state), section=SECTION)


@login_required
def _unregister_submit(request: HttpRequest, broker_id: int) -> HttpResponse:
    broker = broker_get(broker_id=broker_id)
    confirmation = unregister_confirmation(broker_id, broker.state if broker else "gone")
    if not is_confirmed(request, confirmation):
        return ask_again(request, confirmation, section=SECTION)
    answer = rpc_call(request, "UnregisterBroker", {"broker_id": broker_id})
    problems = answer_problems(answer)
    if problems:
        return refused(request, confirmation, section=SECTION, answer=answer, problems=problems)
    messages.success(request, f"Unregistered broker {broker_id}.")
    return HttpResponseRedirect(reverse("frontend:broker-list"))


broker_unregister_view = form_view(_unregister_confirm, _unregister_submit)
