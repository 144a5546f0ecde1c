"""The Raft Fetch of `__cluster_metadata`-0 on the controller listener (issue 35, point 2), as
a stock broker sends it: the log in Kafka's batches from any offset, the leader and its epoch,
the high watermark, diverging epochs, the top-level errors a broker survives, and a long poll
that a commit wakes."""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17 import request as fetch_v17

from controlplane.controller.features import BOOTSTRAP_FEATURES
from controlplane.controller.kraft import decode_records
from controlplane.models import MetadataRecord
from controlplane.principals import principal_create
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create, cluster_head, cluster_read
from tests.conftest import registration_body
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_server import authenticate
from wire.apis.controller.raft import METADATA_TOPIC_ID

pytestmark = pytest.mark.django_db(transaction=True)


def fetch(
    offset: int,
    last_epoch: int,
    leader_epoch: int,
    *,
    cluster_id: str | None = None,
    topic_id: uuid.UUID = METADATA_TOPIC_ID,
    max_wait_ms: int = 0,
    max_bytes: int = 8 << 20,
) -> fetch_v17.FetchRequest:
    partition = fetch_v17.FetchPartition(
        partition=0,
        current_leader_epoch=leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        log_start_offset=-1,
        partition_max_bytes=max_bytes,
        replica_directory_id=uuid.uuid4(),
    )
    return fetch_v17.FetchRequest(
        cluster_id=cluster_id,
        replica_state=fetch_v17.ReplicaState(replica_id=1, replica_epoch=-1),
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=0,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(fetch_v17.FetchTopic(topic_id=topic_id, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )


def register(broker_id: int) -> None:
    event = ControllerEvent(
        "BrokerRegistration",
        registration_body(broker_id, cluster_get_or_create().cluster_id),
        RequestContext(principal="User:broker", request_id=str(uuid.uuid4())),
    )
    assert get_runtime().handle(event).error_code == 0


def voters_written(follower: Any) -> Any:
    """The first Fetch a controller listener serves writes its voter to the log (KIP-853):
    done once, the cluster as it is after it."""
    cluster = cluster_read()
    epoch = cluster.controller_epoch
    only(follower.request(fetch(cluster.last_offset + 1, epoch, epoch, max_wait_ms=0)))
    return cluster_read()


@pytest.fixture
def follower(wire_listener: RunningListener) -> Any:
    token = principal_create(name="raft-follower", broker=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "raft-follower", token) == ErrorCode.none
        yield client


def only(response: Any) -> Any:
    assert response.error_code == ErrorCode.none, response
    (topic,) = response.responses
    assert topic.topic_id == METADATA_TOPIC_ID
    (partition,) = topic.partitions
    return partition


def test_a_follower_reads_the_whole_log_in_kafkas_batches(
    follower: Any, wire_listener: RunningListener
) -> None:
    for broker_id in (1, 2, 3):
        register(broker_id)
    cluster = cluster_read()
    epoch = cluster.controller_epoch
    # A fresh broker knows no epoch: it learns the leader from FENCED_LEADER_EPOCH.
    fresh = only(follower.request(fetch(0, 0, 0)))
    assert fresh.error_code == ErrorCode.fenced_leader_epoch
    assert (fresh.current_leader.leader_id, fresh.current_leader.leader_epoch) == (
        cluster.controller_id,
        epoch,
    )
    answer = follower.request(fetch(0, 0, epoch, cluster_id=cluster.cluster_id))
    assert [(n.node_id, n.host, n.port) for n in answer.node_endpoints] == [
        (cluster.controller_id, wire_listener.host, wire_listener.controller_port)
    ]
    partition = only(answer)
    assert partition.error_code == ErrorCode.none
    # KIP-853: the first Fetch through the controller listener put the voter there in the log
    # (kraft.version 1, then the voters), which that Fetch already carries.
    cluster = cluster_read()
    assert partition.high_watermark == cluster.last_offset + 1
    decoded = list(decode_records(bytes(partition.records)))
    stored = list(MetadataRecord.objects.order_by("offset").values_list("offset", "record_type"))
    assert [offset for offset, _ in decoded] == [offset for offset, _ in stored]
    names = [record.name for _, record in decoded]
    assert names[: len(BOOTSTRAP_FEATURES)] == ["FeatureLevelRecord"] * len(BOOTSTRAP_FEATURES)
    assert names.count("RegisterBrokerRecord") == 3
    kraft, voters = (record for _, record in decoded[-2:])
    assert (kraft.name, kraft.is_control, kraft.fields["KRaftVersion"]) == (
        "KRaftVersionRecord",
        True,
        1,
    )
    (voter,) = voters.fields["Voters"]
    assert (voters.name, voter["VoterId"]) == ("VotersRecord", cluster.controller_id)
    assert [(e["Name"], e["Host"], e["Port"]) for e in voter["Endpoints"]] == [
        ("CONTROLLER", wire_listener.host, wire_listener.controller_port)
    ]
    # From an offset inside a batch: that batch's rest, cut where the follower's log ends.
    middle = len(BOOTSTRAP_FEATURES) + 1
    tail = only(follower.request(fetch(middle, epoch, epoch)))
    assert [o for o, _ in decode_records(bytes(tail.records))] == list(
        range(middle, cluster.last_offset + 1)
    )
    # At the end, without waiting: nothing, the same high watermark.
    end = only(follower.request(fetch(cluster.last_offset + 1, epoch, epoch)))
    assert bytes(end.records) == b"" and end.high_watermark == cluster.last_offset + 1


def test_the_head_a_fetch_reads_is_the_cluster_rows() -> None:
    def as_read() -> tuple[object, ...]:
        row = cluster_read()
        return (
            row.cluster_id,
            row.controller_id,
            row.controller_epoch,
            row.last_offset,
            row.log_start_offset,
        )

    assert tuple(cluster_head()) == as_read()  # before any controller ran: no row yet
    register(1)
    head = cluster_head()
    assert tuple(head) == as_read()
    assert head.controller_epoch >= 1 and head.last_offset >= 0 and head.controller_id is not None


def test_epochs_and_divergence(follower: Any) -> None:
    register(1)
    cluster = voters_written(follower)
    epoch = cluster.controller_epoch
    ahead = only(follower.request(fetch(0, 0, epoch + 1)))
    assert ahead.error_code == ErrorCode.unknown_leader_epoch
    # A follower whose last batch came from an epoch this log never had: where it diverges.
    assert epoch >= 1
    diverged = only(follower.request(fetch(cluster.last_offset + 5, epoch, epoch)))
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (
        epoch,
        cluster.last_offset + 1,
    )
    assert bytes(diverged.records) == b""


def test_top_level_errors_a_broker_survives(follower: Any) -> None:
    register(1)
    epoch = cluster_read().controller_epoch
    other = follower.request(fetch(0, 0, epoch, cluster_id="another-cluster"))
    assert other.error_code == ErrorCode.inconsistent_cluster_id and other.responses == ()
    wrong = follower.request(fetch(0, 0, epoch, topic_id=uuid.uuid4()))
    assert wrong.error_code == ErrorCode.invalid_request and wrong.responses == ()
    negative = follower.request(fetch(-1, 0, epoch))
    assert negative.error_code == ErrorCode.invalid_request


def test_a_parked_fetch_is_woken_by_a_commit(follower: Any) -> None:
    register(1)
    cluster = voters_written(follower)
    epoch, end = cluster.controller_epoch, cluster.last_offset + 1
    started = time.monotonic()
    idle = only(follower.request(fetch(end, epoch, epoch, max_wait_ms=300)))
    assert bytes(idle.records) == b"" and time.monotonic() - started >= 0.25
    threading.Timer(0.3, register, args=(2,)).start()
    started = time.monotonic()
    woken = only(follower.request(fetch(end, epoch, epoch, max_wait_ms=10_000)))
    assert time.monotonic() - started < 5  # the commit, not the 10 s wait, answered it
    assert [r.name for _, r in decode_records(bytes(woken.records))] == ["RegisterBrokerRecord"]


def test_a_follower_behind_the_logs_start_loads_the_snapshot(
    follower: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """After retention the log starts at the latest snapshot's end: a follower from offset 0
    is told its SnapshotId, fetches the snapshot (Kafka's checkpoint format) in pieces, then
    fetches the log from the snapshot's end."""
    from controlplane.controller.kraft import decode_batches
    from controlplane.runtime import snapshots
    from tests.api.test_metadata_snapshots import KEEP_ONE

    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [])
    snapshots.snapshot_state_reset()
    for broker_id in (1, 2):
        register(broker_id)
    voters_written(follower)
    assert snapshots.metadata_snapshot_create(config=KEEP_ONE) is not None
    register(3)
    latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert latest is not None
    register(4)
    cluster = cluster_read()
    assert cluster.log_start_offset == latest.end_offset > 0
    epoch = cluster.controller_epoch
    told = only(follower.request(fetch(0, 0, epoch)))
    assert (told.snapshot_id.end_offset, told.snapshot_id.epoch) == (
        latest.end_offset,
        latest.epoch,
    )
    assert bytes(told.records) == b""
    pieces, position, size = [], 0, None
    while size is None or position < size:
        answer = follower.request(
            snapshot_request(latest.end_offset, latest.epoch, epoch, position)
        )
        (part,) = answer.topics[0].partitions
        assert part.error_code == ErrorCode.none, part
        size = int(part.size)
        pieces.append(bytes(part.unaligned_records))
        position += len(pieces[-1])
    assert len(pieces) > 1  # 256 bytes at a time
    batches = decode_batches(b"".join(pieces))
    assert batches[0].is_control and batches[-1].is_control  # SnapshotHeader ... SnapshotFooter
    names = [r.name for _, r in decode_records(b"".join(pieces))]
    assert names[0] == "SnapshotHeaderRecord" and names[-1] == "SnapshotFooterRecord"
    # KIP-853: the quorum's version and voters ride in the header's control batch.
    assert names[1:3] == ["KRaftVersionRecord", "VotersRecord"]
    assert batches[0].records[2].key is not None and len(batches[0].records) == 3
    assert names[3] == "FeatureLevelRecord" and names.count("RegisterBrokerRecord") == 3
    (tmp_path / "snapshot.checkpoint").write_bytes(b"".join(pieces))
    # From the snapshot's end, with its epoch: the log after it.
    rest = only(follower.request(fetch(latest.end_offset, latest.epoch, epoch)))
    assert [r.name for _, r in decode_records(bytes(rest.records))] == ["RegisterBrokerRecord"]
    # A snapshot this log does not keep; a position past the end.
    gone = follower.request(snapshot_request(latest.end_offset - 1, latest.epoch, epoch, 0))
    assert gone.topics[0].partitions[0].error_code == ErrorCode.snapshot_not_found
    past = follower.request(snapshot_request(latest.end_offset, latest.epoch, epoch, 10**9))
    assert past.topics[0].partitions[0].error_code == ErrorCode.position_out_of_range


def snapshot_request(end_offset: int, snapshot_epoch: int, epoch: int, position: int) -> Any:
    from kio.schema.fetch_snapshot.v1 import request as snapshot_v1

    partition = snapshot_v1.PartitionSnapshot(
        partition=0,
        current_leader_epoch=epoch,
        snapshot_id=snapshot_v1.SnapshotId(end_offset=end_offset, epoch=snapshot_epoch),
        position=position,
        replica_directory_id=uuid.uuid4(),
    )
    return snapshot_v1.FetchSnapshotRequest(
        cluster_id=None,
        replica_id=1,
        max_bytes=256,
        topics=(snapshot_v1.TopicSnapshot(name="__cluster_metadata", partitions=(partition,)),),
    )


def test_closing_the_listener_under_a_parked_fetch_logs_no_error(
    follower: Any, wire_listener: RunningListener, caplog: pytest.LogCaptureFixture
) -> None:
    register(1)
    cluster = voters_written(follower)
    epoch, end = cluster.controller_epoch, cluster.last_offset + 1
    follower.send(fetch(end, epoch, epoch, max_wait_ms=30_000))
    time.sleep(0.3)  # parked on the event loop
    with caplog.at_level("ERROR"):
        stop = threading.Thread(target=_stop_listener, args=(wire_listener,))
        stop.start()
        stop.join(15)
    assert follower.read_frame() is None  # closed, not answered
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


def _stop_listener(listener: RunningListener) -> None:
    import asyncio

    loop = listener.server._loop
    assert loop is not None
    asyncio.run_coroutine_threadsafe(listener.server.close(), loop).result(timeout=10)
