"""Admin requests run as a principal that is not the HTTP caller: the UI's writes.

The UI's forms name Kafka's RPC and its body; the request runs through `controlplane.rpc.execute`
as the logged-in principal, so it is validated, authorized, sent to the controller and audited
exactly as if the principal had called the API itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from controlplane.controller.api_keys import ApiKey
from controlplane.principals import AuthenticatedPrincipal
from controlplane.rpc import REGISTRY, Caller, Forwarding, execute


@dataclasses.dataclass(frozen=True, slots=True)
class AdminAnswer:
    status: int  # the HTTP status the API answers
    data: dict[str, Any]


def admin_request_execute(
    *,
    api: ApiKey,
    body: Any,
    principal: AuthenticatedPrincipal,
    client_host: str,
    client_id: str,
    request_id: str,
    forwarding: Forwarding | None = None,
) -> AdminAnswer:
    """Run one admin RPC as `principal`, exactly as its public API runs it."""
    caller = Caller(principal, client_host, client_id, request_id, forwarding)
    answer = execute(REGISTRY[api.name], body, caller)
    return AdminAnswer(answer.status, answer.data)
