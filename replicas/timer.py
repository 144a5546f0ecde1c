"""What the active controller's timer does for replicas: apply waiting AlterReplicaState reports
(in case a task message was lost) and the preferred-leader rebalance.

The rebalance is the controller's own periodic work, as Kafka's QuorumController schedules
maybeBalancePartitionLeaders on its own queue: it runs on the active controller in every mode,
never through a background worker, so that leadership converges back to the preferred replicas
whatever happens to Celery or its broker."""

from __future__ import annotations

from django.conf import settings

from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.lease import now_ms

_last_rebalance_ms: dict[str, int] = {}


def apply_waiting_reports(runtime: ControllerRuntime) -> None:
    from replicas.models import PendingReplicaStateChange
    from replicas.services import replica_state_apply_pending

    if PendingReplicaStateChange.objects.exists():
        replica_state_apply_pending()


def rebalance_when_due(runtime: ControllerRuntime) -> None:
    """Every leader.imbalance.check.interval.seconds on the active controller (the
    RebalanceLeaders event writes nothing when every preferred leader leads)."""
    interval_ms = settings.CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS * 1000
    now = now_ms()
    last = _last_rebalance_ms.setdefault(runtime.node_id, now)
    if now - last >= interval_ms:
        _last_rebalance_ms[runtime.node_id] = now
        runtime.handle(ControllerEvent("RebalanceLeaders"))
