"""Moving replicas on stock Apache Kafka brokers under this control plane (KIP-455), with Kafka's
own tools: `kafka-reassign-partitions` (ReassignPartitionsCommand: --execute, --verify until
complete, --throttle, --cancel) and `kafka-topics --describe` (TopicCommand) of the 4.1.1 and
4.4.0 jars, through a broker (which forwards the reassignment RPCs and the throttle configs in
Envelopes); then the balancer fills a fourth broker and drains the first to zero replicas, which
`kafka-cluster unregister` (ClusterTool) then unregisters. An idempotent acks=all producer runs
throughout; every acknowledged message is read back afterwards, once.

The brokers are 4.1.1 (the pinned jars): the 4.4.0 tools talk to them, as an operator's newer
tools talk to an older cluster. One control plane and one cluster for the module; small heaps,
bounded waits (tests.kafka.harness)."""

from __future__ import annotations

import collections
import dataclasses
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.kafka_clients import Producing
from stock_kafka.broker import KafkaBroker
from tests.conftest import Api, listener_client_class
from tests.kafka import harness
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import (
    ControlPlane,
    broker_row,
    broker_under,
    control_plane,
    module_database,
    tables_follow_log,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_IDS = (1, 2, 3, 4)  # 4 starts later: the balancer fills it
TOOL_VERSIONS = ("4.1.1", "4.4.0")
TOPIC = "moves"
HEAVY = "heavy"  # one partition with data: a throttled move of it stalls long enough to see
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    # A follower fetches at most this per round: a throttled move cannot catch up in one.
    "replica.fetch.max.bytes": "65536",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
}
SLOW_THROTTLE = "1000"  # B/s: the heavy partition's 2 MiB take minutes at this rate


@dataclasses.dataclass
class Cluster:
    plane: ControlPlane
    brokers: dict[int, KafkaBroker]
    work: Path
    producing: Producing | None = None

    def running(self) -> list[KafkaBroker]:
        return [b for b in self.brokers.values() if b.running]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.running())

    @property
    def via(self) -> str:
        """The broker Kafka's tools talk to (it forwards their writes to the controller)."""
        return self.running()[0].bootstrap

    def wait(self, predicate: Any, timeout: float, what: str) -> Any:
        return harness.wait(
            list(self.brokers.values()), predicate, timeout, what, running=self.running()
        )

    @property
    def api(self) -> Api:
        return Api(listener_client_class()())

    @property
    def admin(self) -> str:
        return self.plane.tokens["admin"]


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The brokers and their registrations live through the module."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(django_db_blocker, CP_BROKER_SESSION_TIMEOUT_MS=4000):
        yield


