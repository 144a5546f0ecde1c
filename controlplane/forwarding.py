"""Admin requests by name: one way in for the public API, a broker's Envelope and the UI.

Every admin request is a Kafka RPC served by its public API view (parse, authenticate,
authorize, send to the controller, audit). A request that did not arrive as that HTTP call (an
Envelope a broker redirected, a form in the UI) is run through the very same view as its
original principal, so it is validated, authorized, forwarded to the controller and audited
exactly as if the client had called the API itself: Kafka's controller handles an Envelope the
same way, by handling the inner request with the envelope's principal.
"""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest
from django.urls import resolve

# The table is plain data in the core (the broker simulator reads it too); its names stay here.
from controlplane.controller.admin_apis import ADMIN_APIS as ADMIN_APIS
from controlplane.controller.admin_apis import ADMIN_APIS_BY_KEY as ADMIN_APIS_BY_KEY
from controlplane.controller.admin_apis import ADMIN_APIS_BY_PATH as ADMIN_APIS_BY_PATH
from controlplane.controller.admin_apis import API_PREFIX as API_PREFIX
from controlplane.controller.admin_apis import ENVELOPE_API_KEY as ENVELOPE_API_KEY
from controlplane.controller.admin_apis import AdminApi as AdminApi
from controlplane.principals import AuthenticatedPrincipal


@dataclasses.dataclass(frozen=True, slots=True)
class Forwarding:
    """The broker that redirected a request in an Envelope."""

    principal: str
    host: str
    broker_id: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AdminAnswer:
    status: int  # the HTTP status the API answered
    data: dict[str, Any]


FORWARDING_ATTRIBUTE = "cp_forwarding"


def forwarding_of(request: HttpRequest) -> Forwarding | None:
    found = getattr(request, FORWARDING_ATTRIBUTE, None)
    return found if isinstance(found, Forwarding) else None


def admin_request_execute(
    *,
    api: AdminApi,
    body: Any,
    principal: AuthenticatedPrincipal,
    client_host: str,
    client_id: str,
    request_id: str,
    forwarding: Forwarding | None = None,
) -> AdminAnswer:
    """Run one admin RPC as `principal`, exactly as its public API view runs it."""
    raw = json.dumps(body).encode()
    path = API_PREFIX + api.path
    inner = WSGIRequest(
        {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "SERVER_NAME": "controlplane",
            "SERVER_PORT": "0",
            "REMOTE_ADDR": client_host,
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(raw)),
            "HTTP_X_CLIENT_ID": client_id,
            "wsgi.input": io.BytesIO(raw),
            "wsgi.url_scheme": "http",
        }
    )
    inner.request_id = request_id  # type: ignore[attr-defined]
    setattr(inner, FORWARDING_ATTRIBUTE, forwarding)
    # DRF authenticates a request carrying these as the given principal (no token, no session).
    inner._force_auth_user = principal  # type: ignore[attr-defined]
    inner._force_auth_token = None  # type: ignore[attr-defined]
    inner._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
    match = resolve(path)
    inner.resolver_match = match
    response = match.func(inner, *match.args, **match.kwargs)
    data = getattr(response, "data", None)
    return AdminAnswer(response.status_code, data if isinstance(data, dict) else {})
