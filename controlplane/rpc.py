"""One registry of admin RPCs and one way to run them, as Kafka's `ApiKeys` + `KafkaApis`.

Every admin RPC is an `ApiSpec`: its Kafka name and apiKey (`controller.api_keys`), its request
serializer, its whole-request authorization, its handler and how its resources are named for
the audit trail. Apps declare theirs in an `rpcs.py` module (found when Django starts).

`execute(spec, body, caller)` is the one path: authorize, validate, run the handler (which
authorizes per item, as Kafka does, and calls the controller through a service), answer Kafka's
errors with their HTTP status, and hand the request to the audit trail. The REST views, a
broker's Envelope and the UI's writes all call it; none builds a request of another kind.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from rest_framework import serializers

from controlplane.authz import is_authorized, refuse_broker_on_public_write, require_cluster
from controlplane.controller.acls.bindings import AclOperation, ResourceType
from controlplane.controller.api_keys import ADMIN_APIS, ApiKey
from controlplane.http_errors import exception_handler
from controlplane.principals import AuthenticatedPrincipal
from controlplane.runtime.lease import now_ms
from controlplane.runtime.metadata_log import RequestContext
from controlplane.services import ControllerNotes, controller_notes

logger = logging.getLogger(__name__)

Body = dict[str, Any]
Resource = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Forwarding:
    """The broker that redirected a request in an Envelope."""

    principal: str
    host: str
    broker_id: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Caller:
    """Who sent an admin request, however it arrived (REST, Envelope, UI)."""

    principal: AuthenticatedPrincipal
    host: str = ""
    client_id: str = ""
    request_id: str = ""
    forwarding: Forwarding | None = None  # the broker that redirected it in an Envelope

    @property
    def name(self) -> str:
        return self.principal.principal

    @property
    def context(self) -> RequestContext:
        return RequestContext(
            principal=self.principal.principal,
            client_id=self.client_id[:255],
            client_host=self.host,
            request_id=self.request_id,
        )

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return is_authorized(
            self.principal,
            host=self.host,
            operation=operation,
            resource_type=resource_type,
            resource_name=name,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """A handler's answer with an HTTP status other than 200 (the body is still Kafka's)."""

    status: int
    data: Body


Handler = Callable[[Body, Caller], Body | Reply]
Authorize = Callable[[Caller], None]
# (request body, answer, the answer's own error code, private notes) -> resources named
Resources = Callable[[Body, Body, int, dict[str, Any]], Iterable[Resource]]


def any_principal(caller: Caller) -> None:
    """Whole-request check of the reads: any authenticated principal (items are authorized)."""


def public_write(caller: Caller) -> None:
    """KIP-590: a broker principal never sends admin writes to the public API."""
    refuse_broker_on_public_write(caller.principal)


def cluster(operation: AclOperation, *, write: bool = False) -> Authorize:
    """`operation` on the CLUSTER resource (writes: never from a broker principal)."""

    def authorize(caller: Caller) -> None:
        if write:
            refuse_broker_on_public_write(caller.principal)
        require_cluster(caller.principal, host=caller.host, operation=operation)

    return authorize


@dataclasses.dataclass(frozen=True, slots=True)
class ApiSpec:
    key: ApiKey
    request: type[serializers.Serializer]  # type: ignore[type-arg]
    authorize: Authorize
    handler: Handler
    resources: Resources

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def path(self) -> str:
        return self.key.path

    @property
    def forwardable(self) -> bool:
        return self.key.forwardable

    def validated(self, body: Any) -> Body:
        fast = getattr(self.request, "validated", None)
        if fast is not None:
            return dict(fast(body))
        serializer = self.request(data=body)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


REGISTRY: dict[str, ApiSpec] = {}
# The house's own RPCs, which Kafka never numbered (MirrorMaker's): run by `execute` like every
# admin RPC, routed by their app at the contract's paths, never carried in an Envelope. Apps add
# theirs in their rpcs.py.
HOUSE_RPCS: dict[str, ApiSpec] = {}


def register(
    name: str,
    *,
    request: type[serializers.Serializer],  # type: ignore[type-arg]
    authorize: Authorize,
    handler: Handler,
    resources: Resources,
) -> ApiSpec:
    """Bind Kafka's RPC `name` (a key of `ADMIN_APIS`) to its handler."""
    spec = ApiSpec(ADMIN_APIS[name], request, authorize, handler, resources)
    if name in REGISTRY:
        raise ValueError(f"{name} is registered twice")
    REGISTRY[name] = spec
    return spec


def spec_by_key(api_key: int) -> ApiSpec | None:
    return next((s for s in REGISTRY.values() if s.key.api_key == api_key), None)


@dataclasses.dataclass(frozen=True, slots=True)
class RpcAnswer:
    status: int
    data: Body
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class Executed:
    """What the audit trail is told of one executed request."""

    spec: ApiSpec
    caller: Caller
    body: Any  # as sent (None when it could not be parsed)
    answer: RpcAnswer
    notes: ControllerNotes
    duration_ms: float


# The audit trail registers its recorder here (audit.apps): the runtime does not import apps.
AUDITORS: list[Callable[[Executed], None]] = []


def execute(
    spec: ApiSpec, body: Any, caller: Caller, *, refusal: RpcAnswer | None = None
) -> RpcAnswer:
    """Run one admin RPC as `caller`: the one path of every front door. `refusal` is the
    answer to a body that could not even be read; authorization is still checked first."""
    notes = ControllerNotes(audit=_audit_envelope(spec, caller))
    token = controller_notes.set(notes)
    started = time.perf_counter()
    try:
        answer = _answer(spec, body, caller, refusal)
    finally:
        controller_notes.reset(token)
    executed = Executed(
        spec,
        caller,
        None if refusal else body,
        answer,
        notes,
        (time.perf_counter() - started) * 1000,
    )
    for auditor in AUDITORS:
        try:
            auditor(executed)
        except Exception:  # the answer stands: a trail that could not name it is logged, not a 500
            logger.exception("could not audit %s", spec.name)
    return answer


def _audit_envelope(spec: ApiSpec, caller: Caller) -> dict[str, Any]:
    """What the controller needs, beside the event's principal, client and request id, to
    write the request's audit row in the commit of its records."""
    forwarding = caller.forwarding
    return {
        "rpc": spec.name,
        "started_ms": now_ms(),
        "forwarding": None
        if forwarding is None
        else {
            "principal": forwarding.principal,
            "host": forwarding.host,
            "broker_id": forwarding.broker_id,
        },
    }


def _answer(spec: ApiSpec, body: Any, caller: Caller, refusal: RpcAnswer | None) -> RpcAnswer:
    try:
        spec.authorize(caller)
        if refusal is not None:
            return refusal
        reply = spec.handler(spec.validated(body), caller)
    except Exception as error:  # Kafka's error (or a refusal), with its HTTP status
        return error_answer(error)
    if isinstance(reply, Reply):
        return RpcAnswer(reply.status, reply.data)
    return RpcAnswer(200, reply)


def error_answer(error: Exception) -> RpcAnswer:
    """The answer the REST API gives for `error` (controlplane.http_errors), anywhere."""
    response = exception_handler(error, {})
    assert response is not None
    headers = {k: v for k, v in response.items() if k in ("Retry-After", "WWW-Authenticate")}
    return RpcAnswer(response.status_code, dict(response.data), headers)
