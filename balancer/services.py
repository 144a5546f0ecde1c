"""The balancer's writes: a plan made and previewed, executed as a background job (Celery; a
thread embedded) in bounded batches of AlterPartitionReassignments with a limit on the
partitions moving at once and Kafka's replication throttle, followed, and cancelled.

One plan runs at a time (a unique index on the running plan; a second is refused with
REASSIGNMENT_IN_PROGRESS). The job's moves reach the controller as the principal who executed
the plan; the plan is audited once, as the ExecuteBalancePlan that names its moves.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from balancer import selectors
from balancer.models import RUNNING_STATES, TRANSITIONS, BalancePlan, PlanState
from balancer.planner import Plan, PlanRefused, plan_drain, plan_fill, plan_rebalance
from controlplane.controller.errors import ApiError, Errors
from controlplane.runtime.executor import executor
from controlplane.runtime.lease import now_ms

logger = logging.getLogger(__name__)

RUN_TASK = "balancer.tasks.execute_plan"
STALLED_MS = 120_000  # a running plan whose job said nothing this long has lost its job
DEFAULT_OPTIONS: dict[str, Any] = {
    "batch_size": 100,  # partitions per AlterPartitionReassignments
    "concurrency": 500,  # partitions moving at once at most
    "throttle": None,  # bytes/s per broker for the moving replicas (Kafka's throttle), or none
    "unregister": False,  # drain: unregister the broker once it holds nothing and is stopped
}


class PlanNotFound(ApiError):
    """No plan of that id: RESOURCE_NOT_FOUND, HTTP 404."""

    http_status = 404

    def __init__(self, plan_id: int) -> None:
        super().__init__(Errors.RESOURCE_NOT_FOUND, f"No balance plan {plan_id}.")


class BrokerNotFound(ApiError):
    """A drain or a fill of a broker that is not registered: BROKER_ID_NOT_REGISTERED, 404."""

    http_status = 404

    def __init__(self, message: str) -> None:
        super().__init__(Errors.BROKER_ID_NOT_REGISTERED, message)


class PlanConflict(ApiError):
    """A well-formed request the plan's or the cluster's state refuses (a plan already run, a
    broker that cannot be drained): INVALID_REQUEST with HTTP 409, as a retry may succeed once
    the state has changed."""

    http_status = 409

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_REQUEST, message)


def plan_create(*, goal: str, broker_id: int | None, requested_by: str) -> BalancePlan:
    """A plan of `goal` from the cluster as it is now, stored to be previewed (PROPOSED)."""
    plan = _planned(goal, broker_id)
    return BalancePlan.objects.create(
        goal=plan.goal,
        broker_id=plan.broker_id,
        message=plan.message,
        moves=[m.as_dict() for m in plan.moves],
        moves_total=len(plan.moves),
        skew_before=_json_keys(plan.skew_before),
        skew_after=_json_keys(plan.skew_after),
        requested_by=requested_by,
        created_ms=now_ms(),
        progress={"done": 0, "remaining": len(plan.moves)},
    )


def _planned(goal: str, broker_id: int | None) -> Plan:
    brokers = selectors.planning_brokers()
    partitions = list(selectors.planning_partitions())
    try:
        if goal == "rebalance":
            return plan_rebalance(brokers, partitions)
        if broker_id is None:
            raise ApiError(Errors.INVALID_REQUEST, f"A {goal} plan names its broker: broker_id.")
        if goal == "drain":
            return plan_drain(brokers, partitions, broker_id)
        if goal == "fill":
            return plan_fill(brokers, partitions, broker_id)
    except PlanRefused as refused:
        if refused.unknown_broker:
            raise BrokerNotFound(str(refused)) from None
        raise PlanConflict(str(refused)) from None
    raise ApiError(Errors.INVALID_REQUEST, f"Unknown goal {goal!r}: rebalance, drain or fill.")


def _json_keys(skew: dict[str, Any]) -> dict[str, Any]:
    """Skew figures with broker ids as JSON keys (strings), as they are stored and answered."""
    return {
        k: ({str(b): n for b, n in v.items()} if isinstance(v, dict) else v)
        for k, v in skew.items()
    }


def plan_execute(*, plan_id: int, options: dict[str, Any], executed_by: str) -> BalancePlan:
    """Start executing a previewed plan as a background job; refused while another runs."""
    _fail_stalled()
    plan = _require(plan_id)
    if plan.state != PlanState.PROPOSED:
        raise PlanConflict(f"Plan {plan_id} is {plan.state}: only a PROPOSED plan runs.")
    if not plan.moves_total:
        raise PlanConflict(f"Plan {plan_id} has nothing to move.")
    running = selectors.plan_running()
    if running is not None:
        raise _one_at_a_time(running)
    settings = {**DEFAULT_OPTIONS, **{k: v for k, v in options.items() if v is not None}}
    if "throttle" in options:
        settings["throttle"] = options["throttle"]
    try:
        with transaction.atomic():
            updated = BalancePlan.objects.filter(pk=plan_id, state=PlanState.PROPOSED).update(
                state=PlanState.EXECUTING,
                running=True,
                options=settings,
                executed_by=executed_by,
                updated_ms=now_ms(),
            )
            if not updated:
                raise PlanConflict(f"Plan {plan_id} is no longer PROPOSED.")
    except IntegrityError:  # another plan started between our look and our update
        running = selectors.plan_running()
        raise _one_at_a_time(running) from None
    executor().send_task(RUN_TASK, plan_id, long_running=True)  # once the plan is EXECUTING
    return _require(plan_id)


def _one_at_a_time(running: BalancePlan | None) -> ApiError:
    which = f"Plan {running.pk} ({running.goal})" if running is not None else "Another plan"
    return ApiError(
        Errors.REASSIGNMENT_IN_PROGRESS,
        f"{which} is executing: one plan runs at a time. Cancel it or wait for it to finish.",
    )


def plan_cancel(*, plan_id: int) -> BalancePlan:
    """A PROPOSED plan is CANCELLED; an executing one is asked to stop (its job cancels the
    moves in progress, Kafka's cancel: each goes back to its replicas)."""
    plan = _require(plan_id)
    if plan.state == PlanState.PROPOSED:
        _transition(plan, PlanState.CANCELLED, finished_ms=now_ms(), message="Cancelled unrun.")
    elif plan.state == PlanState.EXECUTING:
        _transition(plan, PlanState.CANCELLING)
    elif plan.state != PlanState.CANCELLING:
        raise PlanConflict(f"Plan {plan_id} is {plan.state}: nothing to cancel.")
    return _require(plan_id)


def _require(plan_id: int) -> BalancePlan:
    plan = selectors.plan_get(plan_id=plan_id)
    if plan is None:
        raise PlanNotFound(plan_id)
    return plan


def _transition(plan: BalancePlan, target: str, **fields: Any) -> bool:
    """Move `plan` to `target` if its state machine allows it from the state it is in now (an
    update conditioned on that state: a concurrent change wins, and this one says False)."""
    if target not in TRANSITIONS[plan.state]:
        raise PlanConflict(f"Plan {plan.pk} cannot go from {plan.state} to {target}.")
    running = target in RUNNING_STATES
    changed = BalancePlan.objects.filter(pk=plan.pk, state=plan.state).update(
        state=target, running=running, updated_ms=now_ms(), **fields
    )
    if changed:
        plan.state = target
    return bool(changed)


def _fail_stalled() -> None:
    """A running plan whose job said nothing for STALLED_MS (its worker died) is FAILED, so
    another may run; the moves it had started finish or stay on the controller, where
    ListPartitionReassignments shows them and a cancel reverts them."""
    running = selectors.plan_running()
    if running is None:
        return
    heard = running.updated_ms or running.started_ms or running.created_ms
    if now_ms() - heard > STALLED_MS:
        _transition(
            running,
            PlanState.FAILED,
            finished_ms=now_ms(),
            message=f"Its job stopped answering for {STALLED_MS // 1000} s.",
        )


def plan_run(*, plan_id: int) -> str:
    """The background job: run the plan's moves to the end, or until it is cancelled."""
    from balancer.execution import PlanRun

    claimed = BalancePlan.objects.filter(
        pk=plan_id, state=PlanState.EXECUTING, started_ms__isnull=True
    ).update(started_ms=now_ms(), updated_ms=now_ms())
    if not claimed:
        logger.info("plan %d: not EXECUTING or run already", plan_id)
        return "NOT_RUN"
    plan = _require(plan_id)
    try:
        PlanRun(plan).run()
    except Exception as error:  # the plan stops with its error; never a silent job death
        logger.exception("plan %d failed", plan_id)
        plan.refresh_from_db()
        if plan.state in RUNNING_STATES:
            _transition(plan, PlanState.FAILED, finished_ms=now_ms(), message=f"Failed: {error}")
    plan.refresh_from_db()
    return str(plan.state)
