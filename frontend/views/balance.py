"""The balance pages: the cluster's skew (replicas and preferred leaders per broker), the plans
(a rebalance, a broker drained or filled) with their moves as a diff and their skew before and
after, a plan's execution followed with a progress bar, and its cancel. Plans are made,
executed and cancelled through the balancer's RPCs (`rpc_call`), audited as the API's."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from balancer import selectors
from balancer.models import BalancePlan
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from frontend.views.base import (
    login_required,
    may,
    principal_required,
    render_admin,
    render_page,
)
from frontend.writes import answer_problems, rpc_call
from replicas.selectors import broker_loads

SECTION = "balance"
SECTION_URL = "frontend:balance"
PLANS_SHOWN = 20
MOVES_PAGE_SIZE = 100


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.isascii() and value.isdigit() else None


def _skew_rows() -> list[dict[str, Any]]:
    """Each broker's replicas and preferred leaders now (the controller's health counts)."""
    loads = broker_loads()
    rows = []
    for broker in selectors.planning_brokers():
        load = loads.get(broker.broker_id)
        rows.append(
            {
                "broker_id": broker.broker_id,
                "rack": broker.rack or "—",
                "pod": "canary-broker" if broker.canary else "broker",
                "usable": broker.usable,
                "replicas": getattr(load, "replicas", 0) if load is not None else 0,
                "leaders": getattr(load, "preferred_leaders", 0) if load is not None else 0,
            }
        )
    return rows


def _spread(rows: list[dict[str, Any]], key: str) -> int:
    values = [r[key] for r in rows if r["usable"]]
    return max(values) - min(values) if values else 0


@principal_required
def balance_view(request: HttpRequest) -> HttpResponse:
    rows = _skew_rows()
    return render_page(
        request,
        title="Balance",
        section=SECTION,
        fragment="frontend/partials/balance.html",
        context={
            "brokers": rows,
            "replica_spread": _spread(rows, "replicas"),
            "leader_spread": _spread(rows, "leaders"),
            "running": selectors.plan_running(),
            "plans": list(selectors.plan_list()[:PLANS_SHOWN]),
            "may_plan": may(request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME),
        },
    )


@require_POST
@login_required
def balance_plan_create_view(request: HttpRequest) -> HttpResponse:
    """A plan from the form (goal, and the broker for a drain or fill), then its preview."""
    body: dict[str, Any] = {"goal": request.POST.get("goal", "")}
    broker_id = _int_or_none(request.POST.get("broker_id"))
    if broker_id is not None:
        body["broker_id"] = broker_id
    answer = rpc_call(request, "CreateBalancePlan", body)
    problems = answer_problems(answer)
    if problems:
        for problem in problems:
            messages.error(request, f"{problem.error}: {problem.message}")
        back = request.POST.get("back") or reverse("frontend:balance")
        return HttpResponseRedirect(
            back if back.startswith("/ui/") else reverse("frontend:balance")
        )
    return HttpResponseRedirect(reverse("frontend:balance-plan", args=[answer.data["plan_id"]]))


def _diff_rows(plan: BalancePlan, request: HttpRequest) -> Any:
    page = Paginator(plan.moves, MOVES_PAGE_SIZE).get_page(request.GET.get("page"))
    rows = []
    for move in page.object_list:
        before, after = move["before"], move["after"]
        rows.append(
            {
                "partition": f"{move['topic']}-{move['partition']}",
                "topic": move["topic"],
                "before": before,
                "after": after,
                "leaving": [b for b in before if b not in after],
                "joining": [b for b in after if b not in before],
                "reorder": set(before) == set(after),
            }
        )
    return page, rows


def _skew_table(plan: BalancePlan) -> list[dict[str, Any]]:
    before, after = plan.skew_before or {}, plan.skew_after or {}
    brokers = sorted({*before.get("replicas", {}), *after.get("replicas", {})}, key=int)
    return [
        {
            "broker_id": b,
            "replicas_before": before.get("replicas", {}).get(b, 0),
            "replicas_after": after.get("replicas", {}).get(b, 0),
            "leaders_before": before.get("leaders", {}).get(b, 0),
            "leaders_after": after.get("leaders", {}).get(b, 0),
        }
        for b in brokers
    ]


@principal_required
def balance_plan_view(request: HttpRequest, plan_id: int) -> HttpResponse:
    plan = selectors.plan_get(plan_id=plan_id)
    if plan is None:
        return render_page(
            request,
            title="Plan not found",
            section=SECTION,
            fragment="frontend/partials/not_found.html",
            context={"kind": "balance plan", "key": plan_id},
            status=404,
        )
    page, rows = _diff_rows(plan, request)
    progress = plan.progress or {}
    done = int(progress.get("done", 0))
    return render_admin(
        request,
        title=f"Balance plan {plan_id}",
        section=SECTION,
        fragment="frontend/partials/balance_plan.html",
        context={
            "plan": plan,
            "progress": progress,
            "done": done,
            "percent": round(100 * done / plan.moves_total) if plan.moves_total else 100,
            "skew": _skew_table(plan),
            "moves": rows,
            "page_obj": page,
            "may_plan": may(request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME),
        },
    )


def _run(
    request: HttpRequest, plan_id: int, api: str, body: dict[str, Any], done: str
) -> HttpResponse:
    answer = rpc_call(request, api, {"plan_id": plan_id, **body})
    problems = answer_problems(answer)
    for problem in problems:
        messages.error(request, f"{problem.error}: {problem.message}")
    if not problems:
        messages.success(request, done)
    return HttpResponseRedirect(reverse("frontend:balance-plan", args=[plan_id]))


@require_POST
@login_required
def balance_plan_execute_view(request: HttpRequest, plan_id: int) -> HttpResponse:
    body: dict[str, Any] = {}
    for field in ("batch_size", "concurrency", "throttle"):
        value = _int_or_none(request.POST.get(field))
        if value is not None:
            body[field] = value
    if request.POST.get("unregister") == "on":
        body["unregister"] = True
    return _run(request, plan_id, "ExecuteBalancePlan", body, f"Plan {plan_id} is executing.")


@require_POST
@login_required
def balance_plan_cancel_view(request: HttpRequest, plan_id: int) -> HttpResponse:
    return _run(request, plan_id, "CancelBalancePlan", {}, f"Plan {plan_id}: cancel asked for.")
