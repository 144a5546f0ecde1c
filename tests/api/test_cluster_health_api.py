"""Cluster health the Kafka way (docs/architecture/health-timeline.md): GET /api/v1/cluster's
`health`, the health filters of GET /api/v1/partitions and the Prometheus gauges, through a fenced
broker, a failed log dir, min.insync.replicas changes and the repair, on the real database.

Every figure is checked against the partitions as the API lists them (the definitions written out
again), and the filters against the figures; reading them never touches the partitions table."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from replicas.services import replica_state_apply_pending
from tests.api.test_replication_api import Kafka

pytestmark = pytest.mark.django_db

HEALTH_KEYS = {
    "under_replicated_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
    "leaderless_partitions",
    "preferred_replica_imbalance",
    "offline_log_dirs",
}
FILTERS = {
    "under_replicated": "under_replicated_partitions",
    "under_min_isr": "under_min_isr_partitions",
    "at_min_isr": "at_min_isr_partitions",
    "leaderless": "leaderless_partitions",
}
GAUGES = {
    "kafka_server_replicamanager_underreplicatedpartitions": "under_replicated_partitions",
    "kafka_server_replicamanager_underminisrpartitioncount": "under_min_isr_partitions",
    "kafka_server_replicamanager_atminisrpartitioncount": "at_min_isr_partitions",
    "kafka_controller_kafkacontroller_offlinepartitionscount": "leaderless_partitions",
    "kafka_controller_kafkacontroller_preferredreplicaimbalancecount": (
        "preferred_replica_imbalance"
    ),
    "kafka_log_logmanager_offlinelogdirectorycount": "offline_log_dirs",
}


@pytest.fixture
def kafka(api: Any, tokens: dict[str, str], register: Any) -> Kafka:
    return Kafka(api, tokens, register)


def health(api: Any, tokens: dict[str, str]) -> dict[str, int]:
    status, body = api.get("/api/v1/cluster", token=tokens["admin"])
    assert status == 200, body
    assert set(body["health"]) == HEALTH_KEYS
    return dict(body["health"])


def all_partitions(api: Any, tokens: dict[str, str], **filters: str) -> list[dict[str, Any]]:
    query = "&".join(f"{k}={v}" for k, v in {"page_size": "1000", **filters}.items())
    status, body = api.get(f"/api/v1/partitions?{query}", token=tokens["admin"])
    assert status == 200, body
    return list(body["results"])


def min_isr_of(api: Any, tokens: dict[str, str]) -> dict[str, int]:
    status, body = api.get("/api/v1/topics?page_size=100", token=tokens["admin"])
    assert status == 200, body
    return {t["name"]: t["min_insync_replicas"] for t in body["results"]}


def expected_figures(api: Any, tokens: dict[str, str]) -> dict[str, int]:
    """The contract's definitions over the partitions as the API lists them."""
    min_isr = min_isr_of(api, tokens)
    figures = dict.fromkeys(HEALTH_KEYS - {"offline_log_dirs"}, 0)
    for p in all_partitions(api, tokens):
        isr, replicas = len(p["isr_nodes"]), len(p["replica_nodes"])
        figures["under_replicated_partitions"] += isr < replicas
        figures["under_min_isr_partitions"] += isr < min_isr[p["topic"]]
        figures["at_min_isr_partitions"] += isr == min_isr[p["topic"]]
        figures["leaderless_partitions"] += p["leader_id"] == -1
        figures["preferred_replica_imbalance"] += p["leader_id"] != p["replica_nodes"][0]
    return figures


def scraped(client: Any) -> dict[str, float]:
    text = client.get("/metrics").content.decode()
    values = {}
    for name in GAUGES:
        match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
        assert match, name
        values[name] = float(match.group(1))
    return values


def check(kafka: Kafka, api: Any, tokens: dict[str, str], client: Any) -> dict[str, int]:
    """The figures equal the definitions, every filter lists exactly as many partitions as its
    figure counts, and the gauges say the same."""
    figures = health(api, tokens)
    expected = expected_figures(api, tokens)
    assert {k: figures[k] for k in expected} == expected
    for name, key in FILTERS.items():
        assert len(all_partitions(api, tokens, **{name: "true"})) == figures[key], name
    imbalanced = all_partitions(api, tokens, preferred_leader="false")
    assert len(imbalanced) == figures["preferred_replica_imbalance"]
    total = len(all_partitions(api, tokens))
    assert len(all_partitions(api, tokens, under_replicated="false")) == (
        total - figures["under_replicated_partitions"]
    )
    assert {name: int(v) for name, v in scraped(client).items()} == {
        name: figures[key] for name, key in GAUGES.items()
    }
    return figures


