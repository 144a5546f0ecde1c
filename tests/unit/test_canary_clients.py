"""The canary-aware kafka-python clients (KIP-1095), on kafka-python's own interfaces and with
no broker: the partitioner through a real KafkaProducer's partitioning, the assignor through a
real KafkaConsumer's group coordinator, and the directory against a small HTTP server that
answers as the control plane's GET /api/v1/canary does."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer, KafkaProducer
from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.partitioner import Partitioner
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.metadata import MetadataResponse

from canary.clients import CanaryAssignor, CanaryDirectory, CanaryPartitioner

TOKEN = "secret-token"


# --- a control plane's canary answer, over HTTP ------------------------------------------------


class FakeControlPlane:
    """Serves GET /api/v1/canary?topic= from `topics` (name -> (count, canary partitions))."""

    def __init__(self) -> None:
        self.topics: dict[str, tuple[int, list[int]]] = {}
        self.requests: Counter[str] = Counter()
        self.down = False
        plane = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                topic = parse_qs(url.query).get("topic", [""])[0]
                plane.requests[topic] += 1
                if plane.down:
                    self.send_response(503)
                    self.end_headers()
                    return
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self.send_response(401)
                    self.end_headers()
                    return
                assert url.path == "/api/v1/canary"
                found = plane.topics.get(topic)
                topics = (
                    []
                    if found is None or not found[1]
                    else [
                        {"name": topic, "partition_count": found[0], "canary_partitions": found[1]}
                    ]
                )
                body = json.dumps({"topics": topics}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def plane() -> Iterator[FakeControlPlane]:
    served = FakeControlPlane()
    yield served
    served.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- kafka-python's cluster metadata ----------------------------------------------------------


def metadata(topics: dict[str, int], leaderless: set[tuple[str, int]] = frozenset()) -> Any:
    topic_type = MetadataResponse.MetadataResponseTopic
    partition_type = topic_type.MetadataResponsePartition
    return MetadataResponse(
        version=12,
        throttle_time_ms=0,
        brokers=[
            MetadataResponse.MetadataResponseBroker(
                version=12, node_id=0, host="h", port=1, rack=None
            )
        ],
        cluster_id="c",
        controller_id=0,
        topics=[
            topic_type(
                version=12,
                error_code=0,
                name=name,
                topic_id=None,
                is_internal=False,
                partitions=[
                    partition_type(
                        version=12,
                        error_code=0,
                        partition_index=i,
                        leader_id=-1 if (name, i) in leaderless else 0,
                        leader_epoch=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                        offline_replicas=[],
                    )
                    for i in range(count)
                ],
            )
            for name, count in topics.items()
        ],
    )


def cluster(
    topics: dict[str, int], leaderless: set[tuple[str, int]] = frozenset()
) -> ClusterMetadata:
    built = ClusterMetadata()
    built.update_metadata(metadata(topics, leaderless))
    return built


@pytest.fixture
def producers(plane: FakeControlPlane) -> Iterator[Any]:
    """Real KafkaProducers (no broker: api_version given, nothing is sent) with our partitioner."""
    made: list[KafkaProducer] = []

    def make(
        *, canary: bool, topics: dict[str, int], directory: CanaryDirectory | None = None
    ) -> KafkaProducer:
        directory = directory or CanaryDirectory(plane.url, TOKEN)
        producer = KafkaProducer(
            bootstrap_servers="127.0.0.1:1",
            api_version=(2, 5, 0),
            partitioner=CanaryPartitioner(directory, canary=canary),
        )
        producer._metadata.update_metadata(metadata(topics))
        made.append(producer)
        return producer

    yield make
    for producer in made:
        producer.close(timeout=0)


def partition_of(producer: KafkaProducer, topic: str, key: bytes | None) -> int:
    """Where the producer's own partitioning (KafkaProducer._partition) puts a record."""
    return int(producer._partition(topic, None, key, b"v", key, b"v"))


# --- the partitioner ---------------------------------------------------------------------------


def test_it_is_a_kafka_python_partitioner_and_assignor():
    assert issubclass(CanaryPartitioner, Partitioner)
    assert issubclass(CanaryAssignor, AbstractPartitionAssignor)


def test_canary_and_regular_producers_keep_to_their_partitions(plane, producers):
    plane.topics["orders"] = (128, [0, 32, 64, 96])
    canary = producers(canary=True, topics={"orders": 128})
    regular = producers(canary=False, topics={"orders": 128})
    for i in range(400):
        key = f"user-{i}".encode()
        assert partition_of(canary, "orders", key) in {0, 32, 64, 96}
        assert partition_of(regular, "orders", key) not in {0, 32, 64, 96}
    unkeyed_canary = {partition_of(canary, "orders", None) for _ in range(400)}
    unkeyed_regular = {partition_of(regular, "orders", None) for _ in range(2000)}
    assert unkeyed_canary == {0, 32, 64, 96}  # spread over every canary partition
    assert not unkeyed_regular & {0, 32, 64, 96} and len(unkeyed_regular) > 100


