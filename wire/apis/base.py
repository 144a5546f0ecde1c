"""What a wire API handler gets and gives: a decoded kio request of one version in, the kio
response of that same version out. Handlers translate and call `controlplane.rpc.execute` (or
the selectors the REST views read): no business rule lives here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from controlplane.rpc import Caller
from wire.listeners import CLIENT, CONTROLLER

# What one request's list may hold (its first field's items), as the REST bodies bound their
# lists (Kafka's MAX_RECORDS_PER_USER_OP for ACLs): read from the list's length before anything
# of it is decoded, so a hostile frame costs no more than its bytes.
MAX_ITEMS_PER_REQUEST = 10_000
CLIENT_ONLY = frozenset({CLIENT})
CONTROLLER_ONLY = frozenset({CONTROLLER})
BOTH_ROLES = frozenset({CLIENT, CONTROLLER})


@dataclasses.dataclass(frozen=True, slots=True)
class Advertised:
    """Where this listener is reached: every node clients learn of is advertised here (the
    registered brokers' own addresses may be ones nobody listens on, as the simulator's).

    By default every node shares the listener's address. With a port per node (`serve_kafka
    --port-per-node`) each node id gets a port of its own on this listener, as a Kafka proxy
    gives each broker one: a client that keys its connections by address (kafkajs takes every
    node at the bootstrap address for the bootstrap broker, and reconnects whenever their racks
    differ) then sees one address per node."""

    host: str
    port: int
    node_port: Callable[[int], int] | None = dataclasses.field(
        default=None, compare=False, hash=False
    )

    def port_of(self, node_id: int) -> int:
        return self.port if self.node_port is None else self.node_port(node_id)


@dataclasses.dataclass(frozen=True, slots=True)
class WireRequest:
    """One decoded request and who sent it, as a handler sees it."""

    api_key: int
    api_version: int
    correlation_id: int
    body: Any  # the kio request entity of `api_version`
    caller: Caller  # principal, client address, client id, request id
    advertised: Advertised
    listener: str  # the security protocol: PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL
    listener_name: str = ""  # Kafka's ListenerName (CONTROLLER, ...); "" is the protocol's
    listener_role: str = CLIENT
    waited: bool = False  # asked again after its LongPoll: answer now, even with nothing
    throttle_time_ms: int = 0  # past its rate (a broker's heartbeats): the answer carries it


@dataclasses.dataclass(frozen=True, slots=True)
class LongPoll:
    """What a handler answers when it has nothing yet and the request may wait (a Fetch's
    MaxWaitMs): the listener waits on its event loop, holding no thread, until the metadata log
    moves past `generation` (controlplane.runtime.notifier) or `timeout_s` passes, then asks the
    handler again (`WireRequest.waited`)."""

    generation: int
    timeout_s: float


# A handler answers the kio response entity of the request's version (kio.index.
# load_response_schema(api_key, version)), or raises; the server answers an exception
# with the API's error response where it can, else closes the connection, as Kafka does.
Handler = Callable[[WireRequest], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class WireApi:
    name: str  # Kafka's RPC name (as controlplane.controller.api_keys names it)
    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    # Served before SASL authentication completes (ApiVersions, SaslHandshake, SaslAuthenticate)
    before_authentication: bool = False
    # The listener roles it is served on (Kafka's ApiMessageType listeners): clients' or the
    # controller's, where brokers reach it.
    roles: frozenset[str] = CLIENT_ONLY
    # The bound on its first field's list (None: its body has no leading list to bound).
    max_items: int | None = None


WIRE_APIS: dict[int, WireApi] = {}


def wire_api(
    name: str,
    api_key: int,
    versions: tuple[int, int],
    *,
    before_authentication: bool = False,
    roles: frozenset[str] = CLIENT_ONLY,
    max_items: int | None = None,
) -> Callable[[Handler], Handler]:
    """Register the handler of Kafka's API `name` (`api_key`) for `versions` (inclusive)."""

    def register(handler: Handler) -> Handler:
        if api_key in WIRE_APIS:
            raise ValueError(f"{name} ({api_key}) is served twice")
        WIRE_APIS[api_key] = WireApi(
            name,
            api_key,
            versions[0],
            versions[1],
            handler,
            before_authentication,
            roles,
            max_items,
        )
        return handler

    return register
