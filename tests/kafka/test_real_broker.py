"""One stock Apache Kafka 4.1 broker (the pinned jars, unmodified) under this control plane
(issue 35, point 4): its storage formatted with this cluster's id, `process.roles=broker`, this
controller as its one static voter at the wire listener's CONTROLLER listener, where it
authenticates with SASL/PLAIN as a broker principal (stock_kafka.broker).

One broker and one listener for the module (tests.kafka.harness: the database opened for the
module, the controller's timer running as in a deployment, everything flushed at the end; every
wait bounded, a failure printing the broker's last lines)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stock_kafka.broker import STARTED, KafkaBroker
from tests.conftest import Api, listener_client_class
from tests.kafka import harness
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import (
    ControlPlane,
    audited_apis,
    broker_row,
    broker_under,
    control_plane,
    metric,
    module_database,
    registrations,
)
from tests.ui.conftest import ui_login

# The marker makes pytest-django create the test database; `_django_db_marker` below keeps it
# from wrapping or flushing each test (module_db opens and flushes it once).
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_ID = 1
BROKER_PRINCIPAL = "kafka-broker-1"
SESSION_TIMEOUT_MS = 4000  # the controller's broker session (CP_BROKER_SESSION_TIMEOUT_MS)
HEARTBEAT_MS = 500  # the broker's broker.heartbeat.interval.ms
TOPIC = "real-broker-topic"


@dataclasses.dataclass
class Setup:
    broker: KafkaBroker
    plane: ControlPlane

    @property
    def tokens(self) -> dict[str, str]:
        return self.plane.tokens


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    """One controller for the module (tests/conftest.py's per-test reset would drop the
    broker's session between the tests): reset once, at the module's start and end."""
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """pytest-django's own (plugin.py) would flush the database after each test: the broker
    and its registration live through the module (module_db flushes at its end)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(django_db_blocker, CP_BROKER_SESSION_TIMEOUT_MS=SESSION_TIMEOUT_MS):
        yield


@pytest.fixture(scope="module")
def setup(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    need_kafka_jars()
    with control_plane([BROKER_PRINCIPAL]) as plane:
        broker = broker_under(
            plane,
            NODE_ID,
            BROKER_PRINCIPAL,
            tmp_path_factory.mktemp("kafka-broker"),
            {"broker.heartbeat.interval.ms": str(HEARTBEAT_MS)},
            log_dir_count=2,  # KIP-858: it places each new replica and says where
        )
        try:
            broker.start()
            yield Setup(broker, plane)
        finally:
            broker.stop(timeout=20)


def wait(broker: KafkaBroker, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    return harness.wait([broker], predicate, timeout, what)


def with_log(broker: KafkaBroker, message: str) -> str:
    return harness.with_log([broker], message)


def assignments_by(principal: str) -> int:
    """The PartitionChangeRecords `principal` wrote to place replicas in log dirs."""
    from controlplane.models import MetadataRecord

    return MetadataRecord.objects.filter(
        record_type="PartitionChangeRecord", principal=principal, data__has_key="directories"
    ).count()


def test_a_stock_broker_starts_and_registers(setup: Setup) -> None:
    broker = setup.broker
    found = wait(broker, lambda: registrations(NODE_ID), 90, "its RegisterBrokerRecord")
    assert found[0]["principal"] == f"User:{BROKER_PRINCIPAL}", found
    registered = broker_row(NODE_ID)
    assert registered is not None and registered.listeners, with_log(broker, str(registered))
    assert registered.listeners[0]["port"] == broker.port, registered.listeners


def test_the_broker_catches_up_leads_is_fenced_and_comes_back(setup: Setup) -> None:
    from kafka import KafkaAdminClient

    broker = setup.broker
    api = Api(listener_client_class()())

    # Caught up and unfenced: the controller says so, and the broker does.
    wait(broker, lambda: (row := broker_row(NODE_ID)) and not row.fenced, 120, "unfenced")
    broker.wait_for_log(STARTED, 60)
    first_incarnation = broker_row(NODE_ID).incarnation_id
    status, body = api.get(f"/api/v1/brokers/{NODE_ID}", token=setup.tokens["admin"])
    assert status == 200 and body["state"] == "UNFENCED", body
    # The UI and /metrics name it too.
    ui = listener_client_class()()
    ui_login(ui, "admin", setup.tokens["admin"])
    page = ui.get(f"/ui/brokers/{NODE_ID}/").content.decode()
    assert "UNFENCED" in page and str(broker.port) in page, page[:2000]
    assert metric("kafka_controller_kafkacontroller_activebrokercount") == 1
    # So does the audit trail: its registration and the heartbeat that unfenced it.
    assert {"BrokerRegistration", "BrokerHeartbeat"} <= audited_apis(f"User:{BROKER_PRINCIPAL}")

    # A topic created through the REST API gets it as leader...
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1}]},
        token=setup.tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body

    # ...and the broker answers a stock client's Metadata for it from its own image.
    def leader_from_the_broker() -> int | None:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
        try:
            described = admin.describe_topics([TOPIC])
        finally:
            admin.close()
        partitions = described[0]["partitions"] if described[0]["error_code"] == 0 else []
        return partitions[0]["leader_id"] if partitions else None

    assert wait(broker, leader_from_the_broker, 60, "the broker's Metadata") == NODE_ID

    # Two log dirs: the new replica's dir was UNASSIGNED; the broker put it in one of them and
    # told the controller (AssignReplicasToDirs), which keeps it in the partition.
    log_dirs = registrations(NODE_ID)[-1]["data"]["log_dirs"]
    assert len(log_dirs) == 2, log_dirs

    def placed() -> list[str]:
        from replicas.models import Partition

        return list(Partition.objects.get(topic__name=TOPIC, partition_index=0).directories)

    directories = wait(broker, placed, 60, "the replica's dir (AssignReplicasToDirs)")
    assert len(directories) == 1 and directories[0] in log_dirs, (directories, log_dirs)
    assert assignments_by(f"User:{BROKER_PRINCIPAL}") >= 1
    assert "AssignReplicasToDirs" in audited_apis(f"User:{BROKER_PRINCIPAL}")

    # kill -9: fenced once the session lapses.
    broker.kill()
    killed = time.monotonic()
    deadline = SESSION_TIMEOUT_MS / 1000 + 15
    while not broker_row(NODE_ID).fenced:
        assert time.monotonic() - killed < deadline, with_log(broker, "not fenced after kill -9")
        time.sleep(0.25)
    assert metric("kafka_controller_kafkacontroller_fencedbrokercount") == 1

    # Restarted: a new incarnation, caught up, unfenced again.
    broker.start()
    wait(broker, lambda: (row := broker_row(NODE_ID)) and not row.fenced, 120, "unfenced again")
    assert broker_row(NODE_ID).incarnation_id != first_incarnation
    broker.wait_for_log(STARTED, 60)
    # It leads again once the controller's round after its unfencing elected it (-1 until then).
    wait(broker, lambda: leader_from_the_broker() == NODE_ID, 60, "Metadata after the restart")
