"""One stock Apache Kafka 4.1 broker (the pinned jars, unmodified) under this control plane
(issue 35, point 4): its storage formatted with this cluster's id, `process.roles=broker`, this
controller as its one static voter at the wire listener's CONTROLLER listener, where it
authenticates with SASL/PLAIN as a broker principal (devtools.kafka_broker).

One broker and one listener for the module: the database is opened for the module (not per
test), the controller's timer runs as in a deployment (it fences a broker whose session lapses),
and everything is flushed when the module ends. Every wait is bounded; a failure prints the
broker's last lines."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devtools.kafka_broker import STARTED, KafkaBroker
from tests.conftest import Api, controller_state_reset, listener_client_class
from tests.kafka.conftest import need_kafka_jars
from tests.ui.conftest import ui_login
from tests.wire.conftest import RunningListener, start_listener

# The marker makes pytest-django create the test database; `_django_db_marker` below keeps it
# from wrapping or flushing each test (module_db opens and flushes it once).
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_ID = 1
BROKER_PRINCIPAL = "kafka-broker-1"
SESSION_TIMEOUT_MS = 4000  # the controller's broker session (CP_BROKER_SESSION_TIMEOUT_MS)
HEARTBEAT_MS = 500  # the broker's broker.heartbeat.interval.ms
TOPIC = "real-broker-topic"
# What the broker logs of its talks with the controller (the Raft client and the lifecycle at
# INFO; the network client's disconnects and unsupported versions).
LOG_LEVELS = {
    "org.apache.kafka.raft": "INFO",
    "kafka.server.BrokerLifecycleManager": "INFO",
    "org.apache.kafka.clients.NetworkClient": "INFO",
}


@dataclasses.dataclass
class Setup:
    broker: KafkaBroker
    listener: RunningListener
    tokens: dict[str, str]
    cluster_id: str


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
    """The database for the whole module, committed as it goes (the listener's threads and
    the broker's requests see every row); flushed at the end, so no other test sees a row."""
    from django.conf import settings
    from django.core.management import call_command

    saved = settings.CP_BROKER_SESSION_TIMEOUT_MS
    settings.CP_BROKER_SESSION_TIMEOUT_MS = SESSION_TIMEOUT_MS
    with django_db_blocker.unblock():
        controller_state_reset()
        try:
            yield
        finally:
            controller_state_reset()
            settings.CP_BROKER_SESSION_TIMEOUT_MS = saved
            call_command("flush", verbosity=0, interactive=False)


@pytest.fixture(scope="module")
def setup(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    need_kafka_jars()
    from controlplane.principals import principal_create
    from controlplane.runtime.controller import get_runtime
    from controlplane.runtime.lease import cluster_get_or_create

    tokens = {
        "admin": principal_create(name="admin", super_user=True),
        "broker": principal_create(name=BROKER_PRINCIPAL, broker=True),
    }
    cluster_id = cluster_get_or_create().cluster_id
    stop = threading.Event()
    timer = threading.Thread(target=controller_timer, args=(get_runtime(), stop), daemon=True)
    timer.start()
    runner, listener = start_listener()
    broker = KafkaBroker(
        node_id=NODE_ID,
        cluster_id=cluster_id,
        controller=f"{listener.host}:{listener.controller_port}",
        principal=BROKER_PRINCIPAL,
        token=tokens["broker"],
        work_dir=tmp_path_factory.mktemp("kafka-broker"),
        overrides={"broker.heartbeat.interval.ms": str(HEARTBEAT_MS)},
        log_levels=LOG_LEVELS,
    )
    try:
        broker.start()
        yield Setup(broker, listener, tokens, cluster_id)
    finally:
        broker.stop(timeout=20)
        runner.stop()
        stop.set()
        timer.join(timeout=30)


def controller_timer(runtime: Any, stop: threading.Event) -> None:
    """The controller's timer as `run_controller` runs it (the lease, fencing the brokers whose
    session lapsed, the jobs), its database connection closed when it stops."""
    from django.db import close_old_connections, connections

    try:
        while not stop.wait(0.5):
            close_old_connections()
            runtime.tick()
    finally:
        connections.close_all()


def with_log(broker: KafkaBroker, message: str) -> str:
    return f"{message}\n--- broker {broker.node_id}'s last lines ---\n{broker.log_tail(100)}"


def wait(broker: KafkaBroker, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """`predicate()` until truthy (the broker must stay up); AssertionError with its log."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as error:  # what we wait for may not be there yet
            last = error
        else:
            if last:
                return last
        assert broker.running, with_log(broker, f"the broker exited waiting for {what}")
        time.sleep(0.25)
    raise AssertionError(with_log(broker, f"{what}: not within {timeout}s (last: {last!r})"))


def metric(name: str) -> float:
    """One unlabeled gauge from /metrics (no login: Prometheus scrapes it so)."""
    text = listener_client_class()().get("/metrics").content.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def registrations(node_id: int) -> list[Any]:
    from controlplane.models import MetadataRecord

    return list(
        MetadataRecord.objects.filter(record_type="RegisterBrokerRecord", broker_id=node_id)
        .order_by("offset")
        .values("offset", "principal", "data")
    )


def broker_row(node_id: int) -> Any:
    from brokers.models import Broker

    return Broker.objects.filter(broker_id=node_id).first()


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
    assert wait(broker, leader_from_the_broker, 60, "Metadata after the restart") == NODE_ID
