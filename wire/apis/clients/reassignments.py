"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), KIP-455: each request
becomes the REST body of its RPC (`replicas.rpcs`), runs through `controlplane.rpc.execute`
(CLUSTER ALTER or DESCRIBE, validation, the controller, the audit row), and its answer becomes
the response of the request's version. Served on client listeners, on the controller listener
(Kafka's `listeners: broker, controller`) and inside a broker's Envelope (both are forwardable).

A whole-request error (authorization, an invalid body, NOT_CONTROLLER, POLICY_VIOLATION for a
request too large for one operation) is the response's top-level error and, for Alter, every
partition's, as Kafka's getErrorResponse answers.
"""

from __future__ import annotations

from typing import Any

from controlplane.tables_cache import AnswerCache
from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import respond, run_rpc
from wire.convert import to_data
from wire.protocol import encode_body

Data = dict[str, Any]


def _body(data: Data) -> Data:
    body = dict(data)
    body["timeout_ms"] = body.pop("timeout", 60_000)
    return body


@wire_api(
    "AlterPartitionReassignments",
    45,
    (0, 1),
    roles=BOTH_ROLES,
    max_items=MAX_ITEMS_PER_REQUEST,
)
def alter_partition_reassignments(request: WireRequest) -> Any:
    body = _body(to_data(request.body))
    answer = run_rpc("AlterPartitionReassignments", body, request)
    throttle = int(answer.data.get("throttle_time_ms", 0)) if answer.ok else 0
    allow = bool(body.get("allow_replication_factor_change", True))
    if answer.ok:
        return respond(
            request,
            {
                "throttle_time": throttle,
                "allow_replication_factor_change": allow,
                "error_code": answer.data.get("error_code", 0),
                "error_message": answer.data.get("error_message"),
                "responses": answer.data["responses"],
            },
        )
    refused = answer.error_fields()
    return respond(
        request,
        {
            "throttle_time": throttle,
            "allow_replication_factor_change": allow,
            **refused,
            "responses": [
                {
                    "name": topic["name"],
                    "partitions": [
                        {"partition_index": p["partition_index"], **refused}
                        for p in topic.get("partitions") or ()
                    ],
                }
                for topic in body.get("topics") or ()
            ],
        },
    )


# Encoded answers of the listings read at one offset of the tables (`replicas.selectors.
# ReassignmentListing`), by that offset, the partitions asked and the version: a tool polling
# 3,000 moving partitions has them encoded once per change of the tables, not once per poll.
ENCODED_LISTINGS: AnswerCache[bytes] = AnswerCache(8, max_weight=16 << 20, weigh=len)


@wire_api("ListPartitionReassignments", 46, (0, 0), roles=BOTH_ROLES)
def list_partition_reassignments(request: WireRequest) -> Any:
    body = _body(to_data(request.body))
    answer = run_rpc("ListPartitionReassignments", body, request)
    if not answer.ok:
        return respond(request, {"throttle_time": 0, **answer.error_fields(), "topics": []})
    topics = answer.data["topics"]
    throttle = int(answer.data.get("throttle_time_ms", 0))
    read_at = getattr(topics, "read_at", None)
    key = (read_at, getattr(topics, "asked", None), request.api_version, throttle)
    kept = None if read_at is None else ENCODED_LISTINGS.get(key)
    if kept is not None:
        return kept
    encoded = encode_body(
        respond(
            request,
            {"throttle_time": throttle, "error_code": 0, "error_message": None, "topics": topics},
        )
    )
    if read_at is not None:
        ENCODED_LISTINGS.put(key, encoded)
    return encoded