def test_unkeyed_records_avoid_partitions_without_a_leader():
    plane_free = CanaryDirectory(
        "http://unused",
        TOKEN,
        fetch=lambda topic: {
            "topics": [{"name": "t", "partition_count": 8, "canary_partitions": [0, 4]}]
        },
    )
    partitioner = CanaryPartitioner(plane_free, canary=True)
    meta = cluster({"t": 8}, leaderless={("t", 0)})
    assert {partitioner.partition("t", None, None, b"v", b"v", meta) for _ in range(200)} == {4}
    # Keyed records keep their partition even while it has no leader (as Kafka's default).
    assert {partitioner.partition("t", b"k", b"k", b"v", b"v", meta) for _ in range(5)} in (
        {0},
        {4},
    )


def test_fallbacks_when_there_is_no_canary_partition_or_no_regular_one(plane, producers):
    plane.topics["few"] = (8, [])  # below the stride: no canary partition
    canary = producers(canary=True, topics={"few": 8, "all": 4})
    assert {partition_of(canary, "few", None) for _ in range(300)} == set(range(8))
    plane.topics["all"] = (4, [0, 1, 2, 3])  # 100 %: no regular partition
    regular = producers(canary=False, topics={"all": 4})
    assert {partition_of(regular, "all", None) for _ in range(300)} == {0, 1, 2, 3}


def test_an_unknown_topic_is_refused_as_kafka_pythons_default_partitioner_does(plane):
    partitioner = CanaryPartitioner(CanaryDirectory(plane.url, TOKEN), canary=False)
    with pytest.raises(ValueError, match="nope"):
        partitioner.partition("nope", b"k", b"k", b"v", b"v", cluster({"t": 2}))


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=30),
    count=st.integers(2, 200),
    stride=st.integers(1, 50),
    canary=st.booleans(),
)
def test_a_keys_partition_never_changes_while_the_topic_does_not(keys, count, stride, canary):
    canary_set = [i for i in range(count) if i % stride == 0] if count >= stride else []
    directory = CanaryDirectory(
        "http://unused",
        TOKEN,
        fetch=lambda topic: {
            "topics": [{"name": topic, "partition_count": count, "canary_partitions": canary_set}]
        },
    )
    meta = cluster({"t": count})
    first = CanaryPartitioner(directory, canary=canary)
    again = CanaryPartitioner(directory, canary=canary)  # another producer instance, same keys
    for key in keys:
        chosen = first.partition("t", key, key, b"v", b"v", meta)
        assert chosen == first.partition("t", key, key, b"v", b"v", meta)
        assert chosen == again.partition("t", key, key, b"v", b"v", meta)
        pool = [p for p in range(count) if (p in canary_set) is canary] or list(range(count))
        assert chosen in pool


# --- the directory -----------------------------------------------------------------------------


def test_the_directory_caches_refreshes_and_keeps_what_it_knew_when_the_plane_is_down(plane):
    clock = Clock()
    plane.topics["t"] = (32, [0])
    directory = CanaryDirectory(plane.url, TOKEN, ttl_s=30, min_refresh_s=1, clock=clock)
    assert directory.canary_partitions("t", 32) == {0}
    assert directory.canary_partitions("t", 32) == {0}
    assert plane.requests["t"] == 1  # cached
    plane.topics["t"] = (64, [0, 32])  # the topic grew
    clock.now += 0.5
    assert directory.canary_partitions("t", 64) == {0}  # rate-limited for a moment
    clock.now += 1
    assert directory.canary_partitions("t", 64) == {0, 32}  # a new count: asked again at once
    assert plane.requests["t"] == 2
    clock.now += 31
    plane.down = True
    assert directory.canary_partitions("t", 64) == {0, 32}  # expired, but the plane is down
    assert plane.requests["t"] == 3
    plane.down = False
    clock.now += 31
    plane.topics["t"] = (64, [0, 32])
    assert directory.canary_partitions("t", 64) == {0, 32} and plane.requests["t"] == 4


def test_a_topic_without_canary_partitions_is_not_asked_about_on_every_record(plane):
    clock = Clock()
    directory = CanaryDirectory(plane.url, TOKEN, clock=clock)
    for _ in range(50):
        assert directory.canary_partitions("plain", 12) == frozenset()
        clock.now += 0.1
    assert plane.requests["plain"] == 1


def test_a_wrong_token_leaves_no_canary_partition_known(plane):
    plane.topics["t"] = (32, [0])
    directory = CanaryDirectory(plane.url, "wrong")
    assert directory.canary_partitions("t", 32) == frozenset()


# --- the assignor ------------------------------------------------------------------------------


