"""Three stock Apache Kafka 4.1 brokers (the pinned jars, unmodified) under this control plane
serve producers and a consumer group, and the controller's decisions drive them through a kill
-9, a restart and a controlled shutdown (issue 36, points 1 and 2).

One control plane and one cluster of three for the module (tests.kafka.harness). The JVMs share
two cores with everything else: small heaps, a 4 s broker session, 500 ms heartbeats, a 5 s
`replica.lag.time.max.ms` (so an ISR shrinks within the test), a few hundred messages."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.controller.records import UNASSIGNED_DIRECTORY
from devtools.kafka_clients import Producing, directory_ids
from stock_kafka import jars as kafka_jars
from stock_kafka.broker import KafkaBroker
from tests.conftest import Api, listener_client_class, set_config
from tests.kafka import harness
from tests.kafka.conftest import need_kafka_jars
from tests.kafka.harness import (
    ControlPlane,
    audited_apis,
    broker_row,
    broker_under,
    control_plane,
    module_database,
    tables_follow_log,
)
from tests.ui.conftest import ui_login

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

NODE_IDS = (1, 2, 3)
SESSION_TIMEOUT_MS = 4000
TOPIC = "orders"
PARTITIONS = 6
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    # Three brokers: the internal topics as a production cluster has them.
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "min.insync.replicas": "2",
}


CLIENT_USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@dataclasses.dataclass
class Cluster:
    plane: ControlPlane
    brokers: dict[int, KafkaBroker]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def running(self) -> list[KafkaBroker]:
        return [b for b in self.brokers.values() if b.running]

    def wait(self, predicate: Any, timeout: float, what: str) -> Any:
        return harness.wait(
            list(self.brokers.values()), predicate, timeout, what, running=self.running()
        )


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    """One controller for the module: reset at its start and end only (tests.kafka.harness)."""
    yield


@pytest.fixture(autouse=True)
def _django_db_marker() -> None:
    """The brokers and their registrations live through the module (no flush per test)."""


@pytest.fixture(scope="module")
def module_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    with module_database(
        django_db_blocker,
        CP_BROKER_SESSION_TIMEOUT_MS=SESSION_TIMEOUT_MS,
        CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS=3,
        **harness.token_key_settings(),  # delegation tokens: the same key on every node
    ):
        yield


@pytest.fixture(scope="module")
def cluster(module_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    need_kafka_jars()
    principals = {node: f"kafka-broker-{node}" for node in NODE_IDS}
    with control_plane(list(principals.values())) as plane:
        brokers = {
            node: broker_under(
                plane,
                node,
                principals[node],
                tmp_path_factory.mktemp(f"kafka-broker-{node}"),
                {**BROKER_PROPERTIES, **harness.broker_token_key()},
                client_users=CLIENT_USERS,  # clients log in to the broker (KIP-590's principals)
                log_dir_count=2,  # KIP-858: they place their replicas; one dir may fail
            )
            for node in NODE_IDS
        }
        try:
            for broker in brokers.values():
                broker.start()
            running = Cluster(plane, brokers)
            running.wait(lambda: all(unfenced(n) for n in NODE_IDS), 180, "three unfenced")
            yield running
        finally:
            for broker in brokers.values():
                broker.stop(timeout=20)


def unfenced(node_id: int) -> bool:
    row = broker_row(node_id)
    return row is not None and not row.fenced and row.state == "UNFENCED"


def partitions(topic: str = TOPIC) -> dict[int, Any]:
    from replicas.models import Partition

    tables_follow_log()
    return {p.partition_index: p for p in Partition.objects.filter(topic__name=topic)}


def leaders_as_the_brokers_see_them(cluster: Cluster, topic: str = TOPIC) -> dict[int, int]:
    """Each partition's leader from a live broker's own Metadata (its image of our log)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.running()[0].bootstrap)
    try:
        (described,) = admin.describe_topics([topic])
    finally:
        admin.close()
    return {p["partition_index"]: p["leader_id"] for p in described["partitions"]}


