from __future__ import annotations

from typing import Any

from celery import shared_task

from controlplane.runtime.controller import get_runtime


@shared_task(name="controlplane.tasks.controller_event")  # type: ignore[untyped-decorator]
def controller_event(event: dict[str, Any]) -> dict[str, Any]:
    """One controller event, on the active controller (the only consumer of this queue)."""
    return get_runtime().submit(event)
