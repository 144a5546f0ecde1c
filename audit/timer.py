"""Embedded (no Celery beat): the active controller's timer starts the periodic export every
CP_AUDIT_EXPORT_INTERVAL_SECONDS, in a thread of its own so that the timer goes on."""

from __future__ import annotations

from django.conf import settings

from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.executor import executor
from controlplane.runtime.lease import now_ms

PERIODIC_EXPORT_TASK = "audit.tasks.export_audit_periodically"
_last_export_ms: dict[str, int] = {}


def export_when_due(runtime: ControllerRuntime) -> None:
    jobs = executor()
    if not jobs.in_process or settings.CP_AUDIT_EXPORT_INTERVAL_SECONDS <= 0:
        return  # Celery beat sends audit.tasks.export_audit_periodically
    now = now_ms()
    last = _last_export_ms.setdefault(runtime.node_id, now)
    if now - last >= settings.CP_AUDIT_EXPORT_INTERVAL_SECONDS * 1000:
        _last_export_ms[runtime.node_id] = now
        jobs.send_task(PERIODIC_EXPORT_TASK, long_running=True)