def ui_isrs(ui: Any) -> list[set[int]]:
    """The ISR of each of the topic's partitions as the UI's partitions page shows it."""
    page = ui.get(f"/ui/partitions/?topic={TOPIC}").content.decode()
    cells = re.findall(r'<td class="mono" data-testid="isr">\s*([\d, ]+)', page)
    return [{int(n) for n in cell.split(",") if n.strip()} for cell in cells]


def consumed(cluster: Cluster, group: str, expected: set[str], timeout: float = 90) -> set[str]:
    """What a consumer group reads of the topic from the beginning, until it has `expected`."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=cluster.running()[0].bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        consumer_timeout_ms=5000,
    )
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not expected <= seen:
            for message in consumer:
                seen.add(message.value.decode())
                if expected <= seen:
                    break
        consumer.commit()
    finally:
        consumer.close()
    return seen


def test_producers_and_a_consumer_group_move_messages_through_the_real_brokers(
    cluster: Cluster,
) -> None:
    from confluent_kafka import Producer

    from controlplane.models import MetadataRecord

    api = Api(listener_client_class()())
    admin = cluster.plane.tokens["admin"]
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": TOPIC,
                    "num_partitions": PARTITIONS,
                    "replication_factor": 3,
                    "configs": [{"name": "min.insync.replicas", "value": "2"}],
                }
            ]
        },
        token=admin,
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    assigned = {i: p.leader for i, p in partitions().items()}
    # Led as the controller assigned it: each broker's own Metadata says the same leaders.
    cluster.wait(lambda: leaders_as_the_brokers_see_them(cluster) == assigned, 60, "the assignment")

    with Producing(cluster.bootstrap, "python", TOPIC) as producing:
        cluster.wait(lambda: len(producing.acknowledged) >= 100, 120, "100 acknowledged")
    assert not producing.errors, producing.errors[:5]
    # The idempotent producer's id came from the controller (AllocateProducerIds).
    blocks = MetadataRecord.objects.filter(record_type="ProducerIdsRecord")
    assert blocks.exists() and {b.principal for b in blocks} <= {
        f"User:kafka-broker-{n}" for n in NODE_IDS
    }

    delivered: list[str] = []
    confluent = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True}
    )
    for number in range(50):
        key = f"confluent-{number:06d}"
        confluent.produce(
            TOPIC,
            key=key,
            value=key,
            on_delivery=lambda error, message: delivered.append(
                message.value().decode() if error is None else f"error {error}"
            ),
        )
    assert confluent.flush(60) == 0
    assert len(delivered) == 50 and not [d for d in delivered if d.startswith("error")]

    expected = producing.acknowledged | set(delivered)
    seen = consumed(cluster, "orders-readers", expected)
    assert expected <= seen, sorted(expected - seen)[:10]
    # The group's offsets live in __consumer_offsets, created through the controller by a
    # broker (its plain CreateTopics on the controller listener).
    created = MetadataRecord.objects.get(record_type="TopicRecord", data__name="__consumer_offsets")
    assert created.principal.startswith("User:kafka-broker-")
    assert "CreateTopics" in audited_apis(created.principal)


def test_kill_9_of_a_leader_then_a_restart(cluster: Cluster) -> None:
    """kill -9 of the broker leading the most partitions: fenced after the session timeout,
    leaders move to live ISR members and it leaves every ISR (as Kafka's handleBrokerFenced),
    shown in the REST API, the health figures and the timeline; the producer goes on and no
    acknowledged message is lost. Restarted: a new incarnation, taken back into every ISR by
    the leaders (AlterPartition), the preferred leaders back (the rebalance)."""
    from timeline.models import TimelineEvent

    api = Api(listener_client_class()())
    admin = cluster.plane.tokens["admin"]
    led = [p.leader for p in partitions().values()]
    victim = cluster.brokers[max(NODE_IDS, key=led.count)]
    incarnation = broker_row(victim.node_id).incarnation_id
    with Producing(cluster.bootstrap, f"kill-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
        cluster.wait(lambda: len(producing.acknowledged) >= 50, 60, "writes before the kill")
        victim.kill()
        killed = time.monotonic()
        cluster.wait(lambda: broker_row(victim.node_id).fenced, 30, "the victim fenced")
        fenced_after = time.monotonic() - killed
        cluster.wait(
            lambda: all(p.leader not in (victim.node_id, -1) for p in partitions().values()),
            30,
            "a live leader for every partition",
        )
        before = len(producing.acknowledged)
        cluster.wait(
            lambda: len(producing.acknowledged) >= before + 50, 90, "writes after the kill"
        )
        # Fenced, it left every ISR.
        cluster.wait(
            lambda: all(victim.node_id not in p.isr for p in partitions().values()),
            60,
            "ISRs without the victim",
        )
    assert fenced_after < SESSION_TIMEOUT_MS / 1000 + 10, fenced_after
    assert not producing.errors, producing.errors[:5]
    status, body = api.get("/api/v1/cluster", token=admin)
    assert status == 200 and body["health"]["under_replicated_partitions"] >= PARTITIONS, body
    status, shrunk = api.get(f"/api/v1/partitions?topic={TOPIC}", token=admin)
    assert status == 200
    assert all(victim.node_id not in p["isr_nodes"] for p in shrunk["results"]), shrunk
    assert TimelineEvent.objects.filter(kind="SESSION_EXPIRED").exists()
    ui = listener_client_class()()
    ui_login(ui, "admin", admin)
    survivors = set(NODE_IDS) - {victim.node_id}
    assert ui_isrs(ui) == [survivors] * PARTITIONS  # the UI's partitions say so too
    seen = consumed(cluster, f"after-kill-{uuid.uuid4().hex[:6]}", producing.acknowledged)
    assert producing.acknowledged <= seen, sorted(producing.acknowledged - seen)[:10]

    victim.start()
    cluster.wait(lambda: unfenced(victim.node_id), 120, "the victim unfenced again")
    assert broker_row(victim.node_id).incarnation_id != incarnation
    cluster.wait(
        lambda: all(len(p.isr) == 3 for p in partitions().values()), 120, "every ISR whole"
    )
    # The leaders took it back with AlterPartition: in the timeline, and the UI says so.
    taken_back = TimelineEvent.objects.filter(kind="ISR_CHANGE", api="AlterPartition")
    assert taken_back.exists()
    timeline = ui.get("/ui/timeline/").content.decode()
    assert "ISR change" in timeline, timeline[:2000]
    assert ui_isrs(ui) == [set(NODE_IDS)] * PARTITIONS
    cluster.wait(
        lambda: all(p.leader == p.replicas[0] for p in partitions().values()),
        60,
        "the preferred leaders back",
    )


def test_controlled_shutdown_moves_leadership_first(cluster: Cluster) -> None:
    """SIGTERM: the broker asks WantShutDown, the controller moves its leadership away while it
    is still up, then tells it ShouldShutDown; the producer sees no error beyond retries."""
    from controlplane.models import MetadataRecord

    led = [p.leader for p in partitions().values()]
    leaving = cluster.brokers[max(NODE_IDS, key=led.count)]
    assert leaving.node_id in led
    start = MetadataRecord.objects.order_by("-offset").values_list("offset", flat=True)[0]
    with Producing(cluster.bootstrap, f"shutdown-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
        cluster.wait(lambda: len(producing.acknowledged) >= 50, 60, "writes before")
        assert leaving.process is not None
        leaving.process.terminate()
        code = leaving.process.wait(timeout=60)
        before = len(producing.acknowledged)
        cluster.wait(lambda: len(producing.acknowledged) >= before + 30, 90, "writes after")
    assert code in (0, 143), harness.with_log([leaving], f"exited {code}")  # 143: SIGTERM
    assert not producing.errors, producing.errors[:5]
    written = list(
        MetadataRecord.objects.filter(offset__gt=start)
        .order_by("offset")
        .values_list("record_type", "data")
    )
    shutting = next(
        i
        for i, (kind, data) in enumerate(written)
        if kind == "BrokerRegistrationChangeRecord"
        and data.get("broker_id") == leaving.node_id
        and data.get("in_controlled_shutdown") == 1
    )
    moved = [
        i
        for i, (kind, data) in enumerate(written)
        if kind == "PartitionChangeRecord" and data.get("leader", -2) not in (-2, leaving.node_id)
    ]
    assert moved and min(moved) >= shutting, written  # moved once it asked, not before
    assert all(p.leader != leaving.node_id for p in partitions().values())
    seen = consumed(cluster, f"after-shutdown-{uuid.uuid4().hex[:6]}", producing.acknowledged)
    assert producing.acknowledged <= seen, sorted(producing.acknowledged - seen)[:10]
    leaving.start()
    cluster.wait(lambda: unfenced(leaving.node_id), 120, "back after the shutdown")


def sasl_admin(broker: KafkaBroker, user: str) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=broker.sasl_bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=user,
        sasl_plain_password=CLIENT_USERS[user],
        client_id=f"{user}-tool",
        request_timeout_ms=20_000,
    )


def signed_hmac(token_id: str) -> str:
    """The token's HMAC as this process's setting signs it (Kafka's createHmac, base64)."""
    import base64

    from django.conf import settings

    from controlplane.controller.tokens.control import compute_hmac

    key = settings.CP_STATIC_BROKER_CONFIGS["delegation.token.secret.key"]
    return base64.b64encode(compute_hmac(key, token_id)).decode()


def delegation_token_command(broker: KafkaBroker, user: str, work: Path) -> str:
    """`kafka-delegation-tokens.sh --create` as `user`, through the broker's SASL listener."""
    config = work / f"{user}.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{CLIENT_USERS[user]}";\n'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "stock_kafka",
            "tool",
            "DelegationTokenCommand",
            "--bootstrap-server",
            broker.sasl_bootstrap,
            "--create",
            "--max-life-time-period",
            "-1",
            "--command-config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_clients_admin_writes_reach_the_controller_through_a_real_broker(
    cluster: Cluster, tmp_path: Path
) -> None:
    """KIP-590 as Kafka ships it: a client logs in to a real broker (SASL/PLAIN on its client
    listener) and sends admin writes; the broker forwards each in an Envelope to this
    controller, which authorizes it as the client's principal and audits it naming the client
    (principal, client id, address) and the forwarding broker (its principal and id).
    CreateDelegationToken comes from Kafka's own tool (no stock Python client sends it)."""
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ConfigResource,
        ConfigResourceType,
        NewTopic,
        ResourcePattern,
        ResourceType,
    )
    from kafka.errors import TopicAuthorizationFailedError

    from audit.models import AuditEvent
    from replicas.models import Topic

    api = Api(listener_client_class()())
    admin = cluster.plane.tokens["admin"]
    allowed = [
        {
            "resource_type": "TOPIC",
            "resource_name": "alice-",
            "pattern_type": "PREFIXED",
            "principal": "User:alice",
            "host": "*",
            "operation": operation,
            "permission_type": "ALLOW",
        }
        for operation in ("CREATE", "ALTER_CONFIGS", "DESCRIBE")
    ]
    status, body = api.post("/api/v1/create-acls", {"creations": allowed}, token=admin)
    assert status == 200 and all(r["error_code"] == 0 for r in body["results"]), body
    via = cluster.running()[0]

    alice = sasl_admin(via, "alice")
    try:
        alice.create_topics([NewTopic("alice-orders", 1, 3)])
        cluster.wait(lambda: Topic.objects.filter(name="alice-orders").exists(), 30, "created")
        alice.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "alice-orders", {"retention.ms": "3600000"})],
            incremental=True,
            raise_on_unknown=False,
        )
        # Not alice's to grant (ALTER on the cluster): refused by this controller, as her.
        granted = alice.create_acls(
            [
                ACL(
                    principal="User:alice",
                    host="*",
                    operation=ACLOperation.READ,
                    permission_type=ACLPermissionType.ALLOW,
                    resource_pattern=ResourcePattern(ResourceType.TOPIC, "alice-orders"),
                )
            ]
        )
    finally:
        alice.close()
    assert not granted["succeeded"] and len(granted["failed"]) == 1, granted
    bob = sasl_admin(via, "bob")
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            bob.create_topics([NewTopic("alice-bobs", 1, 3)])
    finally:
        bob.close()
    assert not Topic.objects.filter(name="alice-bobs").exists()

    # CreateDelegationToken with Kafka's own tool (kafka-delegation-tokens.sh's class): no
    # stock Python client sends it. Tokens need the signing key: every node's setting (this
    # process's, harness.token_key_settings) and every broker's static config, never a record.
    printed = delegation_token_command(via, "alice", tmp_path)
    assert CLIENT_USERS["alice"] not in printed
    from security.models import DelegationToken

    harness.tables_follow_log()  # the broker forwarded it: answered once the log held it
    (token,) = DelegationToken.objects.filter(owner="User:alice")
    assert token.token_id in printed, printed  # its answer came back through the broker
    # The HMAC the broker passed on is the one this process's setting signs.
    assert signed_hmac(token.token_id) in printed, printed

    # Forwarded by whichever broker the client sent it to (a KRaft broker names a random live
    # broker as the controller in Metadata, and admin clients send their writes there).
    forwarded = {
        (e.api, e.principal, e.outcome): e
        for e in AuditEvent.objects.filter(forwarding_principal__startswith="User:kafka-broker-")
    }
    assert {
        ("CreateTopics", "User:alice", "SUCCESS"),
        ("IncrementalAlterConfigs", "User:alice", "SUCCESS"),
        ("CreateTopics", "User:bob", "DENIED"),
        ("CreateAcls", "User:alice", "DENIED"),
        ("CreateDelegationToken", "User:alice", "SUCCESS"),
    } <= set(forwarded), sorted(forwarded)
    created = forwarded[("CreateTopics", "User:alice", "SUCCESS")]
    altered = forwarded[("IncrementalAlterConfigs", "User:alice", "SUCCESS")]
    denied = forwarded[("CreateTopics", "User:bob", "DENIED")]
    refused = forwarded[("CreateAcls", "User:alice", "DENIED")]
    issued = forwarded[("CreateDelegationToken", "User:alice", "SUCCESS")]
    for event in (created, altered, denied, refused, issued):
        assert event.forwarding_principal == f"User:kafka-broker-{event.forwarding_broker_id}"
        assert event.forwarding_broker_id in NODE_IDS and event.client_host == "127.0.0.1"
    assert (created.client_id, denied.client_id) == ("alice-tool", "bob-tool")
    assert created.resources[0]["resource_name"] == "alice-orders"


