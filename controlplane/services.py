"""Sending events to the active controller, and waiting for its answer.

Every metadata write goes through `controller_call`. Embedded, the process is the controller and
handles the event itself; otherwise the event travels on the Celery queue `controller`, which only
the active controller consumes. NOT_CONTROLLER (a controller that lost its lease, or none yet) and
a lost answer are retried until the request's deadline, then REQUEST_TIMED_OUT. Retries carry the
same request id, so the controller applies the write once.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeout
from django.conf import settings

from controlplane.controller.errors import ApiError, Errors
from controlplane.lease import now_ms
from controlplane.metadata_log import RequestContext
from controlplane.runtime import get_runtime

logger = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
ATTEMPT_TIMEOUT_MS = 5000
WHOLE_REQUEST_ERRORS = frozenset({Errors.NOT_CONTROLLER, Errors.REQUEST_TIMED_OUT})


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
    event = {
        "api": api,
        "payload": payload,
        "principal": context.principal,
        "client_id": context.client_id,
        "client_host": context.client_host,
        "request_id": context.request_id or str(uuid.uuid4()),
        "deadline_ms": deadline,
    }
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
        response = _attempt(event, min(remaining, ATTEMPT_TIMEOUT_MS))
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
    from controlplane.tasks import controller_event

    result = controller_event.apply_async(args=[event], queue="controller")
    try:
        answer: dict[str, Any] = result.get(timeout=timeout_ms / 1000, propagate=True)
        return answer
    except CeleryTimeout:
        logger.warning("controller did not answer %s within %d ms", event["api"], timeout_ms)
        return None
    finally:
        result.forget()
