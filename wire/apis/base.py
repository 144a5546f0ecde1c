"""What a wire API handler gets and gives: a decoded kio request of one version in, the kio
response of that same version out. Handlers translate and call `controlplane.rpc.execute` (or
the selectors the REST views read): no business rule lives here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from controlplane.rpc import Caller


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


WIRE_APIS: dict[int, WireApi] = {}


def wire_api(
    name: str, api_key: int, versions: tuple[int, int], *, before_authentication: bool = False
) -> Callable[[Handler], Handler]:
    """Register the handler of Kafka's API `name` (`api_key`) for `versions` (inclusive)."""

    def register(handler: Handler) -> Handler:
        if api_key in WIRE_APIS:
            raise ValueError(f"{name} ({api_key}) is served twice")
        WIRE_APIS[api_key] = WireApi(
            name, api_key, versions[0], versions[1], handler, before_authentication
        )
        return handler

    return register
