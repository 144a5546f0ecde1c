"""Who may use the controller's listeners: principals holding CLUSTER_ACTION on the cluster
(brokers and super users hold it; an operator may grant it, e.g. to ANONYMOUS on a PLAINTEXT
controller listener bound to a private address), as Kafka's ControllerApis authorizes what
brokers send. Anyone else's request is answered CLUSTER_AUTHORIZATION_FAILED, as a whole-request
error on every item, without its handler running; the refusal is audited as a denial of that
API (within the per-address bound of audited denials) and logged."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from audit.resources import constant
from audit.services import audit_event_record
from controlplane.authz import is_authorized
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import Errors
from controlplane.http_errors import HTTP_STATUS, error_body
from wire.apis.base import WireApi, WireRequest
from wire.apis.common import respond

logger = logging.getLogger(__name__)

CREATE_TOPICS = 19
_CLUSTER = constant("CLUSTER", CLUSTER_NAME)


def may_reach_the_controller(request: WireRequest) -> bool:
    caller = request.caller
    return is_authorized(
        caller.principal,
        host=caller.host,
        operation=AclOperation.CLUSTER_ACTION,
        resource_type=ResourceType.CLUSTER,
        resource_name=CLUSTER_NAME,
    )


def _create_topics_items(request: WireRequest, error: dict[str, Any]) -> dict[str, Any]:
    return {"topics": [{"name": t.name, **error} for t in request.body.topics]}


# Kafka's getErrorResponse for requests whose answer lists their items; the others carry the
# error at their top level.
_ITEMS: dict[int, Callable[[WireRequest, dict[str, Any]], dict[str, Any]]] = {
    CREATE_TOPICS: _create_topics_items,
}


def whole_request_error(request: WireRequest, code: Errors, message: str) -> Any:
    """The response of the request's API and version with `code` for the whole request."""
    error = {"error_code": int(code), "error_message": message}
    items = _ITEMS.get(request.api_key)
    return respond(request, {**error, **(items(request, error) if items else {})})


def refused_on_controller_listener(api: WireApi, request: WireRequest, listener: str) -> Any:
    started = time.perf_counter()
    caller = request.caller
    message = f"{caller.principal.principal} may not use controller listener {listener}."
    logger.warning(
        "%s from %s (%s) refused on controller listener %s: no CLUSTER_ACTION",
        api.name,
        caller.principal.principal,
        caller.host,
        listener,
    )
    error = Errors.CLUSTER_AUTHORIZATION_FAILED
    try:
        audit_event_record(
            api=api.name,
            namers=_CLUSTER,
            principal=caller.name,
            client_id=caller.client_id,
            client_host=caller.host,
            request_id=caller.request_id,
            http_status=HTTP_STATUS.get(error, 403),
            body=None,
            answer=error_body(error, message),
            notes={"listener": listener},
            first_offset=None,
            last_offset=None,
            forwarding=None,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    except Exception:  # the answer stands: a refusal that could not be audited is logged
        logger.exception("could not audit a refusal on a controller listener")
    return whole_request_error(request, error, message)
