"""The balancer's RPCs (the house's own: Kafka leaves planning to others): create a plan to
preview, execute it, cancel it. ALTER on the cluster, never from a broker principal. Executing
a plan is audited once, naming the plan and every partition it moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from balancer import services
from balancer.api.serializers import (
    BalancePlanIdSerializer,
    CreateBalancePlanSerializer,
    ExecuteBalancePlanSerializer,
)
from balancer.models import BalancePlan
from controlplane.api.responses import INT, NSTR, STR, arr, kafka, obj
from controlplane.controller.acls.bindings import AclOperation
from controlplane.rpc import Caller, cluster, register

Body = dict[str, Any]
MOVE = obj(topic=STR, partition=INT, before=arr(INT), after=arr(INT))
PLAN_FIELDS: dict[str, Any] = dict(
    plan_id=INT,
    goal=STR,
    broker_id={"type": "integer", "nullable": True},
    state=STR,
    message=STR,
    moves_total=INT,
    moves=arr(MOVE),
    skew_before={"type": "object"},
    skew_after={"type": "object"},
    options={"type": "object"},
    progress={"type": "object"},
    requested_by=STR,
    executed_by=NSTR,
    created_ms=INT,
    started_ms={"type": "integer", "nullable": True},
    finished_ms={"type": "integer", "nullable": True},
)
PLAN = obj("plan_id", "goal", "state", **PLAN_FIELDS)  # a read's answer
ANSWER = kafka("plan_id", "goal", "state", **PLAN_FIELDS)  # an RPC's: Kafka's error fields too


def plan_answer(plan: BalancePlan, *, with_moves: bool = True) -> Body:
    answer: Body = {
        "plan_id": plan.pk,
        "goal": plan.goal,
        "broker_id": plan.broker_id,
        "state": plan.state,
        "message": plan.message,
        "moves_total": plan.moves_total,
        "skew_before": plan.skew_before,
        "skew_after": plan.skew_after,
        "options": plan.options,
        "progress": plan.progress,
        "requested_by": plan.requested_by,
        "executed_by": plan.executed_by or None,
        "created_ms": plan.created_ms,
        "started_ms": plan.started_ms,
        "finished_ms": plan.finished_ms,
    }
    if with_moves:
        answer["moves"] = plan.moves
    return answer


OK: Body = {"error_code": 0, "error_message": None}


def create_plan(body: Body, caller: Caller) -> Body:
    plan = services.plan_create(
        goal=body["goal"], broker_id=body.get("broker_id"), requested_by=caller.name
    )
    return {**OK, **plan_answer(plan)}


def execute_plan(body: Body, caller: Caller) -> Body:
    options = {k: body.get(k) for k in ("batch_size", "concurrency", "throttle", "unregister")}
    plan = services.plan_execute(plan_id=body["plan_id"], options=options, executed_by=caller.name)
    return {**OK, **plan_answer(plan)}


def cancel_plan(body: Body, caller: Caller) -> Body:
    return {**OK, **plan_answer(services.plan_cancel(plan_id=body["plan_id"]), with_moves=False)}


def _plan(body: Body, answer: Body) -> tuple[str, str]:
    return "BALANCE_PLAN", str(answer.get("plan_id") or body.get("plan_id") or "(new)")


def _plan_resources(body: Body, answer: Body, top: int, notes: Body) -> Iterable[Body]:
    plan_type, plan_name = _plan(body, answer)
    return [{"resource_type": plan_type, "resource_name": plan_name, "error_code": top}]


def _plan_and_moves(body: Body, answer: Body, top: int, notes: Body) -> Iterable[Body]:
    """The plan, then every partition it moves: one audit row names the whole operation."""
    plan_type, plan_name = _plan(body, answer)
    found = answer.get("moves")
    moves: list[Any] = found if isinstance(found, list) else []
    return [
        {"resource_type": plan_type, "resource_name": plan_name, "error_code": top},
        *(
            {
                "resource_type": "PARTITION",
                "resource_name": f"{m.get('topic')}-{m.get('partition')}",
                "error_code": top,
            }
            for m in moves
            if isinstance(m, dict)
        ),
    ]


CREATE = register(
    "CreateBalancePlan",
    request=CreateBalancePlanSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=create_plan,
    resources=_plan_resources,
    response=ANSWER,
)
EXECUTE = register(
    "ExecuteBalancePlan",
    request=ExecuteBalancePlanSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=execute_plan,
    resources=_plan_and_moves,
    response=ANSWER,
)
CANCEL = register(
    "CancelBalancePlan",
    request=BalancePlanIdSerializer,
    authorize=cluster(AclOperation.ALTER, write=True),
    handler=cancel_plan,
    resources=_plan_resources,
    response=ANSWER,
)