@pytest.fixture(scope="module")
def cluster(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    need_kafka_jars()
    for version in TOOL_VERSIONS:
        need_tools(version)
    principals = {node: f"kafka-broker-{node}" for node in NODE_IDS}
    with control_plane(list(principals.values())) as plane:
        brokers = {
            node: broker_under(
                plane,
                node,
                principals[node],
                tmp_path_factory.mktemp(f"kafka-broker-{node}"),
                BROKER_PROPERTIES,
            )
            for node in NODE_IDS
        }
        running = Cluster(plane, brokers, tmp_path_factory.mktemp("reassign-tools"))
        try:
            for node in (1, 2, 3):
                brokers[node].start()
            running.wait(lambda: all(unfenced(n) for n in (1, 2, 3)), 180, "three unfenced")
            grant_the_tools(running)
            yield running
        finally:
            if running.producing is not None:
                running.producing.stop(flush_s=10)
            for broker in brokers.values():
                broker.stop(timeout=20)


def need_tools(version: str) -> None:
    from stock_kafka import jars

    if not jars.installed(version):
        pytest.skip(f"no Kafka {version} jars (bash scripts/install-kafka.sh {version})")


def grant_the_tools(cluster: Cluster) -> None:
    """The tools reach the brokers on PLAINTEXT: the requests the brokers forward run here as
    User:ANONYMOUS, which the operator allows what the tools do."""
    creations = [
        {
            "resource_type": resource_type,
            "resource_name": name,
            "pattern_type": "LITERAL",
            "principal": "User:ANONYMOUS",
            "host": "*",
            "operation": "ALL",
            "permission_type": "ALLOW",
        }
        for resource_type, name in (("CLUSTER", "kafka-cluster"), ("TOPIC", "*"))
    ]
    status, body = cluster.api.post(
        "/api/v1/create-acls", {"creations": creations}, token=cluster.admin
    )
    assert status == 200 and all(r["error_code"] == 0 for r in body["results"]), body


def unfenced(node_id: int) -> bool:
    row = broker_row(node_id)
    return row is not None and not row.fenced and row.state == "UNFENCED"


def partitions(topic: str) -> dict[int, Any]:
    from replicas.models import Partition

    tables_follow_log()
    return {p.partition_index: p for p in Partition.objects.filter(topic__name=topic)}


def configs(resource_type: str, name: str) -> dict[str, str]:
    from controlplane.models import ConfigEntry

    tables_follow_log()  # a broker forwarded the write: answered once the log held it
    rows = ConfigEntry.objects.filter(resource_type=resource_type, resource_name=name)
    return dict(rows.values_list("name", "value"))


def tool(version: str, simple_name: str, *args: str, timeout: float = 180) -> str:
    """A Kafka tool of `version`'s jars (found by its class's simple name): its output."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "stock_kafka",
            "--kafka-version",
            version,
            "tool",
            simple_name,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{simple_name} {version} {args}:\n{output}"
    return output


def reassign(
    cluster: Cluster,
    version: str,
    action: str,
    moves: dict[tuple[str, int], list[int]],
    *extra: str,
) -> str:
    plan = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": index, "replicas": replicas}
            for (topic, index), replicas in moves.items()
        ],
    }
    path = cluster.work / f"plan-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(plan))
    return tool(
        version,
        "ReassignPartitionsCommand",
        "--bootstrap-server",
        cluster.via,
        "--reassignment-json-file",
        str(path),
        action,
        *extra,
    )


def verify_until_complete(
    cluster: Cluster, version: str, moves: dict[tuple[str, int], list[int]], timeout: float = 180
) -> str:
    """`--verify` until every partition's reassignment is complete (its last output)."""
    outputs: list[str] = []

    def complete() -> bool:
        outputs.append(reassign(cluster, version, "--verify", moves))
        return all(
            f"Reassignment of partition {topic}-{index} is completed" in outputs[-1]
            for topic, index in moves
        )

    cluster.wait(complete, timeout, f"--verify ({version}) to say complete")
    return outputs[-1]


def describe(cluster: Cluster, version: str, topic: str) -> dict[int, dict[str, str]]:
    """`kafka-topics --describe` of `version`'s jars: each partition's fields as it prints them."""
    output = tool(
        version, "TopicCommand", "--bootstrap-server", cluster.via, "--describe", "--topic", topic
    )
    found: dict[int, dict[str, str]] = {}
    for line in output.splitlines():
        if "Partition:" not in line:
            continue
        fields = dict(
            (key.strip(), value.strip())
            for key, value in (
                part.split(":", 1) for part in line.strip().split("\t") if ":" in part
            )
        )
        found[int(fields["Partition"])] = fields
    return found


def test_kafkas_tool_moves_partitions_and_verify_follows_them_to_completion(
    cluster: Cluster,
) -> None:
    status, body = cluster.api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": TOPIC,
                    "assignments": [
                        {"partition_index": i, "broker_ids": [1 + i % 3, 1 + (i + 1) % 3]}
                        for i in range(6)
                    ],
                    "configs": [{"name": "min.insync.replicas", "value": "1"}],
                }
            ]
        },
        token=cluster.admin,
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    cluster.producing = Producing(cluster.bootstrap, "reassign", TOPIC)
    cluster.producing.start()
    cluster.wait(lambda: cluster.producing.acknowledged_count() >= 100, 120, "100 acknowledged")
    for version, index in zip(TOOL_VERSIONS, (0, 1), strict=True):
        before = partitions(TOPIC)[index].replicas
        target = [b for b in (1, 2, 3) if b not in before] + [before[0]]
        moves = {(TOPIC, index): target}
        started = reassign(cluster, version, "--execute", moves)
        assert "Successfully started partition reassignment" in started, started
        verified = verify_until_complete(cluster, version, moves)
        assert "Clearing broker-level throttles" in verified, verified
        moved = partitions(TOPIC)[index]
        assert list(moved.replicas) == target and moved.adding_replicas == []
        assert sorted(moved.isr) == sorted(target)
        from replicas.selectors import partition_reassignments

        assert partition_reassignments() == []


