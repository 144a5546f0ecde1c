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

import functools
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from controlplane.tables_cache import AnswerCache
from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import respond, run_rpc
from wire.convert import to_data
from wire.encoding import EncodedBody, compact_string, uvarint

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
    encoded = encoded_listing(throttle, topics)
    if read_at is not None:
        ENCODED_LISTINGS.put(key, encoded)
    return encoded


_INT32 = struct.Struct(">i").pack
_NO_ERROR = struct.Struct(">ih").pack  # throttle time, error code 0
_NO_TAGS = b"\x00"


def encoded_listing(throttle_ms: int, topics: Iterable[dict[str, Any]]) -> EncodedBody:
    """ListPartitionReassignments v0's response body (flexible: compact arrays and strings,
    no tagged fields), error 0, written straight from the listing: a tool polls every moving
    partition ten times a second while the brokers' reports move the tables between polls,
    so each poll encodes the listing anew, and kio's entities (one per partition, three
    arrays each) cost six times these bytes' time (3,000 moving partitions: 13.6 ms against
    2.2). `tests/wire/test_encoding.py` checks them against kio's writer."""
    parts = [_NO_ERROR(throttle_ms, 0), b"\x00"]  # error_message null
    listed = list(topics)
    parts.append(uvarint(len(listed) + 1))
    for topic in listed:
        parts.append(compact_string(topic["name"]))
        partitions = topic["partitions"]
        parts.append(uvarint(len(partitions) + 1))
        parts.extend(
            _partition(
                p["partition_index"], p["replicas"], p["adding_replicas"], p["removing_replicas"]
            )
            for p in partitions
        )
        parts.append(_NO_TAGS)
    parts.append(_NO_TAGS)
    return EncodedBody(b"".join(parts), ["NONE"])


def _partition(
    index: int, replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int]
) -> bytes:
    """One partition's entry: its index, the three compact arrays, no tagged fields. Lists of
    up to 126 ids (a one-byte length) are written by one struct of their three lengths."""
    lengths = (len(replicas), len(adding), len(removing))
    if max(lengths) < 127:
        return _entry_pack(lengths)(
            index, lengths[0] + 1, *replicas, lengths[1] + 1, *adding, lengths[2] + 1, *removing, 0
        )
    return b"".join(
        (_INT32(index), _int32s(replicas), _int32s(adding), _int32s(removing), _NO_TAGS)
    )


@functools.lru_cache(maxsize=256)
def _entry_pack(lengths: tuple[int, int, int]) -> Callable[..., bytes]:
    first, second, third = lengths
    return struct.Struct(f">iB{first}iB{second}iB{third}iB").pack


def _int32s(values: Sequence[int]) -> bytes:
    return uvarint(len(values) + 1) + struct.pack(f">{len(values)}i", *values)
