"""A rolling upgrade from Kafka 4.1 to 4.4 under this control plane (issue 43, point 6): three
stock 4.1.1 brokers serve an idempotent `acks=all` producer and a consumer group; each broker in
turn stops (a controlled shutdown) and starts again as 4.4.0 on the same data dirs, back in every
ISR before the next goes; then Kafka 4.4's own `kafka-features` finalizes the new levels. No
acknowledged message is lost, the group never stalls past its session, and the brokers run the
cluster at metadata.version 4.4-IV2 afterwards (a broker restarted then registers with Kafka
4.3's RegisterBrokerRecord v4).

`kafka-features upgrade --release-version 4.4` asks for every feature's default at 4.4, among
them eligible.leader.replicas.version 1, which this controller refuses (it does not write
KIP-966's records yet): the whole request is refused and nothing changes, as Kafka refuses one
its controller does not support. The operator names the levels instead (docs/operators/
feature-upgrades.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.rolling_upgrade import roll
from stock_kafka import jars
from stock_kafka.broker import KafkaBroker
from tests.conftest import Api, listener_client_class
from tests.kafka import harness, tools
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import broker_row, broker_under, control_plane, module_database

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

FROM, TO = "4.1.1", "4.4.0"
NODE_IDS = (1, 2, 3)
TOPIC = "upgrade-orders"
GROUP = "upgrade-readers"
SESSION_TIMEOUT_MS = 10_000  # the consumer group's session
CLIENT_USERS = {"admin": "admin-secret"}
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "10000",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "min.insync.replicas": "2",
}


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The brokers live through the module (module_db flushes at its end)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(django_db_blocker, CP_BROKER_SESSION_TIMEOUT_MS=6000):
        yield


@pytest.fixture(scope="module")
def cluster(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    need_kafka_jars()
    if jars.chosen_version() != jars.pinned_version():
        pytest.skip(f"the rolling upgrade runs from {FROM} whatever KAFKA_VERSION names: once")
    for version in (FROM, TO):
        if not jars.installed(version):
            pytest.fail(
                f"Kafka {version} is not installed: bash scripts/install-kafka.sh {version}"
            )
    principals = {node: f"kafka-broker-{node}" for node in NODE_IDS}
    with control_plane(list(principals.values())) as plane:
        brokers = [
            broker_under(
                plane,
                node,
                principals[node],
                tmp_path_factory.mktemp(f"upgrade-broker-{node}"),
                BROKER_PROPERTIES,
                version=FROM,
                client_users=CLIENT_USERS,
            )
            for node in NODE_IDS
        ]
        try:
            for broker in brokers:
                broker.start()
            harness.wait(brokers, lambda: all(unfenced(n) for n in NODE_IDS), 180, "unfenced")
            yield plane, brokers
        finally:
            for broker in brokers:
                broker.stop(timeout=20)


def unfenced(node_id: int) -> bool:
    row = broker_row(node_id)
    return row is not None and not row.fenced


def isrs_whole() -> bool:
    from replicas.models import Partition

    partitions = list(Partition.objects.values_list("replicas", "isr", "leader"))
    return bool(partitions) and all(
        sorted(isr) == sorted(replicas) and leader >= 0 for replicas, isr, leader in partitions
    )


def back(broker: KafkaBroker) -> bool:
    return unfenced(broker.node_id) and isrs_whole()


def features(broker: KafkaBroker, version: str, config: Path, *where: str) -> dict[str, str]:
    """`kafka-features describe` as the release's tool prints it: finalized level by feature."""
    out = (
        tools.run(
            "kafka-features",
            *(where or ("--bootstrap-server", broker.sasl_bootstrap)),
            "--command-config",
            str(config),
            "describe",
            version=version,
        )
        .ok()
        .stdout
    )
    return dict(re.findall(r"Feature: (\S+)\s.*FinalizedVersionLevel: (\S+)", out))


def test_a_rolling_upgrade_loses_nothing_and_finalizes_the_new_levels(
    cluster: Any, tmp_path: Path
) -> None:
    from controlplane.models import FinalizedFeature, MetadataRecord

    plane, brokers = cluster
    api = Api(listener_client_class()())
    topic = {"name": TOPIC, "num_partitions": 3, "replication_factor": 3}
    status, body = api.post(
        "/api/v1/create-topics", {"topics": [topic]}, token=plane.tokens["admin"]
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    harness.wait(brokers, isrs_whole, 120, "every ISR whole")

    figures, _, _ = roll(
        brokers, TO, topic=TOPIC, group=GROUP, back=back, session_timeout_ms=SESSION_TIMEOUT_MS
    )
    print(f"rolling upgrade {FROM} -> {TO}: {figures.as_dict()}")
    assert figures.acknowledged > 100, figures
    assert figures.lost == 0, figures
    assert figures.consumer_longest_stall_s < SESSION_TIMEOUT_MS / 1000, figures
    assert all(b.version == TO and b.running for b in brokers)

    client = tools.sasl_config(tmp_path / "admin.properties", "admin", "admin-secret")
    before = features(brokers[0], TO, client)
    assert before["metadata.version"] == "4.0-IV3", before
    writes = MetadataRecord.objects.count()

    refused = tools.run(
        "kafka-features",
        "--bootstrap-server",
        brokers[0].sasl_bootstrap,
        "--command-config",
        str(client),
        "upgrade",
        "--release-version",
        "4.4",
        version=TO,
    )
    assert refused.returncode != 0, refused.output
    assert "eligible.leader.replicas.version" in refused.output, refused.output
    assert "KIP-966" in refused.output, refused.output
    assert MetadataRecord.objects.count() == writes  # nothing half-applied

    controller = tools.sasl_config(tmp_path / "ctl.properties", "admin", plane.tokens["admin"])
    upgraded = tools.run(
        "kafka-features",
        "--bootstrap-controller",
        plane.controller,
        "--command-config",
        str(controller),
        "upgrade",
        "--feature",
        "metadata.version=33",
        "--feature",
        "share.version=2",
        "--feature",
        "streams.version=1",
        version=TO,
    ).ok()
    assert "metadata.version was upgraded to 33" in upgraded.stdout, upgraded.output
    levels = dict(FinalizedFeature.objects.values_list("name", "level"))
    assert (levels["metadata.version"], levels["share.version"]) == (33, 2)

    def brokers_run_it() -> bool:
        return all(features(b, TO, client)["metadata.version"] == "4.4-IV2" for b in brokers)

    harness.wait(brokers, brokers_run_it, 90, "every broker at 4.4-IV2")
    on_the_controller = features(
        brokers[0], TO, controller, "--bootstrap-controller", plane.controller
    )
    assert on_the_controller["metadata.version"] == "4.4-IV2"

    # At 4.4-IV2 a registration is Kafka 4.3's RegisterBrokerRecord v4: a restarted broker
    # registers, is unfenced and rejoins every ISR.
    restarted = brokers[1]
    restarted.stop(timeout=60)
    restarted.start()
    harness.wait(brokers, lambda: back(restarted), 180, "the restarted broker back")
    from controlplane.runtime.replay import metadata_verify

    assert metadata_verify() == []
