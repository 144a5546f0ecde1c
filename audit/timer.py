"""Embedded (no Celery beat): the active controller's timer starts the periodic export every
CP_AUDIT_EXPORT_INTERVAL_SECONDS, in a thread of its own so that the timer goes on."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connection

from controlplane.runtime.controller import TIMER_JOBS, ControllerRuntime
from controlplane.runtime.lease import now_ms

_last_export_ms: dict[str, int] = {}


def export_when_due(runtime: ControllerRuntime) -> None:
    if not settings.EMBEDDED or settings.CP_AUDIT_EXPORT_INTERVAL_SECONDS <= 0:
        return  # Celery beat sends audit.tasks.export_audit_periodically
    now = now_ms()
    last = _last_export_ms.setdefault(runtime.node_id, now)
    if now - last >= settings.CP_AUDIT_EXPORT_INTERVAL_SECONDS * 1000:
        _last_export_ms[runtime.node_id] = now
        threading.Thread(target=_export, name="audit-export-periodic", daemon=True).start()


def _export() -> None:
    from audit.services import audit_export_periodic

    try:
        audit_export_periodic()
    finally:
        connection.close()


TIMER_JOBS.append(export_when_due)
