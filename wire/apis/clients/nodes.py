"""What the client door's answers share: the nodes it advertises (every one at this listener's
own address, see `metadata`), Kafka's error code of a house code, an entity's encoding, and the
operations bits Metadata and DescribeCluster answer (Kafka's authorizedOperations)."""

import dataclasses
import functools
import importlib
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from django.conf import settings
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from brokers import selectors as broker_selectors
from brokers.rpcs import CLUSTER_OPERATIONS
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.canary.rules import BROKER_POD
from controlplane.rpc import Caller
from controlplane.selectors import metadata_head
from wire.encoding import encode as encode_entity


def error_code(code: int) -> ErrorCode:
    """Kafka's error code for `code` (a house code Kafka never defined: UNKNOWN_SERVER_ERROR)."""
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.unknown_server_error


def encode(entity: Any) -> bytes:
    """The entity's encoded body, as the server encodes it (wire.encoding)."""
    return encode_entity(entity)


@functools.cache
def response_module(api_key: int, version: int) -> ModuleType:
    return importlib.import_module(load_response_schema(api_key, version).__module__)


@functools.cache
def field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def make(cls: type, **values: Any) -> Any:
    """`cls` from `values`, leaving out the fields this version lacks."""
    names = field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


# --- the nodes every answer advertises ------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    rack: str | None
    pod: str


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterNodes:
    nodes: tuple[Node, ...]
    controller_id: int  # always one of `nodes`: clients send admin requests to it

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(n.node_id for n in self.nodes)


def cluster_nodes(brokers: Iterable[Mapping[str, Any]], controller_id: int | None) -> ClusterNodes:
    """The nodes to advertise for these live brokers (DescribeCluster's `brokers` shape): their
    ids, racks and pods; one synthetic node when none is alive. The controller is the given one
    when it is listed, else the lowest listed id (the control plane's own controller id is no
    broker's, and clients must reach the node Metadata names as controller)."""
    nodes = tuple(
        Node(int(b["broker_id"]), b.get("rack"), str(b.get("pod") or BROKER_POD)) for b in brokers
    )
    if not nodes:
        synthetic = controller_id if controller_id is not None else settings.CP_CONTROLLER_ID
        nodes = (Node(int(synthetic), None, BROKER_POD),)
    ids = {n.node_id for n in nodes}
    return ClusterNodes(nodes, controller_id if controller_id in ids else nodes[0].node_id)


def advertised_nodes() -> ClusterNodes:
    """The nodes this listener advertises now (two queries): for other handlers (DescribeConfigs
    routes BROKER resources by these ids)."""
    return cluster_nodes(broker_selectors.brokers_alive(), metadata_head()["controller_id"])


def advertised_nodes_for(head: Mapping[str, Any]) -> ClusterNodes:
    return cluster_nodes(broker_selectors.brokers_alive(), head["controller_id"])


# --- authorization ---------------------------------------------------------------------------
def operations_bits(
    caller: Caller, operations: Sequence[AclOperation], rtype: ResourceType, name: str
) -> int:
    """Kafka's authorizedOperations: a bit per supported operation the principal is allowed."""
    return sum(1 << op.value for op in operations if caller.allowed(op, rtype, name))


def cluster_operations(caller: Caller) -> int:
    """As Kafka's Metadata and DescribeCluster answer it: 0 without DESCRIBE on the cluster."""
    if not caller.allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return operations_bits(caller, CLUSTER_OPERATIONS, ResourceType.CLUSTER, CLUSTER_NAME)


# --- Metadata --------------------------------------------------------------------------------