def test_a_broker_labelled_canary_gets_the_canary_partitions(cluster: Cluster) -> None:
    """KIP-1095 on stock brokers, which send no Pod: the label comes from the controller's
    side, the dynamic per-broker config `broker.pod`, read when the broker next registers (a
    rollout restarts it anyway). The broker takes the config record in its stride; restarted,
    it registers as a canary broker and gets the canary partitions `percent.canary.partition`
    asks for, led there as the brokers' own Metadata says. The rollout guard reads each
    broker's software version from its registration (what its connection's ApiVersions said:
    the jars' 4.1.1)."""
    api = Api(listener_client_class()())
    admin = cluster.plane.tokens["admin"]
    canary = cluster.brokers[3]
    labelled = set_config(api, admin, "BROKER", str(canary.node_id), "broker.pod", "canary-broker")
    assert labelled["error_code"] == 0, labelled
    assert broker_row(canary.node_id).pod == "broker"  # until it registers again
    canary.stop(timeout=60)  # a controlled shutdown, as a rollout does
    canary.start()
    cluster.wait(
        lambda: unfenced(canary.node_id) and broker_row(canary.node_id).pod == "canary-broker",
        120,
        "the broker back as a canary broker",
    )
    assert all(b.running for b in cluster.brokers.values())  # none tripped on the config
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": "canary-orders",
                    "num_partitions": 4,
                    "replication_factor": 1,
                    "configs": [{"name": "percent.canary.partition", "value": "50"}],
                }
            ]
        },
        token=admin,
    )
    created = body["topics"][0]
    assert status == 200 and created["error_code"] == 0, body
    assert created["canary_partitions"] == [0, 2] and created["canary_isolated"], created
    cluster.wait(
        lambda: len(leaders_as_the_brokers_see_them(cluster, "canary-orders")) == 4,
        60,
        "the topic on the brokers",
    )
    led = leaders_as_the_brokers_see_them(cluster, "canary-orders")
    assert led[0] == led[2] == canary.node_id, led
    assert canary.node_id not in (led[1], led[3]), led

    running = kafka_jars.chosen_version()  # the release these brokers run (KAFKA_VERSION)
    status, guard = api.get(f"/api/v1/canary/rollout?version={running}", token=admin)
    assert status == 200 and guard["verdict"] == "COMPLETE", guard
    assert guard["brokers_running_version"] == list(NODE_IDS), guard
    status, guard = api.get("/api/v1/canary/rollout?version=4.2.0", token=admin)
    assert status == 200 and guard["verdict"] == "NOT_STARTED", guard


