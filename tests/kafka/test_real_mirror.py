"""MirrorMaker 2 from a cluster of stock Kafka brokers (issue 36, point 3; KIP-710 on real
brokers): control plane A is the KRaft controller of three Apache Kafka 4.1 brokers (no
simulated broker), control plane B a second cluster (simulated brokers) that holds the
MirrorMaker configuration, and one `run_mirror_node` runs the flow A->B between them.

A topic created on A through the REST API (RF 3, non-default configs) is led and replicated by
the real brokers as A's controller decided (each broker's own Metadata), takes messages through
them, and appears on B as `A.<topic>` with its partition count, its configs (by MirrorMaker's
rules) and its topic ACLs. A config altered with a stock admin client on a real broker (SASL
login; the broker forwards it to A's controller in an Envelope) reaches B. The flow's REST
status says RUNNING and names no secret. Records stay on A: a flow copies topics, configs and
ACLs, through the control planes' admin APIs, and reads nothing else from A.
"""

from __future__ import annotations

import contextlib
import functools
import json
import signal
import subprocess
import time
import urllib.request
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from devtools.kafka_clients import broker_metadata
from devtools.mirror_stack import (
    Cluster,
    mirror_config_text,
    running_cluster,
    running_real_cluster,
    start_mirror_node,
    write_secrets,
)
from devtools.stack import wait_for
from stock_kafka.broker import KafkaBroker
from tests.conftest import need_postgres, need_redis
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import LOG_LEVELS

pytestmark = pytest.mark.integration

TOPIC = "orders.eu"
REMOTE = "A.orders.eu"  # the default replication policy: <source alias>.<topic>
PARTITIONS = 3
CREATED_WITH = {
    "retention.ms": "3600000",
    "cleanup.policy": "compact",
    "min.insync.replicas": "2",  # in MirrorMaker's default config.properties.exclude
}
MIRRORED = {"retention.ms": "3600000", "cleanup.policy": "compact"}
CLIENT_USERS = {"alice": "alice-secret"}
MESSAGES = 20


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[tuple[Cluster, list[KafkaBroker], Cluster]]:
    """A (three Kafka brokers) and B (one simulated broker), started side by side."""
    need_postgres()
    need_redis()
    need_kafka_jars()
    logs = tmp_path / "logs"
    with ThreadPoolExecutor(max_workers=1) as pool, contextlib.ExitStack() as exits:
        b_manager = running_cluster("B", logs, brokers=1)
        starting_b = pool.submit(b_manager.__enter__)

        def stop_b(*exc: Any) -> bool | None:  # once B is up, however A went
            return None if starting_b.exception() else b_manager.__exit__(*exc)

        exits.push(stop_b)
        a, brokers = exits.enter_context(
            running_real_cluster(
                "A",
                logs,
                tmp_path / "kafka",
                overrides={"broker.heartbeat.interval.ms": "500"},
                log_levels=LOG_LEVELS,
                client_users=CLIENT_USERS,  # a SASL/PLAIN client listener: alice logs in
            )
        )
        b = starting_b.result()
        try:
            yield a, brokers, b
        finally:
            stop_simulated_brokers(b)


def stop_simulated_brokers(b: Cluster) -> None:
    """B's simulated broker shut down while B's controller still answers: the stack's teardown
    stops every process at once, and a controlled shutdown then waits out its timeout."""
    process = b.stack.procs["brokers"]
    if process.poll() is None:
        b.stack.kill("brokers", signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)


def own_metadata(
    broker: KafkaBroker, topic: str
) -> dict[int, tuple[int, int, list[int], list[int]]]:
    """The topic's partitions as this very broker answers Metadata (v12, on its own socket):
    leader, leader epoch, replicas, ISR."""
    return {
        index: (
            int(p.leader_id),
            int(p.leader_epoch),
            sorted(int(n) for n in p.replica_nodes),
            sorted(int(n) for n in p.isr_nodes),
        )
        for index, p in broker_metadata(broker, topic).items()
    }


def controller_view(
    cluster: Cluster, topic: str
) -> dict[int, tuple[int, int, list[int], list[int]]]:
    status, answer = cluster.http.get(
        f"/api/v1/partitions?topic={topic}&page_size=100", cluster.token("admin")
    )
    assert status == 200, answer
    return {
        p["partition_index"]: (
            p["leader_id"],
            p["leader_epoch"],
            sorted(p["replica_nodes"]),
            sorted(p["isr_nodes"]),
        )
        for p in answer["results"]
    }


