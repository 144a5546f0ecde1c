"""Broker lifecycle writes. Everything that changes metadata goes to the controller.

Heartbeats take a fast path: the web node checks the epoch against the brokers table, records the
contact in the session tracker and answers itself when the heartbeat would change nothing; only a
heartbeat that moves the broker's state becomes a controller event (and a metadata record). That
one waits for the controller at most `CP_HEARTBEAT_PATIENCE_MS`: a busy controller's answer is
the broker's state as committed (still fenced, say), and the event is applied in its turn, with
every other heartbeat that queued meanwhile, in one commit. Brokers heartbeat again anyway; one
agent heartbeating for many brokers in turn is never held up by each one's commit.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from brokers.identity import require_registrable_id, require_speaks_for
from brokers.models import Broker
from brokers.projection import registration_from_row
from controlplane.controller.brokers import control as core
from controlplane.controller.errors import Errors
from controlplane.controller.image import BrokerStatus
from controlplane.runtime.conversation import RequestContext
from controlplane.runtime.lease import now_ms
from controlplane.runtime.sessions import session_store
from controlplane.services import broker_call, broker_call_within, controller_call


def broker_register(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    require_speaks_for(context, payload["broker_id"], "BrokerRegistration")
    require_registrable_id(payload["broker_id"])
    # The controller counts the registration as the new incarnation's first contact.
    return broker_call(api="BrokerRegistration", payload=payload, context=context)


def broker_heartbeat(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    require_speaks_for(context, payload["broker_id"], "BrokerHeartbeat")
    request = core.heartbeat_request(payload)
    status = _current_status(request)
    if status is None:
        return _stale_epoch(request)
    # The core's own rule: answered here only what the controller would answer with no records.
    answer = core.heartbeat_fast_answer(status, request)
    if answer is not None:
        return answer
    answer = broker_call_within(
        api="BrokerHeartbeat",
        payload=payload,
        context=context,
        patience_ms=settings.CP_HEARTBEAT_PATIENCE_MS,
    )
    if answer is None:  # the controller is busy: the heartbeat waits in its queue
        return core.heartbeat_response(status, request, status.control_state)
    return answer


def _current_status(request: core.BrokerHeartbeatRequest) -> BrokerStatus | None:
    """The broker's status if `broker_epoch` is current (its session touched), else None.

    The session store's mirror answers in one round trip; the brokers table decides whenever the
    mirror has no entry or disagrees on the epoch.
    """
    store = session_store()
    when, offset = now_ms(), request.current_metadata_offset
    status = store.touch_if_current(
        request.broker_id, request.broker_epoch, now_ms=when, metadata_offset=offset
    )
    if status is not None and status.epoch == request.broker_epoch:
        return status
    row = Broker.objects.filter(pk=request.broker_id).first()
    if row is None or row.epoch != request.broker_epoch:
        return None
    store.touch(request.broker_id, now_ms=when, metadata_offset=offset)
    return registration_from_row(row).status


def broker_unregister(*, broker_id: int, context: RequestContext) -> dict[str, Any]:
    response = broker_call(
        api="UnregisterBroker", payload={"broker_id": broker_id}, context=context
    )
    if response.get("error_code") == Errors.NONE:
        session_store().forget(broker_id)
    return response


def _stale_epoch(request: core.BrokerHeartbeatRequest) -> dict[str, Any]:
    epoch = Broker.objects.filter(pk=request.broker_id).values_list("epoch", flat=True).first()
    error = core.stale_broker_epoch(request.broker_id, epoch, request.broker_epoch)
    return {
        **error.as_fields(),
        "is_caught_up": False,
        "is_fenced": True,
        "should_shut_down": False,
    }


def producer_ids_allocate(
    *, broker_id: int, broker_epoch: int, context: RequestContext
) -> dict[str, Any]:
    """The next block of producer ids for a broker (AllocateProducerIds)."""
    require_speaks_for(context, broker_id, "AllocateProducerIds")
    return broker_call(
        api="AllocateProducerIds",
        payload={"broker_id": broker_id, "broker_epoch": broker_epoch},
        context=context,
    )


def features_update(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    """UpdateFeatures on the controller, which names itself in its refusals (Kafka's "Local
    controller N")."""
    return controller_call(
        api="UpdateFeatures",
        payload={**payload, "controller_id": settings.CP_CONTROLLER_ID},
        context=context,
    )
