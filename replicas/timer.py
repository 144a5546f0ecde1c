"""What the active controller's timer does for replicas: apply waiting AlterReplicaState reports
(in case a task message was lost) and, embedded (no Celery beat), the preferred-leader rebalance."""

from __future__ import annotations

from django.conf import settings

from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.executor import executor
from controlplane.runtime.lease import now_ms

_last_rebalance_ms: dict[str, int] = {}


def apply_waiting_reports(runtime: ControllerRuntime) -> None:
    from replicas.models import PendingReplicaStateChange
    from replicas.services import replica_state_apply_pending

    if PendingReplicaStateChange.objects.exists():
        replica_state_apply_pending()


def rebalance_when_due(runtime: ControllerRuntime) -> None:
    if not executor().in_process:
        return  # Celery beat sends replicas.tasks.rebalance_leaders
    interval_ms = settings.CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS * 1000
    now = now_ms()
    last = _last_rebalance_ms.setdefault(runtime.node_id, now)
    if now - last >= interval_ms:
        _last_rebalance_ms[runtime.node_id] = now
        runtime.handle(ControllerEvent("RebalanceLeaders"))