def dynamic_configs(cluster: Cluster, topic: str) -> dict[str, str]:
    body = {"resources": [{"resource_type": "TOPIC", "resource_name": topic}]}
    (result,) = cluster.admin("/api/v1/describe-configs", body)["results"]
    assert result["error_code"] == 0, result
    return {
        c["name"]: c["value"]
        for c in result["configs"]
        if c["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    }


def topic_acls(cluster: Cluster, topic: str) -> set[tuple[str, str, str]]:
    body = {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": None,
        "host": None,
        "operation": "ANY",
        "permission_type": "ANY",
    }
    answer = cluster.admin("/api/v1/describe-acls", body)
    return {
        (e["principal"], e["operation"], e["permission_type"])
        for r in answer["resources"]
        for e in r["acls"]
    }


def audit(cluster: Cluster, **filters: str) -> list[dict[str, Any]]:
    query = "&".join(f"{k}={v}" for k, v in filters.items())
    status, answer = cluster.http.get(
        f"/api/v1/audit-events?page_size=1000&{query}", cluster.token("admin")
    )
    assert status == 200, answer
    return list(answer["results"])


def flow_detail(b: Cluster) -> dict[str, Any]:
    status, flow = b.http.get("/api/v1/mirror/flows/A/B", b.token("admin"))
    assert status == 200, flow
    return dict(flow)


def running_flow(b: Cluster) -> dict[str, Any] | None:
    flow = flow_detail(b)
    tasks = [t for c in flow["connectors"] for t in c["tasks"]]
    running = all(c["state"] == "RUNNING" for c in flow["connectors"]) and all(
        t["state"] == "RUNNING" for t in tasks
    )
    return flow if flow["group_state"] == "Stable" and len(flow["nodes"]) == 1 and running else None


def produce(brokers: list[KafkaBroker], topic: str) -> dict[str, str]:
    """MESSAGES keyed messages through the real brokers (acks=all: every in-sync replica)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=",".join(b.bootstrap for b in brokers),
        acks="all",
        request_timeout_ms=15_000,
    )
    sent = {f"key-{i:02d}": f"value-{i:02d}" for i in range(MESSAGES)}
    try:
        futures = [producer.send(topic, key=k.encode(), value=v.encode()) for k, v in sent.items()]
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close(timeout=10)
    return sent


def consume(brokers: list[KafkaBroker], topic: str, partitions: int) -> dict[str, str]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=",".join(b.bootstrap for b in brokers),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    seen: dict[str, str] = {}
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while len(seen) < MESSAGES and time.monotonic() < deadline:
            seen |= {m.key.decode(): m.value.decode() for m in consumer}
    finally:
        consumer.close()
    return seen


def alter_through_a_broker(
    brokers: list[KafkaBroker], via: KafkaBroker, topic: str, configs: dict[str, str]
) -> tuple[Any, int]:
    """IncrementalAlterConfigs from a stock admin client logged in to a real broker as alice,
    and how many times it was sent. A call that times out is sent again within the call's
    overall time, as Kafka's AdminClient retries a timed-out call within default.api.timeout.ms
    (60 s): the caller then finds one audit row per attempt that reached the controller. Each
    retry is reported with what the brokers logged of their channels to the controller."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import KafkaTimeoutError, RequestTimedOutError

    deadline = time.monotonic() + 60
    attempts = 0
    while True:
        attempts += 1
        admin = KafkaAdminClient(
            bootstrap_servers=via.sasl_bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password=CLIENT_USERS["alice"],
            client_id="alice-tool",
            request_timeout_ms=20_000,
        )
        try:
            answer = admin.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic, configs)],
                incremental=True,
                raise_on_unknown=False,
            )
            return answer, attempts
        except (RequestTimedOutError, KafkaTimeoutError) as error:
            if time.monotonic() > deadline - 20:
                raise
            warnings.warn(
                f"IncrementalAlterConfigs through broker {via.node_id} timed out ({error}); "
                f"sent again. The brokers' channels to the controller:\n"
                + controller_channel_lines(brokers),
                stacklevel=1,
            )
        finally:
            admin.close()


def controller_channel_lines(brokers: list[KafkaBroker], last: int = 20) -> str:
    """The last lines each broker logged about its channels to the controller."""
    lines = []
    for broker in brokers:
        logged = broker.log_path.read_text(errors="replace").splitlines()
        about = [line for line in logged if "controller" in line.lower()]
        lines += [f"broker {broker.node_id}: {line}" for line in about[-last:]]
    return "\n".join(lines)


