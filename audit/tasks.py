"""Thin Celery tasks: each calls a service."""

from __future__ import annotations

from celery import shared_task

from audit import services


@shared_task(name="audit.tasks.export_audit_trail")  # type: ignore[untyped-decorator]
def export_audit_trail(export_id: int) -> str:
    """One export run started from the API or the UI."""
    return str(services.audit_export_execute(export_id=export_id).state)


@shared_task(name="audit.tasks.export_audit_periodically")  # type: ignore[untyped-decorator]
def export_audit_periodically() -> str:
    """Celery beat, every CP_AUDIT_EXPORT_INTERVAL_SECONDS: export what is new."""
    return services.audit_export_periodic()