def test_a_throttled_move_shows_in_describe_until_cancelled(cluster: Cluster) -> None:
    """--throttle sets Kafka's throttle configs (the moving replicas per topic, the rate per
    broker) through the broker; the throttled follower cannot catch up, so the move stays in
    progress: kafka-topics --describe (4.1 and 4.4) shows its adding and removing replicas.
    --cancel reverts it and clears the throttles."""
    from confluent_kafka import Producer

    status, body = cluster.api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": HEAVY, "assignments": [{"partition_index": 0, "broker_ids": [2]}]}]},
        token=cluster.admin,
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    # Small batches: a fetch returns whole batches, so the follower's fetches stay small and
    # the throttle holds it back (a 1 MB batch would pass in one fetch).
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "linger.ms": 20, "batch.size": 16384}
    )
    for number in range(2048):
        producer.produce(HEAVY, value=b"x" * 1024, key=str(number).encode())
        producer.poll(0)
    assert producer.flush(60) == 0
    moves = {(HEAVY, 0): [3]}
    started = reassign(cluster, "4.1.1", "--execute", moves, "--throttle", SLOW_THROTTLE)
    assert "The inter-broker throttle limit was set to 1000 B/s" in started, started
    # Kafka's tool set the throttles through the broker: in the log, where brokers read them.
    assert configs("TOPIC", HEAVY) == {
        "leader.replication.throttled.replicas": "0:2",
        "follower.replication.throttled.replicas": "0:3",
    }
    for broker in ("2", "3"):
        assert configs("BROKER", broker)["follower.replication.throttled.rate"] == SLOW_THROTTLE
    moving = partitions(HEAVY)[0]
    assert (list(moving.replicas), moving.adding_replicas, moving.removing_replicas) == (
        [3, 2],
        [3],
        [2],
    )
    for version in TOOL_VERSIONS:
        shown = describe(cluster, version, HEAVY)[0]
        assert (shown.get("Adding Replicas"), shown.get("Removing Replicas")) == ("3", "2"), shown
    time.sleep(3)  # the throttled follower stays behind
    still = reassign(cluster, "4.4.0", "--verify", moves, "--preserve-throttles")
    assert f"Reassignment of partition {HEAVY}-0 is still in progress" in still, still
    cancelled = reassign(cluster, "4.4.0", "--cancel", moves)
    assert "Successfully cancelled partition reassignment" in cancelled, cancelled
    back = partitions(HEAVY)[0]
    assert (list(back.replicas), back.adding_replicas) == ([2], [])
    assert not configs("TOPIC", HEAVY)
    assert "follower.replication.throttled.rate" not in configs("BROKER", "3")
    for version in TOOL_VERSIONS:
        shown = describe(cluster, version, HEAVY)[0]
        assert shown["Replicas"] == "2" and "Adding Replicas" not in shown, shown


def test_a_throttled_move_completes_and_verify_removes_the_throttles(cluster: Cluster) -> None:
    index = 2
    before = partitions(TOPIC)[index].replicas
    target = [b for b in (1, 2, 3) if b not in before] + [before[1]]
    moves = {(TOPIC, index): target}
    reassign(cluster, "4.4.0", "--execute", moves, "--throttle", "50000000")
    assert configs("TOPIC", TOPIC)["leader.replication.throttled.replicas"]
    verified = verify_until_complete(cluster, "4.4.0", moves)
    assert "Clearing topic-level throttles on topic moves" in verified, verified
    assert set(configs("TOPIC", TOPIC)) == {"min.insync.replicas"}  # its own, not a throttle
    assert all(
        "leader.replication.throttled.rate" not in configs("BROKER", str(b)) for b in (1, 2, 3)
    )
    assert list(partitions(TOPIC)[index].replicas) == target


