"""Thin Celery tasks: each calls a service."""

from __future__ import annotations

import threading

from celery import shared_task

from replicas import services


@shared_task(name="replicas.tasks.apply_replica_state_changes")  # type: ignore[untyped-decorator]
def apply_replica_state_changes() -> int:
    """On the controller queue: apply waiting AlterReplicaState reports in one batch."""
    with _one_at_a_time:  # consumers run in threads: two would read the same waiting reports
        return services.replica_state_apply_pending()


_one_at_a_time = threading.Lock()
