"""DescribeCluster (60): the live brokers as the DescribeCluster RPC lists them, each advertised
at this listener with its KIP-1095 pod (a tagged field of our own, `POD_TAG`, that stock
clients skip); on a controller listener, the controllers (KIP-919, `controller.quorum`)."""

# No `from __future__ import annotations`: kio reads the Pod subclasses' field types, which
# must be types, not strings.
import dataclasses
import datetime
from typing import Any

import kio.schema.describe_cluster.v1.response as describe_cluster_v1
import kio.schema.describe_cluster.v2.response as describe_cluster_v2
from kio.schema.errors import ErrorCode

from brokers import selectors as broker_selectors
from canary.clients.wire import POD_TAG
from controlplane.rpc import REGISTRY, execute
from wire.apis.base import BOTH_ROLES, Advertised, WireRequest, wire_api
from wire.apis.clients.nodes import cluster_nodes, error_code, make
from wire.apis.controller.quorum import describe_controllers
from wire.listeners import CONTROLLER

DESCRIBE_CLUSTER_API_KEY = 60
NO_THROTTLE = datetime.timedelta(0)


def _pod_field() -> Any:
    return dataclasses.field(metadata={"kafka_type": "string", "tag": POD_TAG}, default=None)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PodDescribeClusterBrokerV1(describe_cluster_v1.DescribeClusterBroker):
    pod: str | None = _pod_field()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PodDescribeClusterResponseV1(describe_cluster_v1.DescribeClusterResponse):
    brokers: tuple[PodDescribeClusterBrokerV1, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PodDescribeClusterBrokerV2(describe_cluster_v2.DescribeClusterBroker):
    pod: str | None = _pod_field()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PodDescribeClusterResponseV2(describe_cluster_v2.DescribeClusterResponse):
    brokers: tuple[PodDescribeClusterBrokerV2, ...]


DESCRIBE_CLUSTER_CLASSES: dict[int, tuple[type, type]] = {
    1: (PodDescribeClusterResponseV1, PodDescribeClusterBrokerV1),
    2: (PodDescribeClusterResponseV2, PodDescribeClusterBrokerV2),
}


@wire_api("DescribeCluster", DESCRIBE_CLUSTER_API_KEY, (1, 2), roles=BOTH_ROLES)
def describe_cluster(request: WireRequest) -> Any:
    """The DescribeCluster RPC's answer, its brokers advertised at this listener with their
    pods (v2's fenced brokers, when asked, from the brokers the REST API lists). v0 is not
    served: kafka-python breaks on it. On a controller listener: the controllers (KIP-919)."""
    if request.listener_role == CONTROLLER:
        return describe_controllers(request)
    body = request.body
    response_cls, broker_cls = DESCRIBE_CLUSTER_CLASSES[request.api_version]
    endpoint_type = int(getattr(body, "endpoint_type", 1))
    if endpoint_type != 1:  # a broker describes brokers only (KIP-919)
        return make(
            response_cls,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.unsupported_endpoint_type,
            error_message=f"Endpoint type {endpoint_type} is not supported.",
            endpoint_type=endpoint_type,
            cluster_id="",
            brokers=(),
        )
    answer = execute(
        REGISTRY["DescribeCluster"],
        {"include_cluster_authorized_operations": bool(body.include_cluster_authorized_operations)},
        request.caller,
    )
    data = answer.data
    code = error_code(data.get("error_code", 0))
    if answer.status != 200 or code is not ErrorCode.none:
        return make(
            response_cls,
            throttle_time=datetime.timedelta(milliseconds=int(data.get("throttle_time_ms", 0))),
            error_code=code,
            error_message=data.get("error_message"),
            cluster_id="",
            brokers=(),
        )
    controller = data.get("controller_id")
    nodes = cluster_nodes(data["brokers"], None if controller in (None, -1) else controller)
    advertised: Advertised = request.advertised
    brokers = [
        make(
            broker_cls,
            broker_id=n.node_id,
            host=advertised.host,
            port=advertised.port_of(n.node_id),
            rack=n.rack,
            pod=n.pod,
            is_fenced=False,
        )
        for n in nodes.nodes
    ]
    if getattr(body, "include_fenced_brokers", False):
        brokers += [
            make(
                broker_cls,
                broker_id=b.broker_id,
                host=advertised.host,
                port=advertised.port_of(b.broker_id),
                rack=b.rack,
                pod=b.pod,
                is_fenced=True,
            )
            for b in broker_selectors.broker_list().filter(fenced=True)
        ]
    return make(
        response_cls,
        throttle_time=datetime.timedelta(milliseconds=int(data.get("throttle_time_ms", 0))),
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=1,
        cluster_id=data["cluster_id"],
        controller_id=nodes.controller_id,
        brokers=tuple(brokers),
        cluster_authorized_operations=int(data["cluster_authorized_operations"]),
    )