def test_health_through_a_fencing_a_failed_log_dir_and_its_repair(
    kafka: Kafka, api: Any, tokens: dict[str, str], client: Any
) -> None:
    kafka.register(0, 1, 2)
    kafka.create_topic(
        "orders",
        [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]],
        configs={"min.insync.replicas": "2"},
    )
    kafka.create_topic("logs", [[0], [1], [2]])
    assert check(kafka, api, tokens, client) == {
        "under_replicated_partitions": 0,
        "under_min_isr_partitions": 0,
        "at_min_isr_partitions": 3,  # logs: ISR 1 = min.insync.replicas 1
        "leaderless_partitions": 0,
        "preferred_replica_imbalance": 0,
        "offline_log_dirs": 0,
    }

    # Broker 2 is fenced: it leaves every ISR; what it led moves; logs-2 has no leader left.
    kafka.fence(2)
    figures = check(kafka, api, tokens, client)
    assert figures["under_replicated_partitions"] == 4  # every orders partition
    assert figures["at_min_isr_partitions"] == 7  # orders at ISR 2; logs keep an ISR of one
    assert figures["under_min_isr_partitions"] == 0  # logs-2 keeps its last ISR member
    assert figures["leaderless_partitions"] == 1  # logs-2
    assert figures["preferred_replica_imbalance"] == 2  # orders-2 and logs-2

    # Broker 1's log dir fails: its replicas go offline and, reported by AlterReplicaState, its
    # dir too (CONTRACT: "reported by heartbeats or AlterReplicaState"; a report naming no dir
    # stands for Kafka's DirectoryId.LOST until a heartbeat says which, or that none is).
    status, body = kafka.replicas_offline(1, {"orders": [0, 1, 2, 3]})
    assert status == 200 and body["error_code"] == 0, body
    replica_state_apply_pending()  # when the controller has not taken it yet
    figures = check(kafka, api, tokens, client)
    assert figures["under_min_isr_partitions"] == 4  # orders down to an ISR of one
    assert figures["at_min_isr_partitions"] == 3  # the logs partitions
    assert figures["preferred_replica_imbalance"] == 3  # and orders-1, led by 1 before
    assert figures["offline_log_dirs"] == 1

    # Its heartbeats name the dir: still one dir, now named, in the brokers API too.
    failed = str(uuid.uuid4())
    kafka.heartbeat(1, offline_log_dirs=[failed])
    assert check(kafka, api, tokens, client)["offline_log_dirs"] == 1
    status, broker = api.get("/api/v1/brokers/1", token=tokens["admin"])
    assert broker["offline_log_dirs"] == [failed]

    # The topic asks for less: fewer partitions are under min ISR, without any partition change.
    status, body = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "orders",
                    "configs": [
                        {"name": "min.insync.replicas", "config_operation": "SET", "value": "1"}
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert body["responses"][0]["error_code"] == 0, body
    figures = check(kafka, api, tokens, client)
    assert figures["under_min_isr_partitions"] == 0
    assert figures["at_min_isr_partitions"] == 7

    # The cluster default asks for more: every topic without its own value follows.
    status, body = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {"name": "min.insync.replicas", "config_operation": "SET", "value": "2"}
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert body["responses"][0]["error_code"] == 0, body
    figures = check(kafka, api, tokens, client)
    assert figures["under_min_isr_partitions"] == 3  # the logs partitions, each at ISR 1
    assert figures["at_min_isr_partitions"] == 4  # orders keeps its own value

    # Repair: the dir is back, the leaders take the replica back; broker 2 comes back too.
    kafka.heartbeat(1, offline_log_dirs=[])
    for index in range(4):
        current = kafka.partition("orders", index)
        code, answer = kafka.alter_partition("orders", index, [*current["isr_nodes"], 1])
        assert code == 0, answer
    kafka.heartbeat(2)  # unfenced: it may lead logs-2 again
    figures = check(kafka, api, tokens, client)
    assert figures["offline_log_dirs"] == 0
    assert figures["leaderless_partitions"] == 0


def test_reading_health_never_reads_the_partitions(
    kafka: Kafka, api: Any, tokens: dict[str, str], client: Any
) -> None:
    kafka.register(0, 1)
    kafka.create_topic("a", [[0, 1]] * 20)
    kafka.fence(1)
    with CaptureQueriesContext(connection) as queries:
        assert health(api, tokens)["under_replicated_partitions"] == 20
        scraped(client)
    assert not [q for q in queries.captured_queries if "cp_partition" in q["sql"]]
