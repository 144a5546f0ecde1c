"""Which Raft Fetches wait and which are answered at once, as KafkaRaftClient (4.1) decides as
the leader: an error, records, a divergence, a high watermark the follower does not know yet, or
MaxWaitMs 0 is answered at once; only a fetch at the log's end with nothing new to tell waits for
a commit. The replica id plays no part, as in Kafka (brokers follow the log as observers, before
they register and while fenced): a broker unknown to the cluster, or fenced, gets the same
answers. Every fetch here may wait 60 s and the client reads for 10 s at most, so a fetch parked
where Kafka answers at once fails the test."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v18 import request as fetch_v18

from controlplane.controller.kraft import decode_records
from controlplane.principals import principal_create
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.notifier import notifier
from devtools.stack import wait_for
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_raft_fetch import register
from tests.wire.test_server import authenticate
from wire.apis.controller.raft import METADATA_TOPIC_ID

pytestmark = pytest.mark.django_db(transaction=True)

UNKNOWN_BROKER = 77  # never registered
FENCED_BROKER = 2  # registered, never heartbeated: fenced
NO_BROKER = -1  # a fetch from no replica (Kafka's consumer id)
KNOWS_NO_HIGH_WATERMARK = -1  # what a follower sends before it learned one
WAIT_MS = 60_000


def fetch(
    offset: int,
    last_epoch: int,
    leader_epoch: int,
    *,
    replica_id: int,
    high_watermark: int,
    max_wait_ms: int = WAIT_MS,
    cluster_id: str | None = None,
    topic_id: uuid.UUID = METADATA_TOPIC_ID,
) -> fetch_v18.FetchRequest:
    """Fetch v18, as a Kafka 4.1 broker sends it (with the high watermark it knows)."""
    partition = fetch_v18.FetchPartition(
        partition=0,
        current_leader_epoch=leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        log_start_offset=-1,
        partition_max_bytes=8 << 20,
        replica_directory_id=uuid.uuid4(),
        high_watermark=high_watermark,
    )
    return fetch_v18.FetchRequest(
        cluster_id=cluster_id,
        replica_state=fetch_v18.ReplicaState(replica_id=replica_id, replica_epoch=-1),
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=0,
        max_bytes=8 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(fetch_v18.FetchTopic(topic_id=topic_id, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )


def partition_of(answer: Any) -> Any:
    assert answer.error_code == ErrorCode.none, answer
    return answer.responses[0].partitions[0]


@pytest.fixture
def follower(wire_listener: RunningListener) -> Iterator[RawClient]:
    token = principal_create(name="raft-observer", broker=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "raft-observer", token) == ErrorCode.none
        yield client


@pytest.fixture
def log(follower: RawClient) -> Any:
    """A log of three brokers' registrations, FENCED_BROKER among them, fenced; and the voter
    set naming this controller listener, which the first fetch it serves writes (KIP-853)."""
    for broker_id in (1, FENCED_BROKER, 3):
        register(broker_id)
    head = cluster_read()
    epoch, end = head.controller_epoch, head.last_offset + 1
    answer = follower.request(
        fetch(end, epoch, epoch, replica_id=NO_BROKER, high_watermark=-1, max_wait_ms=0)
    )
    assert partition_of(answer).error_code == ErrorCode.none
    return cluster_read()


def asker(follower: RawClient, log: Any, replica_id: int) -> Any:
    """A fetch from `replica_id` (at the log's end, knowing its high watermark, unless told
    otherwise), answered: it was never parked."""
    epoch, end = log.controller_epoch, log.last_offset + 1

    def ask(
        offset: int = end, last_epoch: int = epoch, leader_epoch: int = epoch, **fields: Any
    ) -> Any:
        fields.setdefault("high_watermark", end)
        answer = follower.request(
            fetch(offset, last_epoch, leader_epoch, replica_id=replica_id, **fields)
        )
        assert notifier.parked == 0
        return answer

    return ask


WHOEVER = pytest.mark.parametrize("replica_id", [UNKNOWN_BROKER, FENCED_BROKER, NO_BROKER])


@WHOEVER
def test_errors_are_answered_at_once(follower: RawClient, log: Any, replica_id: int) -> None:
    ask, epoch, end = asker(follower, log, replica_id), log.controller_epoch, log.last_offset + 1
    assert ask(cluster_id="another-cluster").error_code == ErrorCode.inconsistent_cluster_id
    assert ask(topic_id=uuid.uuid4()).error_code == ErrorCode.invalid_request
    # KafkaRaftClient's checks of the request itself come before the leader epoch's.
    for invalid in (
        {"offset": -1},
        {"last_epoch": -1},
        {"max_wait_ms": -1},
        {"last_epoch": epoch + 1},  # an epoch past the one it asks of
        {"leader_epoch": epoch - 1},  # the same, with a stale epoch asked
    ):
        assert ask(**invalid).error_code == ErrorCode.invalid_request, invalid
    stale = partition_of(ask(last_epoch=epoch - 1, leader_epoch=epoch - 1))
    assert stale.error_code == ErrorCode.fenced_leader_epoch
    assert stale.current_leader.leader_epoch == epoch
    ahead = partition_of(ask(leader_epoch=epoch + 1))
    assert ahead.error_code == ErrorCode.unknown_leader_epoch
    diverged = partition_of(ask(end + 5))
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (epoch, end)


@WHOEVER
def test_records_are_answered_at_once(follower: RawClient, log: Any, replica_id: int) -> None:
    behind = partition_of(asker(follower, log, replica_id)(0, 0))
    assert len(list(decode_records(bytes(behind.records)))) == log.last_offset + 1


@WHOEVER
def test_a_high_watermark_the_follower_does_not_know_is_answered_at_once(
    follower: RawClient, log: Any, replica_id: int
) -> None:
    """At the end with nothing new, as KafkaRaftClient's isHighWatermarkUpdated: a follower
    that knows no high watermark yet (a broker just started) learns it without waiting; so
    does one that asks not to wait."""
    ask, end = asker(follower, log, replica_id), log.last_offset + 1
    for fields in ({"high_watermark": KNOWS_NO_HIGH_WATERMARK}, {"max_wait_ms": 0}):
        at_end = partition_of(ask(**fields))
        assert (bytes(at_end.records), at_end.high_watermark) == (b"", end)


@pytest.mark.parametrize("replica_id", [UNKNOWN_BROKER, FENCED_BROKER])
def test_a_fetch_with_nothing_new_waits_for_a_commit_whoever_sends_it(
    follower: RawClient, log: Any, replica_id: int
) -> None:
    """Kafka parks an observer's fetch at the log's end in its purgatory whatever its replica
    id: a fenced broker catches up by fetching, and an unknown one may register next."""
    epoch, end = log.controller_epoch, log.last_offset + 1
    request = fetch(end, epoch, epoch, replica_id=replica_id, high_watermark=end)
    correlation_id = follower.send(request)
    wait_for(lambda: notifier.parked == 1, 10, "the fetch to be parked")
    register(4)
    woken = partition_of(follower.read_response(request, correlation_id))
    assert [r.name for _, r in decode_records(bytes(woken.records))] == ["RegisterBrokerRecord"]
    assert woken.high_watermark == end + 1
