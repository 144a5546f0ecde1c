"""The controller's broker RPCs: BrokerRegistration, BrokerHeartbeat, UnregisterBroker,
AllocateProducerIds, and the controller's own FenceStaleBrokers (brokers whose session
lapsed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.brokers import control, fencing
from controlplane.controller.brokers.producer_ids import allocate_producer_ids
from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import Listener
from controlplane.controller.result import ControllerResult


def _broker_registration(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    request = control.BrokerRegistrationRequest(
        broker_id=payload["broker_id"],
        cluster_id=payload["cluster_id"],
        incarnation_id=payload["incarnation_id"],
        listeners=tuple(Listener(**item) for item in payload.get("listeners", ())),
        rack=payload.get("rack"),
        pod=payload.get("pod") or control.BROKER_POD,
        log_dirs=tuple(payload.get("log_dirs", ())),
        software_version=payload.get("software_version"),
        features=tuple(
            (str(f["name"]), int(f["min_supported_version"]), int(f["max_supported_version"]))
            for f in payload.get("features", ())
        ),
    )
    return control.register_broker(
        view,
        request,
        sessions=env.sessions,
        now_ms=env.now_ms,
        session_timeout_ms=env.session_timeout_ms,
        configs=env.configs(view),
    )


def _broker_heartbeat(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    request = control.heartbeat_request(payload)
    return control.process_heartbeat(
        view,
        request,
        sessions=env.sessions,
        configs=env.configs(view),
        # A broker's own state change (a controlled shutdown, or asking to be fenced): one
        # operation, bounded as Kafka bounds one.
        max_moves=env.max_shutdown_changes,
    )


def _fence_stale_brokers(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return fencing.fence_stale_brokers(
        view,
        sessions=env.sessions,
        now_ms=env.now_ms,
        session_timeout_ms=env.session_timeout_ms,
        activated_ms=env.activated_ms,
        configs=env.configs(view),
        hold_off=fencing.FencingHoldOff(
            ingress_overload=env.ingress_overload,
            since_ms=env.fencing_hold_off_since_ms,
            max_ms=env.fencing_hold_off_max_ms,
            min_brokers=env.fencing_hold_off_min_brokers,
        ),
        max_moves=env.max_partition_changes,
        continue_moves=bool(payload.get("continue_moves")),
    )


def _unregister_broker(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return control.unregister_broker(view, payload["broker_id"], env.configs(view))


def _allocate_producer_ids(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return allocate_producer_ids(view, int(payload["broker_id"]), int(payload["broker_epoch"]))


HANDLERS: Mapping[str, Handler] = {
    "AllocateProducerIds": _allocate_producer_ids,
    "BrokerRegistration": _broker_registration,
    "BrokerHeartbeat": _broker_heartbeat,
    "FenceStaleBrokers": _fence_stale_brokers,
    "UnregisterBroker": _unregister_broker,
}
# Retries of these are naturally idempotent: their outcome follows from state alone.
STATE_IDEMPOTENT_APIS = frozenset({"BrokerHeartbeat", "FenceStaleBrokers"})
