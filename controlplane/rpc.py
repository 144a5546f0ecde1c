"""One registry of admin RPCs and one way to run them, as Kafka's `ApiKeys` + `KafkaApis`.

Every admin RPC is an `ApiSpec`: its name (and Kafka's apiKey, `controller.api_keys`, unless it
is the house's own), its request serializer, its whole-request authorization, its handler, how
its resources are named for the audit trail and its answer's schema. Apps declare theirs in an
`rpcs.py` module (found when Django starts); the router, the OpenAPI schema, the Envelope, the
UI and the audit trail all read them from `REGISTRY`.

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
from controlplane.runtime.conversation import Forwarding, RequestContext, RequestTrail
from controlplane.runtime.lease import now_ms
from controlplane.runtime.plugins import add_once
from controlplane.runtime.tables_barrier import tables_barrier

logger = logging.getLogger(__name__)

Body = dict[str, Any]
Resource = dict[str, Any]
Schema = dict[str, Any]  # an OpenAPI schema


@dataclasses.dataclass(frozen=True, slots=True)
class Caller:
    """Who sent an admin request, however it arrived (REST, Envelope, UI)."""

    principal: AuthenticatedPrincipal
    host: str = ""
    client_id: str = ""
    request_id: str = ""
    forwarding: Forwarding | None = None  # the broker that redirected it in an Envelope
    # The Kafka listener's security protocol it came in on (PLAINTEXT, SASL_PLAINTEXT, SSL,
    # SASL_SSL); None where there is none (REST, the UI, an Envelope's inner request).
    security_protocol: str | None = None
    # The role of that listener: "controller" where brokers reach the controller (their plain
    # CreateTopics of internal topics is no public write there), else "client" or None.
    listener_role: str | None = None
    # What the connection's ApiVersions said it runs (KIP-511's ClientSoftwareVersion, e.g.
    # "4.1.1" from a stock broker); "" when it said nothing.
    client_software_version: str = ""
    # The request's audit facts, out to the controller and back (`execute` gives each request
    # a trail of its own; the handler's service calls carry it in `context`).
    trail: RequestTrail = dataclasses.field(default_factory=RequestTrail, compare=False)

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
            trail=self.trail,
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
    """KIP-590: a broker principal never sends admin writes to the public API (its own
    requests reach the controller on a controller listener)."""
    if caller.listener_role != "controller":
        refuse_broker_on_public_write(caller.principal)


def cluster(operation: AclOperation, *, write: bool = False) -> Authorize:
    """`operation` on the CLUSTER resource (writes: never from a broker principal)."""

    def authorize(caller: Caller) -> None:
        if write:
            public_write(caller)
        require_cluster(caller.principal, host=caller.host, operation=operation)

    return authorize


@dataclasses.dataclass(frozen=True, slots=True)
class ApiSpec:
    """One admin RPC: everything the house needs to route, document, authorize, run and audit
    it. `register` makes it; nothing else names it."""

    name: str
    request: type[serializers.Serializer]  # type: ignore[type-arg]
    authorize: Authorize  # the whole request's (the handler authorizes each item)
    handler: Handler
    resources: Resources  # how the audit trail names what it touched
    response: Schema  # its answer's body, for the OpenAPI schema
    kafka: ApiKey | None  # Kafka's apiKey, path and forwardability; None: the house's own
    path: str | None  # POST /api/v1/<path> by the one router; None: its app's views run it

    @property
    def api_key(self) -> int | None:
        return None if self.kafka is None else self.kafka.api_key

    @property
    def forwardable(self) -> bool:
        """May travel in an Envelope (KIP-590): only Kafka's RPCs that Kafka forwards."""
        return self.kafka is not None and self.kafka.forwardable

    def validated(self, body: Any) -> Body:
        fast = getattr(self.request, "validated", None)
        if fast is not None:
            return dict(fast(body))
        serializer = self.request(data=body)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


# Every admin RPC by name, Kafka's and the house's own alike (apps register theirs in rpcs.py).
REGISTRY: dict[str, ApiSpec] = {}


def register(
    name: str,
    *,
    request: type[serializers.Serializer],  # type: ignore[type-arg]
    authorize: Authorize,
    handler: Handler,
    resources: Resources,
    response: Schema,
    path: str | None = None,
) -> ApiSpec:
    """Register the admin RPC `name`: routed, documented, authorized and audited from here on.

    Kafka's own (a name of `ADMIN_APIS`) takes its apiKey, path and forwardability from Kafka's
    table. Any other name is the house's own RPC (MirrorMaker's): Kafka never numbered it, so it
    never travels in an Envelope; the one router serves it at POST /api/v1/`path`, or without a
    path its app's views run it (the mirror's contract paths carry URL parts and text bodies).
    """
    kafka = ADMIN_APIS.get(name)
    if kafka is not None and path is not None:
        raise ValueError(f"{name} is Kafka's RPC: its path is {kafka.path!r} (api_keys.py)")
    if name in REGISTRY:
        raise ValueError(f"{name} is registered twice")
    path = kafka.path if kafka is not None else path
    spec = ApiSpec(name, request, authorize, handler, resources, response, kafka, path)
    REGISTRY[name] = spec
    return spec


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
    duration_ms: float

    @property
    def trail(self) -> RequestTrail:
        return self.caller.trail


# The audit trail registers its recorder here (audit.apps): the runtime does not import apps.
AUDITORS: list[Callable[[Executed], None]] = []


def register_auditor(auditor: Callable[[Executed], None]) -> None:
    add_once(AUDITORS, auditor)


def execute(
    spec: ApiSpec, body: Any, caller: Caller, *, refusal: RpcAnswer | None = None
) -> RpcAnswer:
    """Run one admin RPC as `caller`: the one path of every front door. `refusal` is the
    answer to a body that could not even be read; authorization is still checked first."""
    trail = RequestTrail(rpc=spec.name, started_ms=now_ms(), forwarding=caller.forwarding)
    caller = dataclasses.replace(caller, trail=trail)
    started = time.perf_counter()
    # Answers this process relayed ahead of the tables: what follows reads them there (a
    # handler's checks before its write too, such as a DeleteTopics naming a topic by id).
    tables_barrier.wait()
    answer = _answer(spec, body, caller, refusal)
    if trail.ahead_of_tables and trail.last_offset is not None:
        tables_barrier.note(trail.last_offset)
    executed = Executed(
        spec, caller, None if refusal else body, answer, (time.perf_counter() - started) * 1000
    )
    for auditor in AUDITORS:
        try:
            auditor(executed)
        except Exception:  # the answer stands: a trail that could not name it is logged, not a 500
            logger.exception("could not audit %s", spec.name)
    return answer


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
