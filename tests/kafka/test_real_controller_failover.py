"""Controller failover under stock Kafka brokers, distributed (issue 36, point 2): PostgreSQL,
Redis, a web node, two `run_controller` (one active, one standby, the same controller id: the one
voter the brokers know), `serve_kafka` with the controller listener, three stock brokers. kill -9
of the active controller while a producer sends: the standby takes over with a new epoch, the
brokers follow its log (a topic created after the failover reaches every broker's Metadata),
keep serving, register nothing twice, and lose no acknowledged message."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.kafka_clients import Producing
from devtools.real_brokers import brokers_running, brokers_under, start_controller_listener
from devtools.stack import Stack, running_stack, wait_for
from stock_kafka.broker import KafkaBroker
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import LOG_LEVELS

pytestmark = pytest.mark.integration

NODE_IDS = (1, 2, 3)
TOPIC = "orders"
CONTROLLER_ID = 3000  # both controller nodes: the quorum's one voter, as the brokers know it


@contextlib.contextmanager
def distributed(tmp: Path) -> Iterator[tuple[Stack, Any, list[KafkaBroker]]]:
    need_kafka_jars()
    with running_stack(tmp / "stack", settings={"CP_BROKER_SESSION_TIMEOUT_MS": "6000"}) as stack:
        web = stack.start_web(workers=1, threads=8)
        # One at a time: started together, either may win the lease (the CI failure of stop 40).
        stack.start_controller("controller-a", CONTROLLER_ID)
        stack.wait_active("controller-a", timeout=60)
        stack.start_controller("controller-b", CONTROLLER_ID)
        port = start_controller_listener(stack)
        brokers = brokers_under(
            stack,
            port,
            tmp,
            NODE_IDS,
            controller_id=CONTROLLER_ID,
            overrides={"broker.heartbeat.interval.ms": "500"},
            log_levels=LOG_LEVELS,
        )
        with brokers_running(brokers):
            yield stack, web, brokers


def leaders(broker: KafkaBroker, topic: str) -> dict[int, int]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        (described,) = admin.describe_topics([topic])
    finally:
        admin.close()
    return {p["partition_index"]: p["leader_id"] for p in described["partitions"]}


def registrations(stack: Stack) -> int:
    return int(
        stack.sql(
            "SELECT count(*) FROM cp_metadata_record WHERE record_type = 'RegisterBrokerRecord'"
        )[0][0]
    )


def test_kill_9_of_the_active_controller_under_real_brokers(tmp_path: Path) -> None:
    with distributed(tmp_path) as (stack, web, brokers):
        admin = stack.tokens["admin"]
        wait_for(
            lambda: web.get("/api/v1/cluster", admin)[1]["broker_states"].get("UNFENCED") == 3,
            180,
            "three unfenced",
        )
        status, body = web.post(
            "/api/v1/create-topics",
            {"topics": [{"name": TOPIC, "num_partitions": 6, "replication_factor": 3}]},
            admin,
        )
        assert status == 200 and body["topics"][0]["error_code"] == 0, body
        wait_for(lambda: len(leaders(brokers[0], TOPIC)) == 6, 60, "the topic on the brokers")
        registered = registrations(stack)
        _, epoch, _ = stack.lease()
        bootstrap = ",".join(b.bootstrap for b in brokers)
        with Producing(bootstrap, f"failover-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
            wait_for(lambda: len(producing.acknowledged) >= 50, 60, "writes before")
            stack.kill("controller-a")
            new_epoch = stack.wait_active("controller-b", timeout=60)
            assert new_epoch > epoch
            # The brokers follow the new controller's log: a topic created now reaches them all.
            status, body = web.post(
                "/api/v1/create-topics",
                {
                    "topics": [
                        {"name": "after-failover", "num_partitions": 3, "replication_factor": 3}
                    ]
                },
                admin,
            )
            assert status == 200 and body["topics"][0]["error_code"] == 0, body
            for broker in brokers:
                wait_for(
                    lambda b=broker: len(leaders(b, "after-failover")) == 3,
                    60,
                    f"broker {broker.node_id} following the new controller",
                )
            before = len(producing.acknowledged)
            wait_for(lambda: len(producing.acknowledged) >= before + 50, 90, "writes after")
        assert not producing.errors, producing.errors[:5]
        assert all(broker.running for broker in brokers)
        assert registrations(stack) == registered  # nobody registered again
        status, cluster = web.get("/api/v1/cluster", admin)
        assert cluster["broker_states"].get("UNFENCED") == 3, cluster
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=bootstrap,
            group_id=f"after-{uuid.uuid4().hex[:6]}",
            auto_offset_reset="earliest",
            consumer_timeout_ms=5000,
        )
        seen: set[str] = set()
        deadline = time.monotonic() + 90
        try:
            while time.monotonic() < deadline and not producing.acknowledged <= seen:
                seen |= {m.value.decode() for m in consumer}
        finally:
            consumer.close()
        assert producing.acknowledged <= seen, sorted(producing.acknowledged - seen)[:10]
