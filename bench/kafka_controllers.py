"""Kafka's own KRaft controllers and three stock brokers under them, on plaintext listeners: the
other side of the side-by-side benchmarks (`bench.real_cluster_failover`, `bench.reassign`)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker

NODE_IDS = (1, 2, 3)
KAFKA_CONTROLLER_ID = 3000
BROKER_SETTINGS = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    "leader.imbalance.check.interval.seconds": "5",
    "num.partitions": "1",
}


class KafkaController(KafkaBroker):
    """Kafka's own KRaft controller: one `process.roles=controller` node, PLAINTEXT."""

    def properties(self) -> dict[str, str]:
        endpoint = f"CONTROLLER://{self.host}:{self.port}"
        return {
            "process.roles": "controller",
            "node.id": str(self.node_id),
            "listeners": endpoint,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "controller.quorum.voters": f"{self.node_id}@{self.host}:{self.port}",
            "log.dirs": str(self.data_dir),
            **self.overrides,
        }


def kafkas_own_cluster(
    work: Path, heap: str, controller_overrides: dict[str, str], voters: int = 1
) -> tuple[list[KafkaController], list[KafkaBroker]]:
    """Kafka's own KRaft controllers (`voters` nodes of `process.roles=controller`) and the
    three brokers under them, on plaintext listeners: the side-by-side benchmarks' other side."""
    cluster_id = kafka_cluster_id()
    controllers = [
        KafkaController(
            node_id=KAFKA_CONTROLLER_ID + i,
            cluster_id=cluster_id,
            controller="",
            principal="",
            token="",
            work_dir=work / ("kafka-controller" if i == 0 else f"kafka-controller-{i}"),
            heap=heap,
            overrides=controller_overrides,
        )
        for i in range(voters)
    ]
    quorum = ",".join(f"{c.node_id}@{c.host}:{c.port}" for c in controllers)
    for controller in controllers:
        controller.overrides["controller.quorum.voters"] = quorum
    controller = controllers[0]
    plain = {
        **BROKER_SETTINGS,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.voters": quorum,
    }
    brokers = [
        KafkaBroker(
            node_id=node,
            cluster_id=cluster_id,
            controller=f"127.0.0.1:{controller.port}",
            controller_id=KAFKA_CONTROLLER_ID,
            principal="unused",
            token="unused",
            work_dir=work / f"kafka-{node}",
            heap=heap,
            overrides=plain,
        )
        for node in NODE_IDS
    ]
    return controllers, brokers


def quorum_leader(controllers: Sequence[KafkaController]) -> int:
    """The quorum's leader, as Kafka's MetadataQuorumCommand describes it."""
    live = next(c for c in controllers if c.running)
    command = kafka.java_command(
        kafka.tool_class("MetadataQuorumCommand"),
        ["--bootstrap-controller", f"{live.host}:{live.port}", "describe", "--status"],
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    for line in done.stdout.splitlines():
        if line.startswith("LeaderId:"):
            return int(line.split(":")[1])
    raise RuntimeError(f"no LeaderId in {done.stdout}")


def kafka_cluster_id() -> str:
    """A new cluster id as `kafka-storage random-uuid` makes one (16 random bytes, base64)."""
    import base64
    import uuid

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
