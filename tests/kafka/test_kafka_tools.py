"""Kafka's own tools, each as an operator runs it, through stock brokers under this control plane
(and on its controller listener, `--bootstrap-controller`, where the tool offers it), with the
tools of the pinned release and of the newest (docs/reference/kafka-tools.md lists what each
does here).

One cluster of three brokers for the module (the release `KAFKA_VERSION` names, the pinned one
by default); every tool runs as the `admin` user of a broker's SASL client listener, whom the
brokers forward as User:admin (a super user of the control plane), or with the admin's token on
the controller listener."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stock_kafka import jars
from stock_kafka.broker import KafkaBroker
from tests.kafka import harness, tools
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import (
    ControlPlane,
    broker_row,
    broker_under,
    module_database,
    tables_follow_log,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_IDS = (1, 2, 3)
CLIENT_USERS = {"admin": "admin-secret"}
TOOL_VERSIONS = tools.versions(["4.4.0"])
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "offsets.topic.replication.factor": "2",
    "transaction.state.log.replication.factor": "2",
    "transaction.state.log.min.isr": "1",
    # Kafka's own authorizer on the brokers, reading the ACLs from this controller's log: a
    # broker handles ACL requests only with one (SecurityDisabledException otherwise).
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",  # ANONYMOUS: the brokers' PLAINTEXT listener
}
# What a tool's failure must never say: the control plane never answers so.
UNKNOWN = ("UnknownServerException", "UNKNOWN_SERVER_ERROR", "unexpected server error")


@dataclasses.dataclass
class Cluster:
    plane: ControlPlane
    brokers: list[KafkaBroker]
    client_config: Path
    controller_config: Path

    @property
    def bootstrap(self) -> str:
        return ",".join(b.sasl_bootstrap for b in self.brokers if b.running)

    def via_broker(self, config_option: str = "--command-config") -> list[str]:
        return ["--bootstrap-server", self.bootstrap, config_option, str(self.client_config)]

    def via_controller(self, config_option: str = "--command-config") -> list[str]:
        return [
            "--bootstrap-controller",
            self.plane.controller,
            config_option,
            str(self.controller_config),
        ]


def config_option(release: str, old: str) -> str:
    """The admin client's properties option: `old` (`--admin.config`, `--config`) in a tool of
    4.1, `--command-config` from 4.2 on (the old one deprecated)."""
    return old if jars.version_tuple(release) < (4, 2, 0) else "--command-config"


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The brokers live through the module (module_db flushes at its end)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(
        django_db_blocker,
        CP_BROKER_SESSION_TIMEOUT_MS=6000,
        **harness.token_key_settings(),  # delegation tokens: the same key on every node
    ):
        yield


@pytest.fixture(scope="module")
def cluster(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    need_kafka_jars()
    work = tmp_path_factory.mktemp("kafka-tools")
    principals = {node: f"kafka-broker-{node}" for node in NODE_IDS}
    with harness.control_plane(list(principals.values())) as plane:
        brokers = [
            broker_under(
                plane,
                node,
                principals[node],
                work / f"broker-{node}",
                {**BROKER_PROPERTIES, **harness.broker_token_key()},
                client_users=CLIENT_USERS,
            )
            for node in NODE_IDS
        ]
        try:
            for broker in brokers:
                broker.start()
            harness.wait(brokers, lambda: all(unfenced(n) for n in NODE_IDS), 180, "unfenced")
            yield Cluster(
                plane,
                brokers,
                tools.sasl_config(work / "client.properties", "admin", "admin-secret"),
                tools.sasl_config(work / "controller.properties", "admin", plane.tokens["admin"]),
            )
        finally:
            for broker in brokers:
                broker.stop(timeout=20)


@pytest.fixture(params=TOOL_VERSIONS)
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def unfenced(node_id: int) -> bool:
    row = broker_row(node_id)
    return row is not None and not row.fenced


def run(script: str, *args: str, release: str, ok: bool = True) -> tools.Ran:
    ran = tools.run(script, *args, version=release)
    assert not any(word in ran.output for word in UNKNOWN), ran.output[-3000:]
    return ran.ok() if ok else ran


def topic_for(release: str, what: str) -> str:
    return f"tools-{what}-{release.replace('.', '-')}"


def eventually(check: Any, timeout: float = 60, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        last = check()
        if last or time.monotonic() > deadline:
            return last
        time.sleep(every)


def create_topic(cluster: Cluster, release: str, name: str, partitions: int = 3) -> None:
    run(
        "kafka-topics",
        *cluster.via_broker(),
        "--create",
        "--topic",
        name,
        "--partitions",
        str(partitions),
        "--replication-factor",
        "2",
        "--config",
        "retention.ms=3600000",
        release=release,
    )


# --- kafka-topics ------------------------------------------------------------------------------


def test_kafka_topics(cluster: Cluster, release: str) -> None:
    name = topic_for(release, "topics")
    create_topic(cluster, release, name)
    listed = run("kafka-topics", *cluster.via_broker(), "--list", release=release).stdout
    assert name in listed.split()
    # The describe asks for the moves in progress too (ListPartitionReassignments, forwarded).
    described = run(
        "kafka-topics", *cluster.via_broker(), "--describe", "--topic", name, release=release
    ).stdout
    rows = re.findall(
        r"Partition: (\d+)\s+Leader: (\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]+)", described
    )
    assert len(rows) == 3 and all(int(leader) in NODE_IDS for _, leader, _, _ in rows), described
    assert "retention.ms=3600000" in described
    run(
        "kafka-topics",
        *cluster.via_broker(),
        "--alter",
        "--topic",
        name,
        "--partitions",
        "4",
        release=release,
    )
    widened = run(
        "kafka-topics", *cluster.via_broker(), "--describe", "--topic", name, release=release
    ).stdout
    assert "PartitionCount: 4" in widened, widened
    run("kafka-topics", *cluster.via_broker(), "--delete", "--topic", name, release=release)

    def gone() -> bool:
        out = run("kafka-topics", *cluster.via_broker(), "--list", release=release).stdout
        return name not in out.split()

    assert eventually(gone), "the deleted topic is still listed"


# --- kafka-configs -----------------------------------------------------------------------------


def configs(cluster: Cluster, release: str, *args: str, door: str = "broker") -> str:
    where = cluster.via_controller() if door == "controller" else cluster.via_broker()
    return run("kafka-configs", *where, *args, release=release).stdout


def test_kafka_configs_topics_brokers_and_quotas(cluster: Cluster, release: str) -> None:
    name = topic_for(release, "configs")
    create_topic(cluster, release, name)
    topic = ("--entity-type", "topics", "--entity-name", name)
    configs(cluster, release, *topic, "--alter", "--add-config", "retention.ms=7200000")
    assert "retention.ms=7200000" in configs(cluster, release, *topic, "--describe")
    configs(cluster, release, *topic, "--alter", "--delete-config", "retention.ms")
    assert "retention.ms=7200000" not in configs(cluster, release, *topic, "--describe")

    # One broker's configs through a broker (with --bootstrap-controller an entity name is a
    # controller's node id, as in Kafka), the cluster default through both doors.
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    change = "log.cleaner.delete.retention.ms=3600000"
    configs(cluster, release, *broker, "--alter", "--add-config", change)
    described = configs(cluster, release, *broker, "--describe")
    assert change in described, described
    for door in ("broker", "controller"):
        default = ("--entity-type", "brokers", "--entity-default")
        configs(
            cluster,
            release,
            *default,
            "--alter",
            "--add-config",
            "log.retention.ms=86400000",
            door=door,
        )
        assert "log.retention.ms=86400000" in configs(
            cluster, release, *default, "--describe", door=door
        )

    clients = ("--entity-type", "clients", "--entity-name", f"client-{release}")
    configs(cluster, release, *clients, "--alter", "--add-config", "producer_byte_rate=1048576")
    assert "producer_byte_rate=1048576" in configs(cluster, release, *clients, "--describe")
    users = ("--entity-type", "users", "--entity-name", "alice")
    configs(cluster, release, *users, "--alter", "--add-config", "consumer_byte_rate=2097152")
    assert "consumer_byte_rate=2097152" in configs(cluster, release, *users, "--describe")


# --- kafka-configs for SCRAM users, client-metrics and groups; kafka-client-metrics ------------


def described_eventually(describe: Any, wanted: str, timeout: float = 60) -> str:
    """A broker answers these descriptions from its own copy of the log: the change shows once
    it has read the record."""
    deadline = time.monotonic() + timeout
    while wanted not in (out := describe()) and time.monotonic() < deadline:
        time.sleep(1)
    assert wanted in out, out
    return str(out)


def test_kafka_configs_scram_users(cluster: Cluster, release: str) -> None:
    """AlterUserScramCredentials forwarded by a broker; DescribeUserScramCredentials answered by
    the broker from the credentials it read from the log; nothing secret in either answer."""
    users = ("--entity-type", "users", "--entity-name", topic_for(release, "scram"))
    sha256 = "SCRAM-SHA-256=[iterations=8192,password=scram-secret-256]"
    configs(cluster, release, *users, "--alter", "--add-config", sha256)
    configs(cluster, release, *users, "--alter", "--add-config", "SCRAM-SHA-512=[password=p512]")

    def describe() -> str:
        return configs(cluster, release, *users, "--describe")

    shown = described_eventually(describe, "SCRAM-SHA-512=iterations=4096")
    assert "SCRAM-SHA-256=iterations=8192" in shown, shown
    assert "scram-secret-256" not in shown and "p512" not in shown
    configs(cluster, release, *users, "--alter", "--delete-config", "SCRAM-SHA-512")
    assert eventually(lambda: "SCRAM-SHA-512" not in describe(), 60), describe()
    again = run(
        "kafka-configs",
        *cluster.via_broker(),
        *users,
        "--alter",
        "--delete-config",
        "SCRAM-SHA-512",
        release=release,
        ok=False,
    )
    assert again.returncode != 0 and "does not exist" in again.output, again.output


def test_kafka_client_metrics_and_client_metrics_configs(cluster: Cluster, release: str) -> None:
    name = topic_for(release, "metrics")
    client_metrics = ("kafka-client-metrics", *cluster.via_broker())
    run(
        *client_metrics,
        "--alter",
        "--name",
        name,
        "--metrics",
        "org.apache.kafka.producer.",
        "--interval",
        "60000",
        release=release,
    )

    def describe() -> str:
        return run(*client_metrics, "--describe", "--name", name, release=release).stdout

    assert "org.apache.kafka.producer." in described_eventually(describe, "interval.ms=60000")
    # kafka-configs speaks of the same subscription.
    entity = ("--entity-type", "client-metrics", "--entity-name", name)
    configs(cluster, release, *entity, "--alter", "--add-config", "interval.ms=30000")
    described_eventually(lambda: configs(cluster, release, *entity, "--describe"), "30000")
    refused = run(
        *client_metrics, "--alter", "--name", name, "--interval", "50", release=release, ok=False
    )
    assert refused.returncode != 0
    assert re.search(r"InvalidConfigurationException|must be between", refused.output), (
        refused.output
    )
    run(*client_metrics, "--delete", "--name", name, release=release)

    def still_described() -> bool:
        ran = run(*client_metrics, "--describe", "--name", name, release=release, ok=False)
        return "interval.ms" in ran.stdout

    assert eventually(lambda: not still_described(), 60), "still described after --delete"


def test_kafka_configs_groups(cluster: Cluster, release: str) -> None:
    groups = ("--entity-type", "groups", "--entity-name", topic_for(release, "group"))
    configs(
        cluster, release, *groups, "--alter", "--add-config", "consumer.session.timeout.ms=50000"
    )

    describer = release
    if older_than(jars.chosen_version(), (4, 1)) and release.startswith("4.1."):
        # 4.1's tool asks the broker itself for ListConfigResources v1 (groups among them); a
        # 4.0 broker serves v0 alone (client metrics): Kafka's own refusal, whatever controller.
        # 4.4's tool describes them on a 4.0 broker.
        refused = run(
            "kafka-configs", *cluster.via_broker(), *groups, "--describe", release=release, ok=False
        )
        assert "The v0 ListConfigResources only supports CLIENT_METRICS" in refused.output
        describer = TOOL_VERSIONS[-1]
        assert not older_than(describer, (4, 4)), TOOL_VERSIONS

    def describe() -> str:
        return configs(cluster, describer, *groups, "--describe")

    described_eventually(describe, "consumer.session.timeout.ms=50000")
    invalid = run(
        "kafka-configs",
        *cluster.via_broker(),
        *groups,
        "--alter",
        "--add-config",
        "consumer.session.timeout.ms=5000",
        release=release,
        ok=False,
    )
    assert invalid.returncode != 0
    assert re.search(r"InvalidConfigurationException|min.session.timeout", invalid.output), (
        invalid.output
    )
    configs(cluster, release, *groups, "--alter", "--delete-config", "consumer.session.timeout.ms")
    assert eventually(lambda: "consumer.session.timeout.ms=50000" not in describe(), 60)


# --- kafka-reassign-partitions (tests/kafka/test_real_reassignment.py moves replicas in depth) --


def reassign(cluster: Cluster, release: str, *args: str) -> str:
    return run("kafka-reassign-partitions", *cluster.via_broker(), *args, release=release).stdout


def test_kafka_reassign_partitions(cluster: Cluster, release: str, tmp_path: Path) -> None:
    """One partition moved from brokers 1,2 to 3,1 through a broker (AlterPartitionReassignments
    forwarded), `--verify` until the move is complete, `--generate` proposing a plan, and
    `--list` showing no move once it is done (ListPartitionReassignments)."""
    name = topic_for(release, "reassign")
    run(
        "kafka-topics",
        *cluster.via_broker(),
        "--create",
        "--topic",
        name,
        "--replica-assignment",
        "1:2",
        release=release,
    )
    plan = tmp_path / "plan.json"
    move = {"topic": name, "partition": 0, "replicas": [3, 1]}
    plan.write_text(json.dumps({"version": 1, "partitions": [move]}))
    started = reassign(cluster, release, "--reassignment-json-file", str(plan), "--execute")
    assert "Successfully started partition reassignment" in started, started

    def completed() -> bool:
        verified = reassign(cluster, release, "--reassignment-json-file", str(plan), "--verify")
        return f"Reassignment of partition {name}-0 is completed" in verified

    assert eventually(completed, 120, 2), "the move never completed"
    described = run(
        "kafka-topics", *cluster.via_broker(), "--describe", "--topic", name, release=release
    ).stdout
    assert re.search(r"Partition: 0\s+Leader: \d+\s+Replicas: 3,1\s", described), described
    assert "No partition reassignments found" in reassign(cluster, release, "--list")
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": name}]}))
    proposed = reassign(
        cluster,
        release,
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2",
        "--generate",
    )
    assert "Proposed partition reassignment configuration" in proposed, proposed
    assert '"replicas":[3,1]' in proposed, proposed  # the current assignment, as it printed


# --- kafka-acls, kafka-leader-election -------------------------------------------------------


def test_kafka_acls(cluster: Cluster, release: str) -> None:
    """Added and removed through a broker (forwarded) and on the controller listener; a broker
    lists them from its own copy of the log (its StandardAuthorizer's), so a change shows there
    once it has read the record."""
    for door in (cluster.via_broker(), cluster.via_controller()):
        topic = topic_for(release, f"acl-{door[0][2:8]}")
        acl = ("--allow-principal", "User:alice", "--operation", "Read", "--topic", topic)

        def listed(door: list[str] = door, topic: str = topic) -> str:
            return run("kafka-acls", *door, "--list", "--topic", topic, release=release).stdout

        run("kafka-acls", *door, "--add", *acl, release=release)
        shown = eventually(lambda: "principal=User:alice" in listed(), 30)
        assert shown, listed()
        assert "operation=READ" in listed()
        run("kafka-acls", *door, "--remove", "--force", *acl, release=release)
        assert eventually(lambda: "User:alice" not in listed(), 30), listed()


def test_kafka_leader_election(cluster: Cluster, release: str) -> None:
    name = topic_for(release, "election")
    create_topic(cluster, release, name)
    eventually(lambda: leaders_of(name), 60)
    out = run(
        "kafka-leader-election",
        *cluster.via_broker(config_option(release, "--admin.config")),
        "--election-type",
        "PREFERRED",
        "--topic",
        name,
        "--partition",
        "0",
        release=release,
    ).output
    assert (
        "Successfully completed leader election" in out or "Valid replica already elected" in out
    ), out


def leaders_of(topic: str) -> dict[int, int]:
    from replicas.models import Partition

    tables_follow_log()
    return dict(
        Partition.objects.filter(topic__name=topic, leader__gte=0).values_list(
            "partition_index", "leader"
        )
    )


# --- kafka-features, kafka-metadata-quorum, kafka-cluster ------------------------------------


def test_kafka_features(cluster: Cluster, release: str) -> None:
    for door in (cluster.via_broker(), cluster.via_controller()):
        out = run("kafka-features", *door, "describe", release=release).stdout
        levels = dict(re.findall(r"Feature: (\S+)\s.*FinalizedVersionLevel: (\S+)", out))
        assert levels["metadata.version"] == "4.0-IV3", out
        dry = run(
            "kafka-features",
            *door,
            "upgrade",
            "--feature",
            "group.version=1",
            "--dry-run",
            release=release,
        ).stdout
        assert "group.version can be upgraded to 1" in dry, dry
    refused = run(
        "kafka-features",
        *cluster.via_broker(),
        "downgrade",
        "--feature",
        "metadata.version=7",
        release=release,
        ok=False,
    )
    assert refused.returncode != 0 and "might delete metadata" in refused.output, refused.output


def test_kafka_metadata_quorum(cluster: Cluster, release: str) -> None:
    for door in (cluster.via_broker(), cluster.via_controller()):
        status = run("kafka-metadata-quorum", *door, "describe", "--status", release=release)
        fields = dict(re.findall(r"^(\w+):\s+(.*)$", status.stdout, re.M))
        assert fields["LeaderId"] == "3000", status.stdout
        observers = {o["id"] for o in json.loads(fields["CurrentObservers"])}
        assert set(NODE_IDS) <= observers, status.stdout
        replication = run(
            "kafka-metadata-quorum", *door, "describe", "--replication", release=release
        ).stdout
        assert re.search(r"^3000\s.*Leader", replication, re.M), replication


def test_kafka_cluster_id(cluster: Cluster, release: str) -> None:
    option = config_option(release, "--config")
    for door in (cluster.via_broker(option), cluster.via_controller(option)):
        out = run("kafka-cluster", "cluster-id", *door, release=release).stdout
        assert f"Cluster ID: {cluster.plane.cluster_id}" in out, out


# --- kafka-delegation-tokens, kafka-log-dirs, kafka-broker-api-versions ---------------------


TOKEN_COLUMNS = ("hmac", "owner", "requester", "renewers", "issued", "expires", "max")


def token_row(printed: str, token_id: str) -> dict[str, str]:
    """The tool's row of a token, after its id: TOKEN_COLUMNS (the HMAC in base64, the dates
    to the minute); empty when the tool printed none."""
    row = re.search(
        rf"^{re.escape(token_id)}\s+(\S+)\s+(\S+)\s+(\S+)\s+(\[.*?\])\s+(\S+)\s+(\S+)\s+(\S+)",
        printed,
        re.M,
    )
    return dict(zip(TOKEN_COLUMNS, row.groups(), strict=True)) if row else {}


def test_kafka_delegation_tokens(cluster: Cluster, release: str) -> None:
    """A token's life through a stock broker: --create is forwarded to this controller, which
    writes Kafka's DelegationTokenRecord; every broker replays it into its own token cache and
    answers --describe from there, with the HMAC it signs with its own key (the same as every
    node's); --renew writes it again with the new expiry; --expire writes
    RemoveDelegationTokenRecord and the brokers drop it."""
    created = run(
        "kafka-delegation-tokens",
        *cluster.via_broker(),
        "--create",
        "--max-life-time-period",
        "-1",
        "--renewer-principal",
        "User:alice",
        release=release,
    ).stdout
    token_id = re.search(r"^([0-9a-f-]{36})\s", created, re.M)
    assert token_id, created
    issued = token_row(created, token_id[1])
    assert issued, created

    def described(*owners: str) -> str:
        return run(
            "kafka-delegation-tokens",
            *cluster.via_broker(),
            "--describe",
            *(arg for owner in owners for arg in ("--owner-principal", owner)),
            release=release,
        ).stdout

    # The tool without --owner-principal sends an empty owners list, which a Kafka broker
    # answers with no token (KafkaApis: ownersListEmpty); with one it lists the tokens that
    # principal owns or renews.
    def listed() -> dict[str, str]:
        return token_row(described("User:admin"), token_id[1])

    assert eventually(listed, 60) == {
        **issued,
        "owner": "User:admin",
        "requester": "User:admin",
        "renewers": "[User:alice]",
    }
    assert token_id[1] in described("User:alice")  # a renewer's tokens
    assert "Total number of tokens : 0" in described()

    # Renewed for an hour (from a day): the brokers replay the new DelegationTokenRecord.
    renewed = run(
        "kafka-delegation-tokens",
        *cluster.via_broker(),
        "--renew",
        "--hmac",
        issued["hmac"],
        "--renew-time-period",
        "3600000",
        release=release,
    ).stdout
    expiry = re.search(r"New expiry date : (\S+)", renewed)
    assert expiry and expiry[1] != issued["expires"], renewed
    expires = expiry[1]
    assert eventually(lambda: listed().get("expires") == expires, 60), described("User:admin")

    run(
        "kafka-delegation-tokens",
        *cluster.via_broker(),
        "--expire",
        "--hmac",
        issued["hmac"],
        "--expiry-time-period",
        "-1",
        release=release,
    )
    assert eventually(lambda: not listed(), 60), described("User:admin")


def test_kafka_log_dirs(cluster: Cluster, release: str) -> None:
    out = run(
        "kafka-log-dirs",
        *cluster.via_broker(),
        "--describe",
        "--broker-list",
        "1,2",
        release=release,
    ).stdout
    described = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert {b["broker"] for b in described["brokers"]} == {1, 2}
    assert all(b["logDirs"] and not b["logDirs"][0]["error"] for b in described["brokers"])


def test_kafka_broker_api_versions(cluster: Cluster, release: str) -> None:
    out = run("kafka-broker-api-versions", *cluster.via_broker(), release=release).stdout
    for node in NODE_IDS:
        assert re.search(rf"\(id: {node} rack: ", out), out[:3000]
    # The forwarded APIs the controller serves are usable through every broker (a broker that
    # has not yet asked its controller offers its own versions of every forwarded API: one the
    # controller does not serve is then answered UNSUPPORTED_VERSION inside the Envelope).
    assert re.search(r"UpdateFeatures\(57\): 0 to 2 \[usable: 2\]", out), out[:3000]


# --- kafka-consumer-groups, kafka-transactions ------------------------------------------------


def test_kafka_consumer_groups(cluster: Cluster, release: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    name, group = topic_for(release, "groups"), f"readers-{release}"
    create_topic(cluster, release, name)
    plain = ",".join(b.bootstrap for b in cluster.brokers)
    producer = KafkaProducer(bootstrap_servers=plain, acks="all")
    for index in range(20):
        producer.send(name, f"m-{index}".encode())
    producer.flush(timeout=60)
    producer.close()
    consumer = KafkaConsumer(
        name,
        bootstrap_servers=plain,
        group_id=group,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15000,
    )
    read = sum(1 for _ in zip(range(20), consumer, strict=False))
    consumer.commit()
    consumer.close()
    assert read == 20
    groups = run("kafka-consumer-groups", *cluster.via_broker(), "--list", release=release)
    assert group in groups.stdout.split()
    described = run(
        "kafka-consumer-groups",
        *cluster.via_broker(),
        "--describe",
        "--group",
        group,
        release=release,
    ).stdout
    assert name in described and re.search(rf"{group}\s+{name}\s+\d+\s+\d+\s+\d+\s+0\b", described)
    reset = run(
        "kafka-consumer-groups",
        *cluster.via_broker(),
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        name,
        "--to-earliest",
        "--execute",
        release=release,
    ).stdout
    assert re.search(rf"{group}\s+{name}\s+\d+\s+0\b", reset), reset


def test_kafka_transactions(cluster: Cluster, release: str) -> None:
    from confluent_kafka import Producer

    name, transactional_id = topic_for(release, "txn"), f"tools-txn-{release}"
    create_topic(cluster, release, name, partitions=1)
    producer = Producer(
        {
            "bootstrap.servers": ",".join(b.bootstrap for b in cluster.brokers),
            "transactional.id": transactional_id,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(name, b"in-a-transaction")
    producer.commit_transaction(60)
    listed = run("kafka-transactions", *cluster.via_broker(), "list", release=release).stdout
    assert transactional_id in listed, listed
    described = run(
        "kafka-transactions",
        *cluster.via_broker(),
        "describe",
        "--transactional-id",
        transactional_id,
        release=release,
    ).stdout
    assert transactional_id in described and "CompleteCommit" in described, described
    producers = run(
        "kafka-transactions",
        *cluster.via_broker(),
        "describe-producers",
        "--topic",
        name,
        "--partition",
        "0",
        release=release,
    ).stdout
    assert re.search(r"^\d+\s+\d+\s+", producers, re.M), producers


# --- kafka-dump-log, kafka-storage -----------------------------------------------------------


def test_kafka_dump_log(cluster: Cluster, release: str) -> None:
    segment = next((cluster.brokers[0].data_dir / "__cluster_metadata-0").glob("*.log"))
    out = run(
        "kafka-dump-log", "--cluster-metadata-decoder", "--files", str(segment), release=release
    ).output
    assert "REGISTER_BROKER_RECORD" in out and "FEATURE_LEVEL_RECORD" in out
    assert "isvalid: true" in out and "isvalid: false" not in out and "Exception" not in out


def test_kafka_storage(cluster: Cluster, release: str) -> None:
    broker = cluster.brokers[0]
    info = run("kafka-storage", "info", "--config", str(broker.properties_path), release=release)
    assert f"cluster.id={cluster.plane.cluster_id}" in info.stdout.replace(" ", ""), info.stdout
    uuid = run("kafka-storage", "random-uuid", release=release).stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", uuid)


# --- kafka-cluster unregister (last: it takes a broker away) ---------------------------------


def test_z_kafka_cluster_unregister(cluster: Cluster) -> None:
    """A stopped broker unregistered with each release's tool: through a broker, then on the
    controller listener (the broker started again between, registering afresh)."""
    gone = cluster.brokers[-1]
    for release, door in zip(
        TOOL_VERSIONS, (cluster.via_broker, cluster.via_controller), strict=False
    ):
        if not gone.running:
            gone.start()
        harness.wait(cluster.brokers, lambda: unfenced(gone.node_id), 180, "registered again")
        gone.stop(timeout=60)
        where = door(config_option(release, "--config"))
        run("kafka-cluster", "unregister", *where, "--id", str(gone.node_id), release=release)
        assert eventually(lambda: broker_row(gone.node_id) is None, 30)
    assert jars.pinned_version() in TOOL_VERSIONS


def older_than(release: str, version: tuple[int, int]) -> bool:
    major, minor = (int(part) for part in release.split(".")[:2])
    return (major, minor) < version
