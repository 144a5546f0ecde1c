"""A broker speaks only for itself.

Kafka ties no principal to a broker id: any principal holding CLUSTER_ACTION on the cluster may
register, heartbeat or change an ISR for any broker. This control plane gives each broker a
principal of its own, named `<CP_BROKER_PRINCIPAL_PREFIX><id>` (`kafka-broker-100`), and binds
it to that id: such a principal may send a broker's own requests (registration, heartbeats,
AlterPartition, AllocateProducerIds, AssignReplicasToDirs, AlterReplicaState) only for its own
id, and forwards Envelopes only while its broker is registered and unfenced. A principal with
CLUSTER_ACTION whose name is not of that form is bound to no id: the operator chose Kafka's
model for it (one identity for many brokers, as the broker simulator uses), and it may act for
any broker. Every refusal is CLUSTER_AUTHORIZATION_FAILED, logged and audited.

Registration also keeps broker ids in `CP_BROKER_ID_RANGE` (default: Kafka's non-negative int32
ids, less Int32.MAX_VALUE, which Kafka's clients use for their group coordinator's connection)
and never gives a broker the id of the controller quorum's voter.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

from audit.resources import broker as broker_resource
from audit.services import audit_event_record
from controlplane.controller.errors import ApiError, Errors
from controlplane.http_errors import HTTP_STATUS, error_body
from controlplane.runtime.conversation import RequestContext

logger = logging.getLogger("controlplane.security")

USER_PREFIX = "User:"


def bound_broker_id(principal: str) -> int | None:
    """The broker id a principal ("User:name") is bound to, or None: the name must be the
    prefix and the id in its canonical decimal form (`kafka-broker-100`, not `-0100`)."""
    prefix = USER_PREFIX + settings.CP_BROKER_PRINCIPAL_PREFIX
    if not principal.startswith(prefix):
        return None
    digits = principal[len(prefix) :]
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 10:
        return None
    broker_id = int(digits)
    return broker_id if str(broker_id) == digits else None


def require_speaks_for(context: RequestContext, broker_id: int, api: str) -> None:
    """CLUSTER_AUTHORIZATION_FAILED (audited) when the caller is bound to another broker."""
    bound = bound_broker_id(context.principal)
    if bound is None or bound == broker_id:
        return
    refuse(
        context,
        api=api,
        broker_id=broker_id,
        message=f"{context.principal} speaks for broker {bound} only, not for broker {broker_id}.",
    )


def refuse(context: RequestContext, *, api: str, broker_id: int | None, message: str) -> None:
    """Log and audit a broker identity's refusal, then raise it."""
    started = time.perf_counter()
    error = Errors.CLUSTER_AUTHORIZATION_FAILED
    logger.warning(
        "%s from %s (%s) refused: %s", api, context.principal, context.client_host, message
    )
    try:
        audit_event_record(
            api=api,
            namers=broker_resource,
            principal=context.principal,
            client_id=context.client_id,
            client_host=context.client_host,
            request_id=context.request_id,
            http_status=HTTP_STATUS.get(error, 403),
            body={"broker_id": "" if broker_id is None else broker_id},
            answer=error_body(error, message),
            notes={},
            first_offset=None,
            last_offset=None,
            forwarding=None,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    except Exception:  # the refusal stands: one that could not be audited is logged
        logger.exception("could not audit a broker identity's refusal")
    raise ApiError(error, message)


def require_registrable_id(broker_id: int) -> None:
    """INVALID_REGISTRATION for an id outside `CP_BROKER_ID_RANGE` or the controller's own."""
    low, high = settings.CP_BROKER_ID_RANGE
    if not low <= broker_id <= high:
        raise ApiError(
            Errors.INVALID_REGISTRATION,
            f"Broker id {broker_id} is outside the registrable range {low}-{high} "
            "(CP_BROKER_ID_RANGE).",
        )
    if broker_id == settings.CP_CONTROLLER_ID:
        raise ApiError(
            Errors.INVALID_REGISTRATION,
            f"Broker id {broker_id} is the controller quorum's voter id (CP_CONTROLLER_ID).",
        )
