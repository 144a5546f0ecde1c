"""Sending events to the active controller, and waiting for its answer.

Every metadata write goes through `controller_call`: it builds the one `ControllerEvent` and
hands it to this process's executor (controlplane.runtime.executor: embedded, the process handles
it itself; otherwise it travels on the request channel or the Celery queue). NOT_CONTROLLER (a
controller that lost its lease, or none yet) and a lost answer are retried until the request's
deadline, then REQUEST_TIMED_OUT. Retries carry the same request id, so the controller applies
the write once.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from controlplane.controller.errors import ApiError, Errors
from controlplane.http_errors import is_unavailable
from controlplane.metrics import FORWARDING
from controlplane.runtime.conversation import (
    REQUEST_ID_REUSED,
    ControllerAnswer,
    ControllerEvent,
    RequestContext,
    RequestTrail,
)
from controlplane.runtime.executor import ATTEMPT_TIMEOUT_MS, executor
from controlplane.runtime.lease import now_ms

RETRY_BACKOFF_S = 0.05


class RequestIdReused(ApiError):
    """A principal's request id reused for another request: INVALID_REQUEST, HTTP 422 (the
    Idempotency-Key draft's answer), on every door."""

    http_status = 422

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_REQUEST, message)


def controller_call(
    *,
    api: str,
    payload: Mapping[str, Any],
    context: RequestContext,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """Run one event on the active controller; returns its response (maybe a per-RPC error).
    The request's audit trail (`context.trail`, an admin RPC's) learns what the answer wrote.

    Raises ApiError(NOT_CONTROLLER) when no node held the controller lease until the deadline,
    REQUEST_TIMED_OUT when the controller did not answer before it.
    """
    event = controller_event(api=api, payload=payload, context=context, timeout_ms=timeout_ms)
    FORWARDING.started(api)
    try:
        answer = _call_until_deadline(event)
    finally:
        FORWARDING.finished(api)
    return _answered(event, answer, context)


def _answered(
    event: ControllerEvent, answer: ControllerAnswer, context: RequestContext
) -> dict[str, Any]:
    api = event.api
    if answer.notes.get(REQUEST_ID_REUSED):
        raise RequestIdReused(str(answer.response.get("error_message") or ""))
    if answer.handled_ms is not None and event.sent_ms is not None:
        FORWARDING.queue_time(api, max(0, answer.handled_ms - event.sent_ms) / 1000)
    if context.trail is not None:
        context.trail.took(answer)
    return answer.response


# A broker's own writes, on either door (REST internal API, the controller listener).
BROKER_WRITES = (
    "BrokerRegistration",
    "BrokerHeartbeat",
    "UnregisterBroker",
    "AlterPartition",
    "AllocateProducerIds",
    "AssignReplicasToDirs",
)


def broker_call(*, api: str, payload: Mapping[str, Any], context: RequestContext) -> dict[str, Any]:
    """A broker's own write, as `controller_call` runs it, audited: when it writes records,
    the controller writes its audit row (the broker's principal, client id and address, the
    broker and the partitions it named) in the same commit. One that writes nothing (a
    heartbeat that changed nothing, a refusal) leaves no row: a hundred brokers heartbeating
    every two seconds would bury the trail."""
    assert api in BROKER_WRITES, api
    return controller_call(api=api, payload=payload, context=_with_trail(context, api))


def broker_call_within(
    *, api: str, payload: Mapping[str, Any], context: RequestContext, patience_ms: int
) -> dict[str, Any] | None:
    """`broker_call`, waiting at most `patience_ms` for the controller: None when it has not
    answered by then. The event stays in the controller's queue and is applied in its turn
    (nothing is retried: a retry would only queue it twice); its answer goes unread. Events
    that queued while the controller was busy are taken together in its next batch, one
    commit. A controller just found busy is not waited for again for a moment
    (`BusyController`). An answer that asks for a retry (NOT_CONTROLLER, an unknown outcome)
    is retried as `broker_call` retries it, with the same request id. In the controller's own
    process (embedded) the call is `broker_call`'s: the caller's thread runs the event itself."""
    assert api in BROKER_WRITES, api
    context = _with_trail(context, api)
    if patience_ms <= 0 or executor().in_process:
        return controller_call(api=api, payload=payload, context=context)
    event = controller_event(api=api, payload=payload, context=context)
    FORWARDING.started(api)
    try:
        waited_ms = BUSY_CONTROLLER.patience_ms(patience_ms)
        answer = executor().call(event, waited_ms)
        if answer is None:
            if waited_ms == patience_ms:
                BUSY_CONTROLLER.found_busy()
            return None
        BUSY_CONTROLLER.found_free()
        if answer.not_controller or answer.outcome_unknown:
            answer = _call_until_deadline(event)
    finally:
        FORWARDING.finished(api)
    return _answered(event, answer, context)


class BusyController:
    """This process's memory of a controller that kept a heartbeat waiting its whole patience:
    for `BUSY_FOR_S` after, the next ones wait a millisecond only (they are queued all the same).
    One agent heartbeating for a hundred brokers in turn, all of them coming back at once, would
    otherwise wait the patience a hundred times a round while the others' sessions run."""

    BUSY_FOR_S = 1.0
    QUEUED_ONLY_MS = 1

    def __init__(self) -> None:
        self._busy_until = 0.0

    def patience_ms(self, patience_ms: int) -> int:
        busy = time.monotonic() < self._busy_until
        return min(patience_ms, self.QUEUED_ONLY_MS) if busy else patience_ms

    def found_busy(self) -> None:
        self._busy_until = time.monotonic() + self.BUSY_FOR_S

    def found_free(self) -> None:
        self._busy_until = 0.0


BUSY_CONTROLLER = BusyController()


def _with_trail(context: RequestContext, api: str) -> RequestContext:
    if context.trail is not None:
        return context
    return dataclasses.replace(context, trail=RequestTrail(rpc=api, started_ms=now_ms()))


def controller_event(
    *,
    api: str,
    payload: Mapping[str, Any],
    context: RequestContext,
    timeout_ms: int | None = None,
    sent_ms: int | None = None,
) -> ControllerEvent:
    """The one place an event to the controller is made: with a request id (a retry carries
    the same one), a deadline, and the audit envelope of the caller's trail (the controller
    writes the request's audit row in the commit of its records, so a web node that dies after
    the commit cannot lose it)."""
    sent = now_ms() if sent_ms is None else sent_ms
    if not context.request_id:
        context = dataclasses.replace(context, request_id=str(uuid.uuid4()))
    return ControllerEvent(
        api=api,
        payload=payload,
        context=context,
        deadline_ms=sent + (settings.CP_REQUEST_TIMEOUT_MS if timeout_ms is None else timeout_ms),
        sent_ms=sent,
        audit=None if context.trail is None else context.trail.envelope(),
    )


def _call_until_deadline(event: ControllerEvent) -> ControllerAnswer:
    """Attempts until an answer or the deadline. NOT_CONTROLLER at the deadline only when no
    attempt may have reached a controller that applied it: once one went unanswered (sent, and
    whoever took it may have committed before dying) or was answered REQUEST_TIMED_OUT (a
    commit whose outcome is unknown), the deadline answers REQUEST_TIMED_OUT, as Kafka's own
    controller path does for a write it cannot confirm; a retry in time finds out, since it
    carries the same request id."""
    assert event.deadline_ms is not None
    last_error = ApiError(Errors.REQUEST_TIMED_OUT, "No attempt finished.")
    maybe_applied = False
    while True:
        remaining = event.deadline_ms - now_ms()
        if remaining <= 0:
            if last_error.error is Errors.NOT_CONTROLLER and not maybe_applied:
                raise last_error  # nobody holds the lease: 503, the client retries later
            raise ApiError(
                Errors.REQUEST_TIMED_OUT,
                "No answer from the active controller before the deadline; the request may "
                f"have been applied ({last_error.message})",
            )
        attempt_started = time.perf_counter()
        try:
            answer = executor().call(event, min(remaining, ATTEMPT_TIMEOUT_MS))
        except Exception as error:
            if not (maybe_applied and is_unavailable(error)):
                raise  # nothing went out before: unavailable, "not applied" (503)
            # The store refused this attempt, but an earlier one went out and may have been
            # applied: only an answer to a retry, or the deadline's REQUEST_TIMED_OUT, says so.
            last_error = ApiError(
                Errors.REQUEST_TIMED_OUT, f"The controller is unreachable: {error}"
            )
            time.sleep(RETRY_BACKOFF_S)
            continue
        FORWARDING.remote_time(event.api, time.perf_counter() - attempt_started)
        if answer is None:
            maybe_applied = True
            last_error = ApiError(Errors.REQUEST_TIMED_OUT, "The controller did not answer.")
        elif answer.not_controller:
            last_error = ApiError(Errors.NOT_CONTROLLER, answer.response.get("error_message"))
        elif answer.outcome_unknown:
            maybe_applied = True
            last_error = ApiError(Errors.REQUEST_TIMED_OUT, answer.response.get("error_message"))
        else:
            return answer
        time.sleep(RETRY_BACKOFF_S)
