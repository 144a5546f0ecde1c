"""DescribeQuorum (KIP-595/KIP-853) for `kafka-metadata-quorum.sh`: the quorum of
`__cluster_metadata`-0 as this control plane runs it. The leader is the active controller (its
id and epoch: the lease's), the high watermark the committed log end; voters are the
controllers (one per controller id, active or standby, with the end of the log their image
holds), observers the brokers (the metadata offset their heartbeats report). DESCRIBE on
CLUSTER, as Kafka asks."""

from __future__ import annotations

from typing import Any

from kio.index import load_response_schema

from brokers.selectors import broker_sessions
from controlplane.authz import require_cluster
from controlplane.controller.acls.bindings import AclOperation
from controlplane.controller.errors import ApiError, Errors
from controlplane.models import KRaftQuorum
from controlplane.runtime.lease import cluster_read, now_ms
from controlplane.selectors import controller_active, quorum_voters
from wire.apis.base import BOTH_ROLES, WireRequest, wire_api
from wire.convert import from_data

DESCRIBE_QUORUM = 55
METADATA_TOPIC = "__cluster_metadata"


@wire_api("DescribeQuorum", DESCRIBE_QUORUM, (0, 2), roles=BOTH_ROLES)
def describe_quorum(request: WireRequest) -> Any:
    response_class = load_response_schema(request.api_key, request.api_version)
    try:
        require_cluster(
            request.caller.principal, host=request.caller.host, operation=AclOperation.DESCRIBE
        )
        asked = [
            (t.topic_name, int(p.partition_index))
            for t in request.body.topics
            for p in t.partitions
        ]
        if asked != [(METADATA_TOPIC, 0)]:
            raise ApiError(
                Errors.INVALID_REQUEST, f"Only {METADATA_TOPIC}-0 has a quorum to describe."
            )
    except ApiError as error:
        return from_data(
            response_class,
            {"error_code": int(error.error), "error_message": error.message, "topics": []},
        )
    return from_data(response_class, quorum(request))


def quorum(request: WireRequest) -> dict[str, Any]:
    cluster = cluster_read()
    active = controller_active(cluster)
    voters = [_leader_at_the_end(v, cluster) if active else v for v in quorum_voters()]
    observers = [
        {
            "replica_id": broker_id,
            "log_end_offset": session["metadata_offset"] + 1,
            "last_fetch_timestamp": session["last_contact_ms"],
            "last_caught_up_timestamp": session["last_contact_ms"]
            if session["metadata_offset"] >= cluster.last_offset
            else -1,
        }
        for broker_id, session in sorted(broker_sessions().items())
    ]
    advertised = request.advertised
    listener = request.listener_name or request.listener
    endpoints = voter_endpoints()
    return {
        "error_code": 0,
        "error_message": None,
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "error_message": None,
                        "leader_id": cluster.controller_id if active else -1,
                        "leader_epoch": cluster.controller_epoch,
                        "high_watermark": cluster.last_offset + 1,
                        "current_voters": voters,
                        "observers": observers,
                    }
                ],
            }
        ],
        "nodes": [
            {
                "node_id": voter["replica_id"],
                "listeners": endpoints.get(voter["replica_id"])
                or [{"name": listener, "host": advertised.host, "port": advertised.port}],
            }
            for voter in voters
        ],
    }


def _leader_at_the_end(voter: dict[str, int], cluster: Any) -> dict[str, int]:
    """The active controller's log ends where the log is committed (its row says where it
    stood when it took the lease): the end every observer's lag is counted from."""
    if voter["replica_id"] != cluster.controller_id:
        return voter
    now = now_ms()
    end = max(voter["log_end_offset"], cluster.last_offset + 1)
    return {
        **voter,
        "log_end_offset": end,
        "last_fetch_timestamp": now,
        "last_caught_up_timestamp": now,
    }


def voter_endpoints() -> dict[int, list[dict[str, Any]]]:
    """Each voter's listeners as the log's voter set (KIP-853) says them, by voter id."""
    quorum = KRaftQuorum.objects.filter(pk=1).first()
    if quorum is None:
        return {}
    return {
        int(voter["voter_id"]): [
            {"name": e["name"], "host": e["host"], "port": e["port"]} for e in voter["endpoints"]
        ]
        for voter in quorum.voters
    }


CONTROLLER_ENDPOINTS = 2  # KIP-919's DescribeClusterRequest.EndpointType.CONTROLLER


def describe_controllers(request: WireRequest) -> Any:
    """DescribeCluster on a controller listener (KIP-919: an admin client bootstrapped with
    `--bootstrap-controller`): the controllers, each at this listener's address, and the active
    one as `controller_id`; a request for broker endpoints is UNSUPPORTED_ENDPOINT_TYPE here,
    as on Kafka's controllers."""
    response_class = load_response_schema(request.api_key, request.api_version)
    endpoint_type = int(getattr(request.body, "endpoint_type", 1))
    try:
        if endpoint_type != CONTROLLER_ENDPOINTS:
            raise ApiError(
                Errors.UNSUPPORTED_ENDPOINT_TYPE,
                f"Endpoint type {endpoint_type} is not supported on a controller listener.",
            )
        require_cluster(
            request.caller.principal, host=request.caller.host, operation=AclOperation.DESCRIBE
        )
    except ApiError as error:
        return from_data(
            response_class,
            {
                "error_code": int(error.error),
                "error_message": error.message,
                "endpoint_type": endpoint_type,
                "brokers": [],
            },
        )
    cluster = cluster_read()
    advertised = request.advertised
    return from_data(
        response_class,
        {
            "error_code": 0,
            "endpoint_type": CONTROLLER_ENDPOINTS,
            "cluster_id": cluster.cluster_id,
            "controller_id": cluster.controller_id if controller_active(cluster) else -1,
            "brokers": [
                {"broker_id": v["replica_id"], "host": advertised.host, "port": advertised.port}
                for v in quorum_voters()
            ],
            "cluster_authorized_operations": -2147483648,
        },
    )