def member(member_id: str, topics: list[str], instance: str | None = None) -> Any:
    return JoinGroupResponse.JoinGroupResponseMember(
        version=7,
        member_id=member_id,
        group_instance_id=instance,
        metadata=ConsumerProtocolSubscription(0, topics, b""),
    )


def assigned(result: dict[str, Any]) -> dict[str, set[tuple[str, int]]]:
    return {m: {(tp.topic, tp.partition) for tp in a.partitions()} for m, a in result.items()}


def canary_assignor(plane: FakeControlPlane, **kw: Any) -> CanaryAssignor:
    return CanaryAssignor(CanaryDirectory(plane.url, TOKEN), **kw)


def test_canary_partitions_go_to_canary_members_and_the_rest_to_the_others(plane):
    plane.topics["orders"] = (16, [0, 8])
    members = [
        member("billing-1-aaaa", ["orders"]),
        member("billing-canary-1-bbbb", ["orders"]),
        member("billing-2-cccc", ["orders"]),
    ]
    result = assigned(canary_assignor(plane).assign(cluster({"orders": 16}), members))
    assert result["billing-canary-1-bbbb"] == {("orders", 0), ("orders", 8)}
    regular = result["billing-1-aaaa"] | result["billing-2-cccc"]
    assert regular == {("orders", i) for i in range(16) if i not in (0, 8)}
    assert abs(len(result["billing-1-aaaa"]) - len(result["billing-2-cccc"])) <= 1


def test_static_members_are_recognised_by_their_group_instance_id(plane):
    plane.topics["t"] = (4, [0, 2])
    members = [
        member("a-1", ["t"], instance="pod-canary-0"),
        member("b-1", ["t"], instance="pod-7"),
    ]
    result = assigned(canary_assignor(plane).assign(cluster({"t": 4}), members))
    assert result == {"a-1": {("t", 0), ("t", 2)}, "b-1": {("t", 1), ("t", 3)}}


def test_without_canary_members_regular_ones_take_everything_and_vice_versa(plane):
    plane.topics["t"] = (6, [0, 3])
    regular_only = assigned(
        canary_assignor(plane).assign(cluster({"t": 6}), [member("r-1", ["t"])])
    )
    assert regular_only == {"r-1": {("t", i) for i in range(6)}}
    canary_only = assigned(
        canary_assignor(plane, marker="blue").assign(cluster({"t": 6}), [member("x-blue-1", ["t"])])
    )
    assert canary_only == {"x-blue-1": {("t", i) for i in range(6)}}


def test_subscriptions_are_respected_and_nothing_is_left_unconsumed(plane):
    plane.topics["a"] = (4, [0])
    members = [
        member("c-canary-1", ["a"]),
        member("r-1", ["a", "b"]),
        member("r-2", ["b"]),
    ]
    result = assigned(canary_assignor(plane).assign(cluster({"a": 4, "b": 3}), members))
    assert result["c-canary-1"] == {("a", 0)}
    assert result["r-1"] >= {("a", 1), ("a", 2), ("a", 3)}
    everything = set().union(*result.values())
    assert everything == {("a", i) for i in range(4)} | {("b", i) for i in range(3)}
    assert sum(len(v) for v in result.values()) == len(everything)  # each partition once


def test_an_empty_marker_is_refused(plane):
    with pytest.raises(ValueError, match="marker"):
        canary_assignor(plane, marker="")


def test_the_consumer_group_leader_runs_it_through_kafka_pythons_coordinator(plane):
    """A real KafkaConsumer (no broker) with the assignor: its coordinator decodes the members'
    subscriptions and calls assign(), as the group leader does after JoinGroup."""
    plane.topics["orders"] = (8, [0, 4])
    assignor = canary_assignor(plane)
    consumer = KafkaConsumer(
        bootstrap_servers="127.0.0.1:1",
        api_version=(2, 5, 0),
        group_id="billing",
        client_id="billing-canary-1",
        partition_assignment_strategy=[assignor],
    )
    try:
        consumer.subscribe(["orders"])
        coordinator = consumer._coordinator
        coordinator._cluster.update_metadata(metadata({"orders": 8}))
        members = [
            JoinGroupResponse.JoinGroupResponseMember(
                version=7,
                member_id=member_id,
                group_instance_id=None,
                metadata=assignor.metadata({"orders"}).encode(),
            )
            for member_id in ("billing-canary-1-x", "billing-2-y")
        ]
        result = coordinator._perform_assignment("billing-canary-1-x", "canary", members)
        got = assigned(result)
        assert got["billing-canary-1-x"] == {("orders", 0), ("orders", 4)}
        assert got["billing-2-y"] == {("orders", i) for i in (1, 2, 3, 5, 6, 7)}
    finally:
        consumer.close(autocommit=False)


def test_the_package_imports_on_its_own_without_django():
    code = (
        "import sys, canary.clients; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'rest_framework', 'controlplane', 'brokers', 'replicas', 'celery', 'redis'}); "
        "assert not bad, bad; print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={"PATH": ""}
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
