"""Sending events to the active controller, and waiting for its answer.

Every metadata write goes through `controller_call`. Embedded, the process is the controller and
handles the event itself; otherwise the event travels on the request channel (a Redis list that
only the active controller consumes, see controlplane.runtime.channel), or on the Celery queue
`controller` where the broker is not Redis. NOT_CONTROLLER (a controller that lost its lease,
or none yet) and a lost answer are retried until the request's deadline, then REQUEST_TIMED_OUT.
Retries carry the same request id, so the controller applies the write once.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import logging
import time
import uuid
from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeout
from django.conf import settings

from controlplane.controller.errors import ApiError, Errors
from controlplane.metrics import FORWARDING
from controlplane.runtime.channel import ControllerChannel
from controlplane.runtime.controller import AUDITED_NOTE, HANDLED_NOTE, OFFSETS_NOTE, get_runtime
from controlplane.runtime.lease import now_ms
from controlplane.runtime.metadata_log import RequestContext

logger = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
ATTEMPT_TIMEOUT_MS = 5000
WHOLE_REQUEST_ERRORS = frozenset({Errors.NOT_CONTROLLER, Errors.REQUEST_TIMED_OUT})


@dataclasses.dataclass(slots=True)
class ControllerNotes:
    """What travels beside one admin request and its answer, for the audit trail.

    Out: `audit`, what the controller needs to write the request's audit row in the commit of
    its records (set by `controlplane.rpc.execute`), with `refused`, the answer items a handler
    gave without the controller (refused by authorization before the call), by answer key.
    Back: the metadata offsets the request produced, whether the controller audited it, and
    private notes (keys starting with `_`)."""

    first_offset: int | None = None
    last_offset: int | None = None
    private: dict[str, Any] = dataclasses.field(default_factory=dict)
    audit: dict[str, Any] | None = None
    refused: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    audited: bool = False  # the controller wrote the audit row in the commit of the records

    def add(self, notes: dict[str, Any]) -> None:
        self.audited = bool(notes.pop(AUDITED_NOTE, False)) or self.audited
        offsets = notes.pop(OFFSETS_NOTE, None)
        if offsets:
            first, last = int(offsets[0]), int(offsets[1])
            self.first_offset = (
                first if self.first_offset is None else min(first, self.first_offset)
            )
            self.last_offset = last if self.last_offset is None else max(last, self.last_offset)
        self.private.update(notes)


# Set by the audited API views around one request; controller_call adds to it.
controller_notes: contextvars.ContextVar[ControllerNotes | None] = contextvars.ContextVar(
    "controller_notes", default=None
)


def controller_refused(*, answer_key: str, items: list[dict[str, Any]]) -> None:
    """Note answer items a handler gives without the controller (refused before the call), so
    that the audit row the controller writes in its commit names them too."""
    notes = controller_notes.get()
    if notes is not None and items:
        notes.refused.setdefault(answer_key, []).extend(items)


def controller_call(
    *,
    api: str,
    payload: dict[str, Any],
    context: RequestContext,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """Run one event on the active controller; returns its response (maybe a per-RPC error).

    Raises ApiError(NOT_CONTROLLER) when no node held the controller lease until the deadline,
    REQUEST_TIMED_OUT when the controller did not answer before it.
    """
    deadline = now_ms() + (timeout_ms if timeout_ms is not None else settings.CP_REQUEST_TIMEOUT_MS)
    sent_ms = now_ms()
    event: dict[str, Any] = {
        "api": api,
        "payload": payload,
        "principal": context.principal,
        "client_id": context.client_id,
        "client_host": context.client_host,
        "request_id": context.request_id or str(uuid.uuid4()),
        "deadline_ms": deadline,
        "sent_ms": sent_ms,
    }
    notes = controller_notes.get()
    if notes is not None and notes.audit is not None:
        # The controller writes the request's audit row in the commit of its records, so a
        # web node that dies after the commit cannot lose it.
        event["audit"] = {**notes.audit, "refused": notes.refused}
    FORWARDING.started(api)
    try:
        response = _call_until_deadline(event, deadline)
    finally:
        FORWARDING.finished(api)
    return _take_notes(response, sent_ms=sent_ms, api=api)


def _take_notes(response: dict[str, Any], *, sent_ms: int, api: str) -> dict[str, Any]:
    """The answer without the controller's notes; the notes go to the request's audit trail."""
    private = {k: v for k, v in response.items() if k.startswith("_")}
    if not private:
        return response
    handled = private.pop(HANDLED_NOTE, None)
    if isinstance(handled, int):
        FORWARDING.queue_time(api, max(0, handled - sent_ms) / 1000)
    notes = controller_notes.get()
    if notes is not None:
        notes.add(private)
    return {k: v for k, v in response.items() if not k.startswith("_")}


def _call_until_deadline(event: dict[str, Any], deadline: int) -> dict[str, Any]:
    last_error = ApiError(Errors.REQUEST_TIMED_OUT, "No attempt finished.")
    while True:
        remaining = deadline - now_ms()
        if remaining <= 0:
            if last_error.error is Errors.NOT_CONTROLLER:
                raise last_error  # nobody holds the lease: 503, the client retries later
            raise ApiError(
                Errors.REQUEST_TIMED_OUT,
                f"No answer from the active controller before the deadline ({last_error.message})",
            )
        attempt_started = time.perf_counter()
        response = _attempt(event, min(remaining, ATTEMPT_TIMEOUT_MS))
        FORWARDING.remote_time(event["api"], time.perf_counter() - attempt_started)
        if response is None:
            last_error = ApiError(Errors.REQUEST_TIMED_OUT, "The controller did not answer.")
        elif response.get("error_code") == Errors.NOT_CONTROLLER:
            last_error = ApiError(Errors.NOT_CONTROLLER, response.get("error_message"))
        else:
            return response
        time.sleep(RETRY_BACKOFF_S)


def _attempt(event: dict[str, Any], timeout_ms: int) -> dict[str, Any] | None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return get_runtime().handle(event)
    channel = _channel()
    if channel is not None:
        return channel.request(event, timeout_ms)
    from controlplane.tasks import controller_event

    # The event may carry a secret (a config value, an HMAC): what Celery shows of it (worker
    # logs, `celery inspect`) is only its API and request id.
    shown = f"({{'api': {event['api']!r}, 'request_id': {event['request_id']!r}}},)"
    result = controller_event.apply_async(args=[event], queue="controller", argsrepr=shown)
    try:
        answer: dict[str, Any] = result.get(timeout=timeout_ms / 1000, propagate=True)
        return answer
    except CeleryTimeout:
        logger.warning("controller did not answer %s within %d ms", event["api"], timeout_ms)
        return None
    finally:
        result.forget()


@functools.cache
def _channel() -> ControllerChannel | None:
    """The request channel to the controller, where Redis is there to carry it."""
    if not settings.CP_REDIS_URL:
        return None
    return ControllerChannel(
        settings.CP_REDIS_URL,
        longest_wait_s=ATTEMPT_TIMEOUT_MS / 1000,
        key_prefix=settings.CP_REDIS_KEY_PREFIX,
    )