def test_a_topic_of_real_brokers_is_mirrored_to_another_control_planes_cluster(
    clusters: tuple[Cluster, list[KafkaBroker], Cluster], tmp_path: Path
) -> None:
    a, brokers, b = clusters
    a_token = a.principal("mm2-a", "--super-user")  # reads A
    b_token = b.principal("mm2-b", "--super-user")  # the flow's principal on B
    node_token = b.principal("mirror-node", "--super-user")  # the node's group membership
    secrets = write_secrets(tmp_path / "mm2", b_token)
    # A .properties value: `\\.` is read as `\.` (a lone `\.` would be read as `.`).
    text = mirror_config_text(a, b, secrets, topics=r"orders\\..*")
    assert b.put_mirror_config(text) == 200
    node = start_mirror_node(
        b,
        name="mirror-0",
        host="127.0.0.2",
        token=node_token,
        clusters=("B",),
        env={
            "MM2_A_TOKEN": a_token,
            "MM2_SOURCE_CLIENT_ID": "mm2-reader",
            "MM2_NODE_NAME": "mirror-0",
        },
    )
    wait_for(lambda: running_flow(b), 60, "the flow A->B running on one node", 0.3)

    # --- a topic on A's real brokers: created through A's REST API --------------------------
    a.admin(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": TOPIC,
                    "pattern_type": "LITERAL",
                    "principal": "User:alice",
                    "host": "*",
                    "operation": "ALTER_CONFIGS",
                    "permission_type": "ALLOW",
                }
            ]
        },
    )
    a.create_topic(TOPIC, PARTITIONS, replication_factor=3, **CREATED_WITH)
    decided = controller_view(a, TOPIC)
    assert len(decided) == PARTITIONS
    assert all(replicas == [1, 2, 3] for _, _, replicas, _ in decided.values()), decided

    # Each broker answers Metadata with A's controller's leaders, every replica in sync.
    def as_decided(broker: KafkaBroker) -> bool:
        now = controller_view(a, TOPIC)
        in_sync = all(isr == [1, 2, 3] for _, _, _, isr in now.values())
        return in_sync and own_metadata(broker, TOPIC) == now

    for broker in brokers:
        wait_for(
            functools.partial(as_decided, broker),
            60,
            f"broker {broker.node_id}'s Metadata to match A's controller",
            0.3,
        )
    sent = produce(brokers, TOPIC)  # acks=all with min.insync.replicas=2: replicated
    assert consume(brokers, TOPIC, PARTITIONS) == sent

    # --- the remote topic on B: partition count, configs, ACLs ----------------------------
    wait_for(lambda: b.topics().get(REMOTE) == PARTITIONS, 60, f"{REMOTE} on B", 0.3)
    wait_for(
        lambda: dynamic_configs(b, REMOTE) == MIRRORED,
        30,
        "the mirrored configs (min.insync.replicas left out)",
        0.3,
    )
    wait_for(
        lambda: topic_acls(b, REMOTE) == {("User:alice", "ALTER_CONFIGS", "ALLOW")},
        30,
        "alice's topic ACL synced",
        0.3,
    )
    created = audit(b, api="CreateTopics", resource=REMOTE)
    assert [(e["principal"], e["outcome"]) for e in created] == [("User:mm2-b", "SUCCESS")]

    # --- a config altered on a real broker (forwarded to A's controller) reaches B ---------
    answer, attempts = alter_through_a_broker(
        brokers, brokers[1], TOPIC, {"retention.ms": "7200000"}
    )
    assert answer == {"topic": {TOPIC: "OK"}}, answer
    # A write a broker forwarded is answered once the log holds it; A's REST API reads the
    # state tables, which follow the log's commit in a transaction of their own.
    wait_for(
        lambda: dynamic_configs(a, TOPIC) == {**CREATED_WITH, "retention.ms": "7200000"},
        10,
        "A's tables to follow the log's commit of the forwarded alter",
        0.1,
    )
    forwarded = audit(a, api="IncrementalAlterConfigs", resource=TOPIC)
    # One row per attempt that reached the controller: one when the first was answered.
    assert 1 <= len(forwarded) <= attempts, (attempts, forwarded)
    assert {(e["principal"], e["outcome"]) for e in forwarded} == {("User:alice", "SUCCESS")}
    assert forwarded[0]["forwarding_principal"] == "User:broker", forwarded[0]
    assert forwarded[0]["forwarding_broker_id"] in (1, 2, 3), forwarded[0]
    wait_for(
        lambda: dynamic_configs(b, REMOTE) == {**MIRRORED, "retention.ms": "7200000"},
        30,
        "the altered retention.ms on B",
        0.3,
    )

    # --- the flow's status (KIP-710): running, and no secret in it -------------------------
    flow = wait_for(lambda: running_flow(b), 30, "the flow still running", 0.3)
    topics = {t["source_topic"]: t for t in flow["topics"]}
    assert topics[TOPIC] == {
        "source_topic": TOPIC,
        "remote_topic": REMOTE,
        "matched_filter": r"orders\..*",
    }
    assert flow["lagging_topics"] == []
    (member,) = flow["nodes"]
    assert member["worker_id"] == "127.0.0.2/A__B" and member["leader"]
    # The node's own Connect REST server (KIP-710's dedicated-mode REST) says the same.
    with urllib.request.urlopen(
        member["rest_url"] + "/connectors/MirrorSourceConnector/status", timeout=10
    ) as response:
        connect = json.loads(response.read())
    assert connect["connector"]["state"] == "RUNNING", connect
    assert connect["tasks"] and all(t["state"] == "RUNNING" for t in connect["tasks"]), connect
    shown = json.dumps(flow) + json.dumps(connect) + node.output()
    for secret in (a_token, b_token, node_token, CLIENT_USERS["alice"]):
        assert secret not in shown

    # --- records stay on A: the flow only read A, as its principal ------------------------
    by_flow = {(e["api"], e["outcome"]) for e in audit(a, principal="User:mm2-a")}
    assert by_flow == {("DescribeConfigs", "SUCCESS"), ("DescribeAcls", "SUCCESS")}, by_flow
    assert consume(brokers, TOPIC, PARTITIONS) == sent
    node.kill(signal.SIGTERM)  # it leaves its group: B's web stops at once
    assert node.process.wait(timeout=30) == 0, node.output()[-2000:]