def run_plan(cluster: Cluster, goal: str, broker_id: int, **options: Any) -> dict[str, Any]:
    """A balance plan made, executed (its job in a thread of this process, as embedded) and
    followed until it ends: its last answer."""
    status, plan = cluster.api.post(
        "/api/v1/balance/plans", {"goal": goal, "broker_id": broker_id}, token=cluster.admin
    )
    assert status == 200 and plan["moves_total"] > 0, plan
    status, running = cluster.api.post(
        f"/api/v1/balance/plans/{plan['plan_id']}/execute", options, token=cluster.admin
    )
    assert status == 200 and running["state"] == "EXECUTING", running

    def ended() -> dict[str, Any] | None:
        _, now = cluster.api.get(f"/api/v1/balance/plans/{plan['plan_id']}", token=cluster.admin)
        return now if now["state"] not in ("EXECUTING", "CANCELLING") else None

    done = cluster.wait(ended, 300, f"the {goal} plan to end")
    assert done["state"] == "COMPLETED", done
    assert done["progress"]["failed_count"] == 0 and done["progress"]["skipped_count"] == 0, done
    return dict(done)


def test_the_balancer_fills_a_fourth_broker(cluster: Cluster) -> None:
    fourth = cluster.brokers[4]
    fourth.start()
    cluster.wait(lambda: unfenced(4), 180, "broker 4 unfenced")
    done = run_plan(cluster, "fill", 4, batch_size=2, concurrency=4, throttle=50_000_000)
    from replicas.models import Partition

    held = Partition.objects.filter(replica_ids__contains=",4,").count()
    assert held == done["skew_after"]["replicas"]["4"] > 0, done
    # The broker holds them as Kafka does: a log of each partition it was given.
    given = {
        f"{p.topic.name}-{p.partition_index}"
        for p in Partition.objects.filter(replica_ids__contains=",4,").select_related("topic")
    }

    def on_disk() -> set[str]:
        return {path.name for d in fourth.data_dirs if d.exists() for path in d.iterdir()}

    cluster.wait(lambda: given <= on_disk(), 60, "broker 4's logs of its partitions")


def test_a_drained_broker_is_unregistered_with_kafkas_tool(cluster: Cluster) -> None:
    from replicas.models import Partition

    run_plan(cluster, "drain", 1, batch_size=5, concurrency=10)
    assert not Partition.objects.filter(replica_ids__contains=",1,").exists()
    leaving = cluster.brokers[1]
    leaving.stop(timeout=60)
    cluster.wait(lambda: broker_row(1) is None or broker_row(1).fenced, 60, "broker 1 fenced")
    output = tool(
        "4.1.1", "ClusterTool", "unregister", "--bootstrap-server", cluster.via, "--id", "1"
    )
    assert "Broker 1 is no longer registered." in output, output
    assert broker_row(1) is None


def test_every_acknowledged_message_is_read_back_once(cluster: Cluster) -> None:
    from kafka import KafkaConsumer

    assert cluster.producing is not None
    cluster.producing.stop()
    assert not cluster.producing.errors, cluster.producing.errors[:5]
    acknowledged = cluster.producing.acknowledged
    assert len(acknowledged) >= 100
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=cluster.bootstrap,
        group_id="reassign-readers",
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    seen: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and not acknowledged <= set(seen):
            for message in consumer:
                seen[message.value.decode()] += 1
    finally:
        consumer.close()
    assert acknowledged <= set(seen), sorted(acknowledged - set(seen))[:10]
    doubled = [key for key, count in seen.items() if count > 1]
    assert not doubled, doubled[:10]
    assert all(re.fullmatch(r"reassign-\d{6}", key) for key in seen)
