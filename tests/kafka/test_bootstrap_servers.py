"""A stock Kafka broker configured as Kafka 4.x's quick start configures one (KIP-853):
`controller.quorum.bootstrap.servers` instead of `controller.quorum.voters`. It knows no voter:
it finds the leader through a Fetch answer (NodeEndpoints) and reaches the active controller
for its registration at the address the log's VotersRecord gives, which the controller listener
wrote when it first served a Fetch. So it registers, is unfenced and follows the log; its own
copy of the log holds KRaftVersionRecord and VotersRecord as control records (kafka-dump-log);
`kafka-metadata-quorum describe` shows the voter and the broker as an observer with its lag,
through the broker and on the controller listener."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stock_kafka.broker import STARTED
from tests.kafka import harness, tools
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import broker_row, broker_under, control_plane, module_database

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_ID = 7
PRINCIPAL = "kafka-broker-7"
CLIENT_USERS = {"admin": "admin-secret"}  # the broker's own SASL users (its client listener)


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The broker lives through the module (module_db flushes at its end)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(django_db_blocker, CP_BROKER_SESSION_TIMEOUT_MS=4000):
        yield


@pytest.fixture(scope="module")
def broker(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    need_kafka_jars()
    with control_plane([PRINCIPAL]) as plane:
        kafka_broker = broker_under(
            plane,
            NODE_ID,
            PRINCIPAL,
            tmp_path_factory.mktemp("bootstrap-broker"),
            {"broker.heartbeat.interval.ms": "500"},
            bootstrap_servers=True,
            client_users=CLIENT_USERS,
        )
        try:
            kafka_broker.start()
            yield kafka_broker, plane
        finally:
            kafka_broker.stop(timeout=20)


def test_the_properties_name_no_voter(broker: Any) -> None:
    kafka_broker, plane = broker
    props = kafka_broker.properties()
    assert props["controller.quorum.bootstrap.servers"] == plane.controller
    assert "controller.quorum.voters" not in props


def test_it_registers_follows_the_log_and_keeps_the_voters(broker: Any, tmp_path: Path) -> None:
    kafka_broker, plane = broker
    harness.wait(
        [kafka_broker], lambda: (row := broker_row(NODE_ID)) and not row.fenced, 150, "unfenced"
    )
    kafka_broker.wait_for_log(STARTED, 60)
    from controlplane.models import KRaftQuorum

    quorum = KRaftQuorum.objects.get(pk=1)
    host, port = plane.controller.rsplit(":", 1)
    assert quorum.kraft_version == 1
    assert [(v["voter_id"], v["endpoints"]) for v in quorum.voters] == [
        (3000, [{"name": "CONTROLLER", "host": host, "port": int(port)}])
    ]
    # The broker's own copy of __cluster_metadata holds the quorum's control records.
    segment = next((kafka_broker.data_dir / "__cluster_metadata-0").glob("*.log"))
    dumped = (
        tools.run("kafka-dump-log", "--cluster-metadata-decoder", "--files", str(segment))
        .ok()
        .output
    )
    assert re.search(r"KRaftVersion.*\"kRaftVersion\":1", dumped.replace(" ", "")), dumped[-3000:]
    voters_line = next(line for line in dumped.splitlines() if "KRaftVoters" in line)
    assert f'"port":{port}' in voters_line.replace(" ", "") and "CONTROLLER" in voters_line
    from controlplane.runtime.replay import metadata_verify

    assert metadata_verify() == []  # the log replayed equals the tables, voters included


def describe(*args: str, where: list[str]) -> str:
    return tools.run("kafka-metadata-quorum", *where, "describe", *args).ok().stdout


def test_kafka_metadata_quorum_shows_the_voter_and_the_observer(
    broker: Any, tmp_path: Path
) -> None:
    kafka_broker, plane = broker
    harness.wait(
        [kafka_broker], lambda: (row := broker_row(NODE_ID)) and not row.fenced, 150, "unfenced"
    )
    through_broker = [
        "--bootstrap-server",
        kafka_broker.sasl_bootstrap,
        "--command-config",
        str(tools.sasl_config(tmp_path / "client.properties", "admin", "admin-secret")),
    ]
    on_the_controller = [
        "--bootstrap-controller",
        plane.controller,
        "--command-config",
        str(tools.sasl_config(tmp_path / "ctl.properties", "admin", plane.tokens["admin"])),
    ]
    for where in (through_broker, on_the_controller):
        status = dict(re.findall(r"^(\w+):\s+(.*)$", describe("--status", where=where), re.M))
        assert status["LeaderId"] == "3000", status
        voters = json.loads(status["CurrentVoters"])
        assert [v["id"] for v in voters] == [3000]
        assert voters[0]["endpoints"] == [f"CONTROLLER://{plane.controller}"]
        assert [o["id"] for o in json.loads(status["CurrentObservers"])] == [NODE_ID]
        replication = describe("--replication", where=where)
        rows = {
            int(node): (int(lag), role)
            for node, lag, role in re.findall(
                r"^(\d+)\s+\S+\s+\d+\s+(\d+)\s+.*\b(Leader|Follower|Observer)\b", replication, re.M
            )
        }
        assert rows.get(3000, (0, ""))[1] == "Leader", replication
        assert rows.get(NODE_ID, (0, ""))[1] == "Observer", replication
        assert rows[NODE_ID][0] < 1000, replication  # a small lag: it follows the log
