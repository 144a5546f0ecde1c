"""Controller events by API name: find the domain's handler, run it, replay its records.

An event is plain JSON (it crosses the request channel). Each domain package lists its handlers
(`<domain>.handlers.HANDLERS`); this module, the top of the core, joins them into one table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controlplane.controller.acls import handlers as acls
from controlplane.controller.brokers import handlers as brokers
from controlplane.controller.configs import handlers as configs
from controlplane.controller.env import BrokerSession, ControllerEnv, Handler
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.mirror import handlers as mirror
from controlplane.controller.quotas import handlers as quotas
from controlplane.controller.replication import handlers as replication
from controlplane.controller.result import ControllerResult
from controlplane.controller.scram import handlers as scram
from controlplane.controller.tokens import handlers as tokens

logger = logging.getLogger("controlplane.controller")


def _joined(*tables: Mapping[str, Handler]) -> dict[str, Handler]:
    joined: dict[str, Handler] = {}
    for table in tables:
        for api, fn in table.items():
            if api in joined:
                raise RuntimeError(f"Two controller handlers for {api}")
            joined[api] = fn
    return joined


HANDLERS: Mapping[str, Handler] = _joined(
    brokers.HANDLERS,
    replication.HANDLERS,
    acls.HANDLERS,
    configs.HANDLERS,
    quotas.HANDLERS,
    tokens.HANDLERS,
    mirror.HANDLERS,
    scram.HANDLERS,
)
# APIs whose retries are naturally idempotent (their outcome follows from state alone).
STATE_IDEMPOTENT_APIS: frozenset[str] = (
    brokers.STATE_IDEMPOTENT_APIS
    | replication.STATE_IDEMPOTENT_APIS
    | tokens.STATE_IDEMPOTENT_APIS
    | mirror.STATE_IDEMPOTENT_APIS
)


class ReplayFailed(Exception):
    """A handler answered records that do not replay (a controller bug). Part of them may be in
    the delta already, so the delta can no longer be committed; the caller starts over without
    this event."""

    def __init__(self, api: str, cause: Exception) -> None:
        super().__init__(f"{api}: {cause}")
        self.api = api
        self.index = -1


def dispatch(
    api: str, view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    try:
        fn = HANDLERS[api]
    except KeyError:
        raise ApiError(Errors.INVALID_REQUEST, f"Unknown controller API {api!r}") from None
    return fn(view, payload, env)


def run_event(
    delta: MetadataDelta,
    api: str,
    payload: Mapping[str, Any],
    env: ControllerEnv,
    contacts: list[int] | None = None,
    notes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Handle one event against the delta and replay its records into it; returns the response.
    The handler's notes for the audit trail (`ControllerResult.notes`) go to `notes`.

    A refused event (ApiError) leaves the delta untouched and answers its error. Brokers whose
    session starts with this event are appended to `contacts` and, when `env.sessions` is a
    dict, recorded in it so later events of the same batch see them.
    """
    try:
        result = dispatch(api, delta, payload, env)
    except ApiError as error:
        return error.as_fields()
    except Exception:  # a handler bug: this event fails, the delta was not touched
        logger.exception("controller handler for %s failed", api)
        return ApiError(
            Errors.UNKNOWN_SERVER_ERROR, f"The controller could not handle {api}."
        ).as_fields()
    try:
        for record in result.records:
            delta.replay(record)
    except ValueError as error:
        raise ReplayFailed(api, error) from error
    for broker_id in result.contacts:
        if isinstance(env.sessions, dict):
            env.sessions[broker_id] = BrokerSession(env.now_ms, -1)
        if contacts is not None:
            contacts.append(broker_id)
    if notes is not None:
        notes.update(result.notes)
    return result.response
