"""SCRAM users (KIP-554), client metrics subscriptions (KIP-714) and group configs (KIP-848)
with Kafka's own tools through a stock Apache Kafka broker under this control plane.

`kafka-configs --entity-type users` (ConfigCommand from the 4.1.1 and the 4.4.0 jars) sets and
deletes SCRAM credentials through a real 4.1.1 broker, which forwards AlterUserScramCredentials
in an Envelope; the broker reads the UserScramCredentialRecords from the metadata log and logs
those users in with SCRAM-SHA-256 and -512 on its own SASL listener (librdkafka and kafka-python
as the clients), and so does the control plane's own listener; `--describe` is the broker's own
answer from its image. `kafka-client-metrics` (ClientMetricsCommand) and `kafka-configs
--entity-type client-metrics|groups` alter, describe and delete through the broker; what the
control plane refuses comes back to the tool with Kafka's code."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.models import AuditEvent
from stock_kafka.broker import KafkaBroker
from stock_kafka.jars import ROOT, installed
from tests.kafka import harness
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import ControlPlane, broker_under, control_plane, module_database

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_ID = 1
PRINCIPAL = "kafka-broker-1"
CLIENT_USERS = {"admin": "admin-secret"}  # PLAIN logins of the broker itself (the tool's)
PINNED, NEWEST = "4.1.1", "4.4.0"
SCRAM_256, SCRAM_512 = "SCRAM-SHA-256", "SCRAM-SHA-512"


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    yield  # one controller for the module (tests.kafka.harness)


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The broker lives through the module (module_db flushes at its end)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(django_db_blocker):
        yield


@pytest.fixture(scope="module")
def setup(
    module_db: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KafkaBroker, ControlPlane]]:
    need_kafka_jars()
    with control_plane([PRINCIPAL]) as plane:
        broker = broker_under(
            plane,
            NODE_ID,
            PRINCIPAL,
            tmp_path_factory.mktemp("broker"),
            {},
            client_users=CLIENT_USERS,
        )
        try:
            broker.start()
            harness.wait([broker], lambda: unfenced(), 180, "the broker unfenced")
            yield broker, plane
        finally:
            broker.stop(timeout=20)


def unfenced() -> bool:
    row = harness.broker_row(NODE_ID)
    return row is not None and not row.fenced


def tool(
    broker: KafkaBroker, work: Path, simple_name: str, *args: str, version: str = PINNED
) -> subprocess.CompletedProcess[str]:
    """A Kafka tool (by its class's simple name in `version`'s jars) through the broker's SASL
    listener, logged in as the broker's PLAIN user `admin` (forwarded as User:admin)."""
    if not installed(version):
        pytest.skip(f"Kafka {version}'s jars are not installed (scripts/install-kafka.sh)")
    config = work / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{CLIENT_USERS["admin"]}";\n'
    )
    command = [sys.executable, "-m", "stock_kafka", "--kafka-version", version, "tool"]
    connection = ["--bootstrap-server", broker.sasl_bootstrap, "--command-config", str(config)]
    return subprocess.run(
        [*command, simple_name, *connection, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def scram_login(bootstrap: str, mechanism: str, user: str, password: str) -> bool:
    """Whether librdkafka logs in with SCRAM and reads the cluster's metadata."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    client = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }
    )
    try:
        return bool(client.list_topics(timeout=8).brokers)
    except KafkaException:
        return False


def kafka_python_login(bootstrap: str, mechanism: str, user: str, password: str) -> bool:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        client = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username=user,
            sasl_plain_password=password,
            request_timeout_ms=10_000,
        )
    except KafkaError:
        return False
    try:
        return bool(client.describe_cluster()["brokers"])
    finally:
        client.close()


def eventually(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout} s")


def test_kafka_configs_sets_scram_users_that_log_in_to_the_broker_and_the_control_plane(
    setup: tuple[KafkaBroker, ControlPlane], tmp_path: Path
) -> None:
    broker, plane = setup
    users = "--entity-type", "users", "--entity-name"
    # Two mechanisms of one user in one request are DUPLICATE_RESOURCE, as Kafka's controller
    # answers them (ScramControlManager): one --add-config per mechanism.
    twice = tool(
        broker,
        tmp_path,
        "ConfigCommand",
        "--alter",
        *users,
        "alice",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-256],SCRAM-SHA-512=[password=alice-512]",
        version=NEWEST,
    )
    assert twice.returncode != 0 and "DuplicateResourceException" in twice.stdout + twice.stderr
    for config, version in (
        ("SCRAM-SHA-256=[iterations=8192,password=alice-256]", NEWEST),
        ("SCRAM-SHA-512=[password=alice-512]", PINNED),
    ):
        ok(
            tool(
                broker,
                tmp_path,
                "ConfigCommand",
                "--alter",
                *users,
                "alice",
                "--add-config",
                config,
                version=version,
            )
        )
    ok(
        tool(
            broker,
            tmp_path,
            "ConfigCommand",
            "--alter",
            *users,
            "bob",
            "--add-config",
            "SCRAM-SHA-512=[iterations=16384,password=bob-512]",
        )
    )
    forwarded = AuditEvent.objects.filter(api="AlterUserScramCredentials")
    assert [(e.principal, e.outcome, e.forwarding_broker_id) for e in forwarded.order_by("id")] == [
        ("User:admin", "FAILED", NODE_ID),
        *[("User:admin", "SUCCESS", NODE_ID)] * 3,
    ]
    sasl = broker.sasl_bootstrap
    eventually(
        lambda: scram_login(sasl, SCRAM_256, "alice", "alice-256"), 60, "alice at the broker"
    )
    assert scram_login(sasl, SCRAM_512, "alice", "alice-512")
    assert kafka_python_login(sasl, SCRAM_512, "bob", "bob-512")
    assert not scram_login(sasl, SCRAM_256, "alice", "wrong")
    assert not scram_login(sasl, SCRAM_256, "bob", "bob-512")  # bob has no SHA-256 credential
    own = plane.listener.sasl_bootstrap  # the control plane's own Kafka listener
    assert scram_login(own, SCRAM_256, "alice", "alice-256")
    assert scram_login(own, SCRAM_512, "bob", "bob-512")
    assert kafka_python_login(own, SCRAM_512, "alice", "alice-512")
    assert not scram_login(own, SCRAM_512, "alice", "alice-256")

    # --describe: the broker's own answer (DescribeUserScramCredentials) from its image.
    described = ok(tool(broker, tmp_path, "ConfigCommand", "--describe", "--entity-type", "users"))
    assert "SCRAM-SHA-256=iterations=8192" in described, described
    assert "SCRAM-SHA-512=iterations=4096" in described
    assert "SCRAM-SHA-512=iterations=16384" in described
    for secret in ("alice-256", "alice-512", "bob-512"):
        assert secret not in described

    # Deleted: alice's SHA-512 credential no longer logs in anywhere; her SHA-256 one does.
    ok(
        tool(
            broker,
            tmp_path,
            "ConfigCommand",
            "--alter",
            *users,
            "alice",
            "--delete-config",
            "SCRAM-SHA-512",
            version=NEWEST,
        )
    )
    eventually(
        lambda: not scram_login(sasl, SCRAM_512, "alice", "alice-512"), 60, "deleted at the broker"
    )
    assert not scram_login(own, SCRAM_512, "alice", "alice-512")
    assert scram_login(sasl, SCRAM_256, "alice", "alice-256")
    after = ok(tool(broker, tmp_path, "ConfigCommand", "--describe", *users, "alice"))
    assert "SCRAM-SHA-256=iterations=8192" in after and "SCRAM-SHA-512" not in after

    # Deleting it again: Kafka's RESOURCE_NOT_FOUND comes back to the tool.
    again = tool(
        broker,
        tmp_path,
        "ConfigCommand",
        "--alter",
        *users,
        "alice",
        "--delete-config",
        "SCRAM-SHA-512",
    )
    assert again.returncode != 0
    assert "does not exist" in again.stdout + again.stderr


def test_kafka_client_metrics_and_group_configs_through_the_broker(
    setup: tuple[KafkaBroker, ControlPlane], tmp_path: Path
) -> None:
    from controlplane.models import ConfigEntry

    broker, _ = setup
    ok(
        tool(
            broker,
            tmp_path,
            "ClientMetricsCommand",
            "--alter",
            "--name",
            "producers",
            "--metrics",
            "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.",
            "--interval",
            "1000",
            "--match",
            "client_software_name=kafka-python",
        )
    )
    harness.tables_follow_log()  # the broker forwarded it: answered once the log held it
    stored = dict(
        ConfigEntry.objects.filter(resource_type="CLIENT_METRICS").values_list("name", "value")
    )
    assert stored == {
        "interval.ms": "1000",
        "match": "client_software_name=kafka-python",
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.",
    }

    def described() -> str:
        return ok(
            tool(broker, tmp_path, "ClientMetricsCommand", "--describe", "--name", "producers")
        )

    eventually(lambda: "interval.ms=1000" in described(), 60, "the broker describes it")
    listed = ok(tool(broker, tmp_path, "ClientMetricsCommand", "--list", version=NEWEST))
    assert "producers" in listed
    refused = tool(
        broker,
        tmp_path,
        "ClientMetricsCommand",
        "--alter",
        "--name",
        "producers",
        "--interval",
        "50",
    )
    assert refused.returncode != 0 and "interval must be between 100 and 3600000" in (
        refused.stdout + refused.stderr
    )
    # kafka-configs speaks of the same subscription.
    ok(
        tool(
            broker,
            tmp_path,
            "ConfigCommand",
            "--alter",
            "--entity-type",
            "client-metrics",
            "--entity-name",
            "producers",
            "--add-config",
            "interval.ms=2000",
            version=NEWEST,
        )
    )
    ok(tool(broker, tmp_path, "ClientMetricsCommand", "--delete", "--name", "producers"))
    harness.tables_follow_log()
    assert not ConfigEntry.objects.filter(resource_type="CLIENT_METRICS").exists()

    groups = "--entity-type", "groups", "--entity-name", "orders-readers"
    ok(
        tool(
            broker,
            tmp_path,
            "ConfigCommand",
            "--alter",
            *groups,
            "--add-config",
            "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000",
        )
    )
    eventually(
        lambda: (
            "consumer.session.timeout.ms=50000"
            in ok(tool(broker, tmp_path, "ConfigCommand", "--describe", *groups, version=NEWEST))
        ),
        60,
        "the broker describes the group's configs",
    )
    invalid = tool(
        broker,
        tmp_path,
        "ConfigCommand",
        "--alter",
        *groups,
        "--add-config",
        "consumer.session.timeout.ms=5000",
    )
    assert invalid.returncode != 0
    assert "group.consumer.min.session.timeout.ms" in invalid.stdout + invalid.stderr
    ok(
        tool(
            broker,
            tmp_path,
            "ConfigCommand",
            "--alter",
            *groups,
            "--delete-config",
            "consumer.session.timeout.ms,consumer.heartbeat.interval.ms",
            version=NEWEST,
        )
    )
    harness.tables_follow_log()
    assert not ConfigEntry.objects.filter(resource_type="GROUP").exists()
    forwarded = AuditEvent.objects.filter(
        api="IncrementalAlterConfigs", forwarding_broker_id=NODE_ID
    )
    kinds = {r["resource_type"] for e in forwarded for r in e.resources}
    assert {"CLIENT_METRICS", "GROUP"} <= kinds
