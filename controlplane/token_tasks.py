"""Thin Celery tasks for delegation tokens."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from controlplane.runtime.conversation import RequestContext
from controlplane.services import controller_call


@shared_task(name="controlplane.token_tasks.expire_delegation_tokens")  # type: ignore[untyped-decorator]
def expire_delegation_tokens() -> dict[str, Any]:
    """Celery beat, hourly: Kafka's sweep of delegation tokens whose expiry has passed."""
    return controller_call(api="ExpireDelegationTokens", payload={}, context=RequestContext())
