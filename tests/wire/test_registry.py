"""One registry: every Kafka admin RPC the REST routes serve (controlplane.controller.api_keys)
is served on the wire under the same apiKey, or named here as a gap."""

from __future__ import annotations

from controlplane.controller.api_keys import ADMIN_APIS, ENVELOPE_API_KEY
from controlplane.rpc import REGISTRY
from wire.apis import load_all
from wire.apis.base import WIRE_APIS
from wire.server import SESSION_APIS

# Kafka's RPCs of the registry that the wire does not serve, and why. Empty: none is missing.
GAPS: dict[str, str] = {}


def test_every_registered_kafka_rpc_is_served_on_the_wire() -> None:
    load_all()
    for name, api in ADMIN_APIS.items():
        assert name in REGISTRY, name  # the REST door serves it
        if name in GAPS:
            assert api.api_key not in WIRE_APIS, f"{name} is served: take it off GAPS"
            continue
        assert api.api_key in WIRE_APIS, f"{name} ({api.api_key}) is not served on the wire"
        assert WIRE_APIS[api.api_key].name == name


# What brokers send the controller, served on its listeners only: the broker lifecycle (most of
# it also the REST internal API's routes, `/internal/v1/...`), not admin RPCs of the registry.
BROKER_LIFECYCLE = {
    1: "Fetch",  # the Raft Fetch of __cluster_metadata-0
    59: "FetchSnapshot",
    56: "AlterPartition",
    62: "BrokerRegistration",
    63: "BrokerHeartbeat",
    67: "AllocateProducerIds",
    73: "AssignReplicasToDirs",  # KIP-858: brokers with several log dirs
}


def test_the_wire_serves_nothing_the_registry_does_not_name() -> None:
    """Besides the connection's own APIs and the Envelope, every wire API is a registered RPC,
    Metadata (which the REST API serves as its read endpoints), or a broker lifecycle RPC of the
    internal API (on controller listeners only)."""
    load_all()
    by_key = {api.api_key: name for name, api in ADMIN_APIS.items()}
    for key, api in WIRE_APIS.items():
        if key in (ENVELOPE_API_KEY, 3):
            continue
        if key == 55:  # DescribeQuorum: the quorum's read, as Metadata is the topics'
            continue
        if key in BROKER_LIFECYCLE:
            assert BROKER_LIFECYCLE[key] == api.name and api.roles == {"controller"}
            continue
        assert by_key.get(key) == api.name, (key, api.name)
    assert not set(SESSION_APIS) & set(WIRE_APIS)
