"""The Raft `Fetch` of `__cluster_metadata`-0 that Kafka brokers follow (KIP-595), answered as
KafkaRaftClient answers it as the leader, on controller listeners.

The quorum: its leader is this cluster's controller (`controller_id`, the lease's epoch as the
leader epoch), the log the metadata log in Kafka's batches (controlplane.runtime.kraft_log:
encoded once, the same bytes to every broker), the high watermark the committed end. The
checks, in KafkaRaftClient's order: the cluster id (top-level INCONSISTENT_CLUSTER_ID), the
topic and partition (top-level INVALID_REQUEST: a partition-level one is fatal to a broker),
the leader epoch (FENCED_LEADER_EPOCH below it, UNKNOWN_LEADER_EPOCH above, with the current
leader either way), the offset and last fetched epoch against the log's epochs
(`DivergingEpoch` where they part). Nothing to send yet: the listener waits on its event loop
(LongPoll) until a commit or MaxWaitMs, as a Raft leader parks a follower's fetch.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.index import load_response_schema

from controlplane.controller.errors import Errors
from controlplane.runtime.kraft_log import kraft_log
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.notifier import notifier
from wire.apis.base import CONTROLLER_ONLY, LongPoll, WireRequest, wire_api
from wire.convert import from_data

FETCH = 1
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID, AAAAAAAAAAAAAAAAAAAAAQ
NO_LEADER = -1


@wire_api("Fetch", FETCH, (13, 18), roles=CONTROLLER_ONLY)
def fetch(request: WireRequest) -> Any:
    generation = notifier.generation  # read first: a commit after it wakes a parked fetch
    body = request.body
    head = metadata_head_of_quorum()
    if body.cluster_id is not None and body.cluster_id != head["cluster_id"]:
        return _top_level(request, Errors.INCONSISTENT_CLUSTER_ID)
    asked = [(t.topic_id, p) for t in body.topics for p in t.partitions]
    if len(asked) != 1 or asked[0][0] != METADATA_TOPIC_ID or int(asked[0][1].partition) != 0:
        return _top_level(request, Errors.INVALID_REQUEST)
    partition = asked[0][1]
    epoch, leader = head["controller_epoch"], head["leader_id"]
    current = {"leader_id": leader, "leader_epoch": epoch}
    requested_epoch = int(partition.current_leader_epoch)
    if requested_epoch < epoch:
        return _partition(request, head, error=Errors.FENCED_LEADER_EPOCH, current=current)
    if requested_epoch > epoch:
        return _partition(request, head, error=Errors.UNKNOWN_LEADER_EPOCH, current=current)
    offset, last_epoch = int(partition.fetch_offset), int(partition.last_fetched_epoch)
    if offset < 0 or last_epoch < 0 or last_epoch > epoch:
        return _top_level(request, Errors.INVALID_REQUEST)
    log = kraft_log(head["log_start_offset"], head["cluster_id"])
    log.extend_to(head["last_offset"])
    if not (offset == 0 and last_epoch == 0 and log.start_offset == 0):
        found_epoch, end = log.end_offset_for_epoch(last_epoch)
        if found_epoch != last_epoch or end < offset:
            diverging = {"epoch": found_epoch, "end_offset": end}
            return _partition(request, head, current=current, diverging_epoch=diverging)
    max_bytes = min(int(body.max_bytes), int(partition.partition_max_bytes))
    records = log.read(offset, max(max_bytes, 1))
    wait_ms = int(body.max_wait.total_seconds() * 1000)
    if not records and not request.waited and wait_ms > 0:
        return LongPoll(generation, wait_ms / 1000)
    return _partition(request, head, current=current, records=records)


def metadata_head_of_quorum() -> dict[str, Any]:
    """The log's head and the quorum's leader: this cluster's controller id, kept while its
    lease is only between renewals (a broker that lost its leader would refetch for nothing)."""
    cluster = cluster_read()
    controller = cluster.controller_id
    return {
        "cluster_id": cluster.cluster_id,
        "controller_epoch": cluster.controller_epoch,
        "last_offset": cluster.last_offset,
        "log_start_offset": cluster.log_start_offset,
        "leader_id": NO_LEADER if controller is None else int(controller),
    }


def _top_level(request: WireRequest, error: Errors) -> Any:
    return from_data(
        load_response_schema(request.api_key, request.api_version),
        {"error_code": int(error), "responses": []},
    )


def _partition(
    request: WireRequest,
    head: dict[str, Any],
    *,
    current: dict[str, int],
    error: Errors = Errors.NONE,
    records: bytes = b"",
    diverging_epoch: dict[str, int] | None = None,
) -> Any:
    high_watermark = head["last_offset"] + 1
    partition: dict[str, Any] = {
        "partition_index": 0,
        "error_code": int(error),
        "high_watermark": high_watermark,
        "last_stable_offset": high_watermark,
        "log_start_offset": head["log_start_offset"],
        "current_leader": current,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": records,
    }
    if diverging_epoch is not None:
        partition["diverging_epoch"] = diverging_epoch
    advertised = request.advertised
    endpoints = []
    if current["leader_id"] != NO_LEADER:
        endpoints = [
            {
                "node_id": current["leader_id"],
                "host": advertised.host,
                "port": advertised.port,
                "rack": None,
            }
        ]
    return from_data(
        load_response_schema(request.api_key, request.api_version),
        {
            "error_code": 0,
            "session_id": 0,
            "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}],
            "node_endpoints": endpoints,
        },
    )
