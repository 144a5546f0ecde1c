"""The Raft `Fetch` of `__cluster_metadata`-0 that Kafka brokers follow (KIP-595), answered as
KafkaRaftClient answers it as the leader, on controller listeners.

The quorum: its leader is this cluster's controller (`controller_id`, the lease's epoch as the
leader epoch), the log the metadata log in Kafka's batches (controlplane.runtime.kraft_log:
encoded once, the same bytes to every broker), the high watermark the committed end. The
checks, in KafkaRaftClient's order: the cluster id (top-level INCONSISTENT_CLUSTER_ID), the
topic and partition (top-level INVALID_REQUEST: a partition-level one is fatal to a broker),
MaxWaitMs, the offset and the last fetched epoch (negative, or an epoch past the one asked:
INVALID_REQUEST), the leader epoch (FENCED_LEADER_EPOCH below it, UNKNOWN_LEADER_EPOCH above,
with the current leader either way), the offset and last fetched epoch against the log's epochs
(`DivergingEpoch` where they part). Nothing to send yet: the listener waits on its event loop
(LongPoll) until a commit or MaxWaitMs, as a Raft leader parks a follower's fetch; what Kafka
answers at once is answered at once (an error, records, a divergence, a snapshot, a high
watermark the follower does not know yet, MaxWaitMs 0). The replica id is not checked: as in
KafkaRaftClient, any replica may follow the log (a broker fetches before it registers, and a
fenced broker catches up by fetching), so a fetch from an unknown or fenced broker is answered,
or parked, as any other.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.index import load_response_schema

from controlplane.controller.errors import Errors
from controlplane.runtime.kraft_log import kafka_snapshot_bytes, kraft_log
from controlplane.runtime.lease import cluster_head
from controlplane.runtime.notifier import notifier
from controlplane.runtime.snapshot_reads import (
    metadata_snapshot_get,
    metadata_snapshot_latest_intact,
)
from wire.apis.base import CONTROLLER_ONLY, LongPoll, WireRequest, wire_api
from wire.apis.controller.voters import ensure_voter_endpoint
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
    requested_epoch = int(partition.current_leader_epoch)
    offset, last_epoch = int(partition.fetch_offset), int(partition.last_fetched_epoch)
    wait_ms = int(body.max_wait.total_seconds() * 1000)
    if wait_ms < 0 or offset < 0 or last_epoch < 0 or last_epoch > requested_epoch:
        return _top_level(request, Errors.INVALID_REQUEST)
    epoch, leader = head["controller_epoch"], head["leader_id"]
    current = {"leader_id": leader, "leader_epoch": epoch}
    if requested_epoch < epoch:
        return _partition(request, head, error=Errors.FENCED_LEADER_EPOCH, current=current)
    if requested_epoch > epoch:
        return _partition(request, head, error=Errors.UNKNOWN_LEADER_EPOCH, current=current)
    if ensure_voter_endpoint(request, head["cluster_id"], leader):
        head = metadata_head_of_quorum()  # with the voters' records just written
    log = kraft_log(head["log_start_offset"], head["cluster_id"])
    log.extend_to(head["last_offset"])
    snapshot = _snapshot_needed(log.start_offset, offset, last_epoch)
    if snapshot is not None:
        return _partition(request, head, current=current, snapshot_id=snapshot)
    if not _at_the_start(log.start_offset, offset, last_epoch):
        found_epoch, end = log.end_offset_for_epoch(last_epoch)
        if found_epoch != last_epoch or end < offset:
            diverging = {"epoch": found_epoch, "end_offset": end}
            return _partition(request, head, current=current, diverging_epoch=diverging)
    max_bytes = min(int(body.max_bytes), int(partition.partition_max_bytes))
    records = log.read(offset, max(max_bytes, 1))
    if not records and not request.waited and wait_ms > 0 and _knows_the_end(partition, head):
        return LongPoll(generation, wait_ms / 1000)
    return _partition(request, head, current=current, records=records)


def _knows_the_end(partition: Any, head: dict[str, Any]) -> bool:
    """Whether the follower already has this high watermark (Fetch v18 sends the one it knows,
    -1 when it knows none; earlier versions none): one behind is answered at once, records or
    not, as KafkaRaftClient answers it rather than parking it."""
    known = getattr(partition, "high_watermark", None)
    return known is None or int(known) >= head["last_offset"] + 1


def _snapshot_needed(start: int, offset: int, last_epoch: int) -> dict[str, int] | None:
    """The snapshot a follower must load first (Kafka's validateOffsetAndEpoch): its offset is
    before the log's start, or at it from another epoch than the snapshot's there."""
    if start == 0 or offset > start:
        return None
    latest = metadata_snapshot_latest_intact()
    if latest is None or latest.end_offset < start:
        return None
    if offset < start or last_epoch != latest.epoch:
        return {"end_offset": latest.end_offset, "epoch": latest.epoch}
    return None


def _at_the_start(start: int, offset: int, last_epoch: int) -> bool:
    """A fetch from where the log starts: offset 0 of an empty history, or the end of the
    snapshot the log goes on from (checked by `_snapshot_needed`)."""
    return (offset == 0 and last_epoch == 0 and start == 0) or (start > 0 and offset == start)


def metadata_head_of_quorum() -> dict[str, Any]:
    """The log's head and the quorum's leader: this cluster's controller id, kept while its
    lease is only between renewals (a broker that lost its leader would refetch for nothing)."""
    cluster = cluster_head()
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
    snapshot_id: dict[str, int] | None = None,
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
    if snapshot_id is not None:
        partition["snapshot_id"] = snapshot_id
    return from_data(
        load_response_schema(request.api_key, request.api_version),
        {
            "error_code": 0,
            "session_id": 0,
            "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}],
            "node_endpoints": _endpoints(request, current["leader_id"]),
        },
    )


def _endpoints(request: WireRequest, leader_id: int) -> list[dict[str, Any]]:
    """The leader's endpoint on this listener (Fetch v16+ and FetchSnapshot v1 NodeEndpoints):
    a leader named without one is fatal to a broker that does not know it as a voter."""
    if leader_id == NO_LEADER:
        return []
    advertised = request.advertised
    return [{"node_id": leader_id, "host": advertised.host, "port": advertised.port, "rack": None}]


FETCH_SNAPSHOT = 59
METADATA_TOPIC = "__cluster_metadata"


@wire_api("FetchSnapshot", FETCH_SNAPSHOT, (0, 1), roles=CONTROLLER_ONLY)
def fetch_snapshot(request: WireRequest) -> Any:
    """A piece of the snapshot a Fetch named (KIP-630): the snapshot in Kafka's checkpoint
    format from `position`, at most `max_bytes`, and its whole size; SNAPSHOT_NOT_FOUND for a
    snapshot id this log does not keep, POSITION_OUT_OF_RANGE past its end."""
    body = request.body
    head = metadata_head_of_quorum()
    response_class = load_response_schema(request.api_key, request.api_version)
    if body.cluster_id is not None and body.cluster_id != head["cluster_id"]:
        return from_data(
            response_class, {"error_code": int(Errors.INCONSISTENT_CLUSTER_ID), "topics": []}
        )
    asked = [(t.name, p) for t in body.topics for p in t.partitions]
    if len(asked) != 1 or asked[0][0] != METADATA_TOPIC or int(asked[0][1].partition) != 0:
        return from_data(response_class, {"error_code": int(Errors.INVALID_REQUEST), "topics": []})
    part = asked[0][1]
    epoch = head["controller_epoch"]
    current = {"leader_id": head["leader_id"], "leader_epoch": epoch}
    wanted = {"end_offset": int(part.snapshot_id.end_offset), "epoch": int(part.snapshot_id.epoch)}
    answer: dict[str, Any] = {
        "index": 0,
        "error_code": 0,
        "snapshot_id": wanted,
        "current_leader": current,
        "size": 0,
        "position": int(part.position),
        "unaligned_records": b"",
    }
    leader_epoch = int(part.current_leader_epoch)
    snapshot = metadata_snapshot_get(end_offset=wanted["end_offset"])
    if leader_epoch != epoch:
        stale = leader_epoch < epoch
        answer["error_code"] = int(
            Errors.FENCED_LEADER_EPOCH if stale else Errors.UNKNOWN_LEADER_EPOCH
        )
    elif snapshot is None or snapshot.epoch != wanted["epoch"]:
        answer["error_code"] = int(Errors.SNAPSHOT_NOT_FOUND)
    else:
        data = kafka_snapshot_bytes(snapshot, head["cluster_id"])
        position = int(part.position)
        if position < 0 or position >= len(data):
            answer["error_code"] = int(Errors.POSITION_OUT_OF_RANGE)
        else:
            answer["size"] = len(data)
            answer["unaligned_records"] = data[position : position + max(int(body.max_bytes), 1)]
    return from_data(
        response_class,
        {
            "error_code": 0,
            "topics": [{"name": METADATA_TOPIC, "partitions": [answer]}],
            "node_endpoints": _endpoints(request, head["leader_id"]),
        },
    )