def metadata_log_in(path: Path) -> bool:
    return (path / "__cluster_metadata-0").is_dir()


def test_a_lost_log_dir_takes_its_replicas_offline_at_once(cluster: Cluster) -> None:
    """KIP-589 as Kafka ships it since KIP-858: a real broker with two log dirs loses one under
    it (the directory moved away: its next checkpoint fails); it reports the dir offline in its
    heartbeat, and the controller moves the leadership of every partition with a replica there
    through AlterReplicaState's state machine, without waiting for the session timeout; the
    producer goes on, the broker stays unfenced, the console shows the dir offline and the
    incident is in the timeline."""
    from timeline.models import TimelineEvent

    # Every replica placed (AssignReplicasToDirs), none left UNASSIGNED.
    cluster.wait(
        lambda: all(
            p.directories and UNASSIGNED_DIRECTORY not in p.directories
            for p in partitions().values()
        ),
        60,
        "every replica placed in a log dir",
    )

    # The dir that may fail is one without the metadata log: a broker whose metadata log dir
    # fails shuts down (Kafka's ReplicaManager), so that is no incident of this kind. Of the
    # brokers, the one leading the most partitions with a replica in such a dir.
    def data_dir_of(broker: KafkaBroker) -> str:
        (dir_id,) = [d for d, path in directory_ids(broker).items() if not metadata_log_in(path)]
        return dir_id

    def placed_of(broker: KafkaBroker) -> dict[int, str]:
        return {i: p.directories[p.replicas.index(broker.node_id)] for i, p in partitions().items()}

    def led_there(broker: KafkaBroker) -> int:
        lost = data_dir_of(broker)
        return sum(
            1
            for i, d in placed_of(broker).items()
            if d == lost and partitions()[i].leader == broker.node_id
        )

    broker = max(cluster.running(), key=led_there)
    lost = data_dir_of(broker)
    placed = placed_of(broker)
    on_lost = sorted(i for i, d in placed.items() if d == lost)
    assert on_lost, placed
    paths = directory_ids(broker)
    assert set(paths) == set(broker_row(broker.node_id).log_dirs)
    with Producing(cluster.bootstrap, f"lost-dir-{uuid.uuid4().hex[:6]}", TOPIC) as producing:
        cluster.wait(lambda: len(producing.acknowledged) >= 50, 60, "writes before")
        paths[lost].rename(paths[lost].with_name(paths[lost].name + ".lost"))
        cluster.wait(
            lambda: lost in broker_row(broker.node_id).offline_log_dirs, 60, "the dir reported"
        )
        cluster.wait(
            lambda: all(
                broker.node_id in partitions()[i].offline_replicas
                and partitions()[i].leader != broker.node_id
                for i in on_lost
            ),
            30,
            "its replicas there offline, their leadership moved",
        )
        before = len(producing.acknowledged)
        cluster.wait(lambda: len(producing.acknowledged) >= before + 30, 90, "writes after")
    assert not producing.errors, producing.errors[:5]
    assert broker.running and not broker_row(broker.node_id).fenced  # no session timeout
    # The replicas in its other dir are untouched.
    for index, dir_id in placed.items():
        if dir_id != lost:
            assert broker.node_id not in partitions()[index].offline_replicas
    api = Api(listener_client_class()())
    status, body = api.get(f"/api/v1/brokers/{broker.node_id}", token=cluster.plane.tokens["admin"])
    assert status == 200 and lost in body["offline_log_dirs"], body
    assert TimelineEvent.objects.filter(kind="LOG_DIR_FAILURE").exists()
    seen = consumed(cluster, f"after-lost-dir-{uuid.uuid4().hex[:6]}", producing.acknowledged)
    assert producing.acknowledged <= seen, sorted(producing.acknowledged - seen)[:10]
