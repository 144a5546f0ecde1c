"""The MirrorMaker 2 pages (KIP-710): the flows (a picture of clusters and flows with their
health, and the table of flows), one flow (nodes, leader, worker ids, REST URLs, connectors and
tasks, replicated topics and why, lagging topics, the configuration with its references shown
as references), and pausing or resuming a flow through the API."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from controlplane.runtime.lease import now_ms
from frontend.tables.mirror import (
    config_rows,
    flow_picture,
    flow_row,
    flow_table,
    mirrored_topic_table,
    node_table,
)
from frontend.views.base import login_required, principal_required, render_page, result_page
from frontend.writes import answer_problems, refusal_status, rpc_call
from mirror.selectors import mirror_flow_page, mirror_overview

ACTIONS = {"pause": "PAUSED", "resume": "STARTED"}


@principal_required
def flow_list_view(request: HttpRequest) -> HttpResponse:
    overview = mirror_overview()
    now = now_ms()
    return render_page(
        request,
        title="Mirror flows",
        section="mirror",
        fragment="frontend/partials/mirror_flows.html",
        context={
            **overview,
            "flows": flow_table([flow_row(f, now) for f in overview["flows"]]),
            "picture": flow_picture(overview["clusters"], overview["flows"]),
        },
    )


@principal_required
def flow_detail_view(request: HttpRequest, source: str, target: str) -> HttpResponse:
    page = mirror_flow_page(source=source, target=target)
    if page is None:
        return render_page(
            request,
            title="Flow not found",
            section="mirror",
            fragment="frontend/partials/mirror_not_found.html",
            context={"key": f"{source}->{target}"},
            status=404,
        )
    flow = flow_row(page["flow"], now_ms())
    return render_page(
        request,
        title=f"Flow {source}->{target}",
        section="mirror",
        fragment="frontend/partials/mirror_flow.html",
        context={
            "flow": flow,
            "nodes": node_table(flow),
            "topics": mirrored_topic_table(flow),
            "connector_configs": {
                name: config_rows(config) for name, config in page["connector_configs"].items()
            },
            "worker_config": config_rows(page["worker_config"]),
        },
    )


@require_POST
@login_required
def flow_state_view(request: HttpRequest, source: str, target: str, action: str) -> HttpResponse:
    """Pause or resume every connector of the flow: the API's AlterMirrorTargetState, run as
    the logged-in principal (authorized and audited as the API does)."""
    back = reverse("frontend:mirror-flow", args=[source, target])
    state = ACTIONS.get(action)
    body = {"source": source, "target": target, "state": state or action, "connectors": []}
    answer = rpc_call(request, "AlterMirrorTargetState", body)
    problems = answer_problems(answer)
    if problems:
        return result_page(
            request,
            title=f"Flow {source}->{target} not changed",
            section="mirror",
            problems=problems,
            back_url=back,
            status=refusal_status(answer, problems),
        )
    done = "paused" if state == "PAUSED" else "resumed"
    messages.success(request, f"Flow {source}->{target} {done}.")
    return HttpResponseRedirect(back)
