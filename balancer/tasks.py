"""Thin Celery tasks: each calls a service."""

from __future__ import annotations

from celery import shared_task

from balancer import services


@shared_task(name="balancer.tasks.execute_plan")  # type: ignore[untyped-decorator]
def execute_plan(plan_id: int) -> str:
    """A balance plan's moves, to the end or until it is cancelled (long: minutes to hours)."""
    return services.plan_run(plan_id=plan_id)
