"""The broker lifecycle on the controller listener (issue 35, point 3): BrokerRegistration and
BrokerHeartbeat as a stock Kafka broker sends them, on the same core rules as the REST
internal API; a broker on the wire and one on REST share the cluster."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

import pytest
from kio.schema.allocate_producer_ids.v0 import request as allocate_v0
from kio.schema.alter_partition.v3 import request as alter_v3
from kio.schema.assign_replicas_to_dirs.v0 import request as assign_v0
from kio.schema.broker_heartbeat.v1 import request as heartbeat_v1
from kio.schema.broker_registration.v4 import request as registration_v4
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.errors import ErrorCode

from audit.models import AuditEvent
from brokers.models import Broker
from controlplane.controller.features import BOOTSTRAP_FEATURES
from controlplane.models import MetadataRecord
from controlplane.principals import principal_create
from controlplane.runtime.lease import cluster_get_or_create
from replicas.models import Partition, Topic
from tests.conftest import registration_body
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_server import authenticate, served

pytestmark = pytest.mark.django_db(transaction=True)

STOCK_FEATURES = (  # what a Kafka 4.1 broker declares
    ("metadata.version", 7, 27),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
)


def registration(
    broker_id: int, cluster_id: str, features: tuple[tuple[str, int, int], ...] = STOCK_FEATURES
) -> registration_v4.BrokerRegistrationRequest:
    return registration_v4.BrokerRegistrationRequest(
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=uuid.uuid4(),
        listeners=(
            registration_v4.Listener(
                name="PLAINTEXT", host="127.0.0.1", port=19092 + broker_id, security_protocol=0
            ),
        ),
        features=tuple(
            registration_v4.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
            for n, lo, hi in features
        ),
        rack="r1",
        is_migrating_zk_broker=False,
        log_dirs=(uuid.uuid4(),),
        previous_broker_epoch=-1,
    )


def broker_resource(broker_id: int) -> dict[str, Any]:
    return {"resource_type": "BROKER", "resource_name": str(broker_id), "error_code": 0}


def allocate(broker_id: int, epoch: int) -> allocate_v0.AllocateProducerIdsRequest:
    return allocate_v0.AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=epoch)


def heartbeat(broker_id: int, epoch: int, offset: int) -> heartbeat_v1.BrokerHeartbeatRequest:
    return heartbeat_v1.BrokerHeartbeatRequest(
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=offset,
        want_fence=False,
        want_shut_down=False,
        offline_log_dirs=(),
    )


@pytest.fixture
def broker_client(wire_listener: RunningListener) -> Any:
    token = principal_create(name="kafka-broker", broker=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "kafka-broker", token) == ErrorCode.none
        yield client


def test_a_kafka_broker_registers_heartbeats_and_is_unfenced(broker_client: Any) -> None:
    versions = served(broker_client)
    assert versions[62] == (0, 4) and versions[63] == (0, 2)
    cluster_id = cluster_get_or_create().cluster_id
    registered = broker_client.request(registration(1, cluster_id))
    assert registered.error_code == ErrorCode.none
    epoch = int(registered.broker_epoch)
    record = MetadataRecord.objects.get(offset=epoch)  # Kafka's rule: the record's offset
    assert record.record_type == "RegisterBrokerRecord" and epoch == len(BOOTSTRAP_FEATURES)
    assert record.principal == "User:kafka-broker"
    assert Broker.objects.get(pk=1).fenced

    behind = broker_client.request(heartbeat(1, epoch, -1))  # not published yet: stays fenced
    assert (behind.error_code, behind.is_caught_up, behind.is_fenced) == (
        ErrorCode.none,
        False,
        True,
    )
    caught_up = broker_client.request(heartbeat(1, epoch, epoch))
    assert (caught_up.is_caught_up, caught_up.is_fenced, caught_up.should_shut_down) == (
        True,
        False,
        False,
    )
    assert not Broker.objects.get(pk=1).fenced
    # The audit trail names the broker's writes (the REST door's rule): its registration and
    # the heartbeat that unfenced it, each in the commit of its records; the heartbeat that
    # changed nothing left no row.
    audited = list(
        AuditEvent.objects.order_by("id").values_list(
            "api", "principal", "resources", "first_offset"
        )
    )
    assert audited == [
        ("BrokerRegistration", "User:kafka-broker", [broker_resource(1)], epoch),
        ("BrokerHeartbeat", "User:kafka-broker", [broker_resource(1)], epoch + 1),
    ]

    stale = broker_client.request(heartbeat(1, epoch + 100, epoch))
    assert stale.error_code == ErrorCode.stale_broker_epoch and stale.is_fenced

    # Producer id blocks: 1000 each, never handed out twice, for the current epoch only.
    blocks = [broker_client.request(allocate(1, epoch)) for _ in range(2)]
    assert [(b.error_code, b.producer_id_start, b.producer_id_len) for b in blocks] == [
        (ErrorCode.none, 0, 1000),
        (ErrorCode.none, 1000, 1000),
    ]
    refused = broker_client.request(allocate(1, epoch + 1))
    assert refused.error_code == ErrorCode.stale_broker_epoch and refused.producer_id_start == -1
    assert list(
        MetadataRecord.objects.filter(record_type="ProducerIdsRecord").values_list(
            "data", flat=True
        )
    ) == [
        {"broker_id": 1, "broker_epoch": epoch, "next_producer_id": 1000},
        {"broker_id": 1, "broker_epoch": epoch, "next_producer_id": 2000},
    ]


def test_registration_refusals_are_kafkas(broker_client: Any, api: Any, tokens: Any) -> None:
    cluster_id = cluster_get_or_create().cluster_id
    other = broker_client.request(registration(1, "another-cluster-id"))
    assert other.error_code == ErrorCode.inconsistent_cluster_id
    # A REST broker first: the features are finalized, and the two doors share the cluster.
    status, _ = api.post(
        "/internal/v1/broker-registration", registration_body(5, cluster_id), token=tokens["broker"]
    )
    assert status == 200
    old = tuple((n, lo, 21 if n == "metadata.version" else hi) for n, lo, hi in STOCK_FEATURES)
    too_old = broker_client.request(registration(1, cluster_id, old))
    assert too_old.error_code == ErrorCode.unsupported_version
    assert broker_client.request(registration(1, cluster_id)).error_code == ErrorCode.none
    assert set(Broker.objects.values_list("broker_id", flat=True)) == {1, 5}
    malformed = registration(2, cluster_id)
    bad_port = registration_v4.Listener(name="", host="h", port=1, security_protocol=9)
    malformed = dataclasses.replace(malformed, listeners=(bad_port,))
    refused = broker_client.request(malformed)
    assert refused.error_code == ErrorCode.invalid_request
    assert not Broker.objects.filter(pk=2).exists()


def alter(
    topic_id: uuid.UUID, leader_epoch: int, partition_epoch: int, isr: list[tuple[int, int]]
) -> Any:
    members = tuple(alter_v3.BrokerState(broker_id=b, broker_epoch=e) for b, e in isr)
    partition = alter_v3.PartitionData(
        partition_index=0,
        leader_epoch=leader_epoch,
        new_isr_with_epochs=members,
        leader_recovery_state=0,
        partition_epoch=partition_epoch,
    )
    return alter_v3.TopicData(topic_id=topic_id, partitions=(partition,))


def test_alter_partition_by_topic_id(
    broker_client: Any, api: Any, tokens: Any, register: Any
) -> None:
    epochs = {b: register(b, unfence=True) for b in (1, 2, 3)}
    body = {"topics": [{"name": "wired", "num_partitions": 1, "replication_factor": 3}]}
    status, created = api.post("/api/v1/create-topics", body, token=tokens["admin"])
    assert status == 200 and created["topics"][0]["error_code"] == 0, created
    partition = Partition.objects.get(topic__name="wired", partition_index=0)
    topic_id = uuid.UUID(partition.topic_id)
    leader = partition.leader
    follower = next(b for b in partition.replicas if b != leader)
    shrunk = [(leader, epochs[leader]), (follower, epochs[follower])]
    answer = broker_client.request(
        alter_v3.AlterPartitionRequest(
            broker_id=leader,
            broker_epoch=epochs[leader],
            topics=(
                alter(topic_id, partition.leader_epoch, partition.partition_epoch, shrunk),
                alter(uuid.uuid4(), 0, 0, shrunk),  # a topic id nobody knows
            ),
        )
    )
    assert answer.error_code == ErrorCode.none
    results = {t.topic_id: t.partitions[0] for t in answer.topics}
    done = results[topic_id]
    assert (done.error_code, sorted(done.isr), done.partition_epoch) == (
        ErrorCode.none,
        sorted([leader, follower]),
        partition.partition_epoch + 1,
    )
    assert [p.error_code for t, p in results.items() if t != topic_id] == [
        ErrorCode.unknown_topic_id
    ]
    partition.refresh_from_db()
    assert sorted(partition.isr) == sorted([leader, follower])
    # KIP-903: an ISR member named with an epoch that is not its registration's
    stale = [(leader, epochs[leader]), (follower, epochs[follower] + 1)]
    again = broker_client.request(
        alter_v3.AlterPartitionRequest(
            broker_id=leader,
            broker_epoch=epochs[leader],
            topics=(alter(topic_id, partition.leader_epoch, partition.partition_epoch, stale),),
        )
    )
    assert again.topics[0].partitions[0].error_code == ErrorCode.ineligible_replica
    # What the REST route's serializer refuses (a negative partition index) is refused here too,
    # by its fast path, as INVALID_REQUEST; nothing is applied.
    valid = alter(topic_id, partition.leader_epoch, partition.partition_epoch, shrunk)
    negative = dataclasses.replace(valid.partitions[0], partition_index=-1)
    refused = broker_client.request(
        alter_v3.AlterPartitionRequest(
            broker_id=leader,
            broker_epoch=epochs[leader],
            topics=(dataclasses.replace(valid, partitions=(negative,)),),
        )
    )
    assert refused.error_code == ErrorCode.invalid_request
    partition.refresh_from_db()
    assert sorted(partition.isr) == sorted([leader, follower])


def test_brokers_create_kafkas_internal_topics_on_the_controller_listener(
    broker_client: Any, wire_listener: RunningListener, register: Any
) -> None:
    """A broker's plain CreateTopics of an internal topic (its group coordinator's
    __consumer_offsets) runs on the controller listener; other topics need CREATE as anyone's
    would; and a broker principal's admin writes stay refused on client listeners (KIP-590)."""
    for broker_id in (1, 2, 3):
        register(broker_id, unfence=True)

    def create(client: Any, name: str) -> tuple[str, ErrorCode]:
        topic = create_topics_v7.CreatableTopic(
            name=name, num_partitions=3, replication_factor=3, assignments=(), configs=()
        )
        answer = client.request(
            create_topics_v7.CreateTopicsRequest(
                topics=(topic,), timeout=datetime.timedelta(seconds=10), validate_only=False
            )
        )
        (result,) = answer.topics
        return result.name, ErrorCode(result.error_code)

    assert create(broker_client, "__consumer_offsets") == ("__consumer_offsets", ErrorCode.none)
    assert create(broker_client, "orders") == ("orders", ErrorCode.topic_authorization_failed)
    token = principal_create(name="kafka-broker-on-client-listener", broker=True)
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, "kafka-broker-on-client-listener", token) == ErrorCode.none
        refused = create(client, "__transaction_state")
    assert refused == ("__transaction_state", ErrorCode.cluster_authorization_failed)
    assert Topic.objects.filter(name="__consumer_offsets").exists()
    assert not Topic.objects.filter(name__in=["orders", "__transaction_state"]).exists()


def test_a_broker_id_a_live_incarnation_holds_is_duplicate(broker_client: Any) -> None:
    cluster_id = cluster_get_or_create().cluster_id
    first = broker_client.request(registration(7, cluster_id))
    assert first.error_code == ErrorCode.none
    broker_client.request(heartbeat(7, int(first.broker_epoch), int(first.broker_epoch)))
    again = broker_client.request(registration(7, cluster_id))  # another incarnation id
    assert again.error_code == ErrorCode.duplicate_broker_registration
    assert Broker.objects.get(pk=7).epoch == int(first.broker_epoch)


def assignment(
    broker_id: int, epoch: int, placed: dict[uuid.UUID, list[tuple[uuid.UUID, int]]]
) -> assign_v0.AssignReplicasToDirsRequest:
    return assign_v0.AssignReplicasToDirsRequest(
        broker_id=broker_id,
        broker_epoch=epoch,
        directories=tuple(
            assign_v0.DirectoryData(
                id_=dir_id,
                topics=tuple(
                    assign_v0.TopicData(
                        topic_id=topic_id,
                        partitions=(assign_v0.PartitionData(partition_index=index),),
                    )
                    for topic_id, index in partitions
                ),
            )
            for dir_id, partitions in placed.items()
        ),
    )


def test_a_broker_with_two_log_dirs_places_its_replicas(
    broker_client: Any, api: Any, tokens: Any
) -> None:
    """KIP-858 (issue 35, point 3): a broker registered with several log dirs is told each new
    replica's dir is UNASSIGNED and answers with AssignReplicasToDirs; the controller keeps the
    dir in the partition (its log, its tables, the Kafka twin brokers fetch) and answers per
    partition as Kafka's does. A dir the broker reports offline takes the replica offline."""
    from controlplane.controller.kraft import decode_records
    from controlplane.runtime.kraft_log import kraft_log
    from controlplane.runtime.lease import cluster_read
    from controlplane.runtime.replay import metadata_verify

    cluster_id = cluster_get_or_create().cluster_id
    dirs = (uuid.uuid4(), uuid.uuid4())
    registered = broker_client.request(
        dataclasses.replace(registration(1, cluster_id), log_dirs=dirs)
    )
    epoch = int(registered.broker_epoch)
    assert broker_client.request(heartbeat(1, epoch, epoch)).is_fenced is False
    body = {"topics": [{"name": "two-dirs", "num_partitions": 2, "replication_factor": 1}]}
    status, created = api.post("/api/v1/create-topics", body, token=tokens["admin"])
    assert status == 200 and created["topics"][0]["error_code"] == 0, created
    topic_id = uuid.UUID(Topic.objects.get(name="two-dirs").topic_id)
    before = cluster_read().last_offset

    placed = broker_client.request(
        assignment(1, epoch, {dirs[0]: [(topic_id, 0)], dirs[1]: [(topic_id, 1), (topic_id, 7)]})
    )
    assert placed.error_code == ErrorCode.none
    answers = {
        (d.id_, t.topic_id, p.partition_index): p.error_code
        for d in placed.directories
        for t in d.topics
        for p in t.partitions
    }
    assert answers == {
        (dirs[0], topic_id, 0): ErrorCode.none,
        (dirs[1], topic_id, 1): ErrorCode.none,
        (dirs[1], topic_id, 7): ErrorCode.unknown_topic_or_partition,
    }
    rows = dict(
        Partition.objects.filter(topic_id=str(topic_id)).values_list(
            "partition_index", "directories"
        )
    )
    assert rows == {0: [str(dirs[0])], 1: [str(dirs[1])]}
    status, listed = api.get("/api/v1/partitions?topic=two-dirs", token=tokens["admin"])
    assert status == 200
    assert {p["partition_index"]: p["directories"] for p in listed["results"]} == rows
    written = MetadataRecord.objects.filter(offset__gt=before).order_by("offset")
    assert [(r.record_type, r.principal, r.data["directories"]) for r in written] == [
        ("PartitionChangeRecord", "User:kafka-broker", [str(dirs[0])]),
        ("PartitionChangeRecord", "User:kafka-broker", [str(dirs[1])]),
    ]
    # What a broker fetches: Kafka's PartitionChangeRecord with the dir.
    cluster = cluster_read()
    log = kraft_log(cluster.log_start_offset, cluster.cluster_id)
    log.extend_to(cluster.last_offset)
    fetched = [r for _, r in decode_records(log.read(before + 1, 1 << 20))]
    assert [r.fields["Directories"] for r in fetched] == [[dirs[0]], [dirs[1]]]
    # The same placement again changes nothing: no record.
    again = broker_client.request(assignment(1, epoch, {dirs[0]: [(topic_id, 0)]}))
    assert again.directories[0].topics[0].partitions[0].error_code == ErrorCode.none
    assert cluster_read().last_offset == cluster.last_offset
    # Refusals are Kafka's: a stale epoch, a topic id nobody knows, another broker's replica.
    stale = broker_client.request(assignment(1, epoch + 5, {dirs[0]: [(topic_id, 0)]}))
    assert stale.error_code == ErrorCode.stale_broker_epoch and stale.directories == ()
    unknown = broker_client.request(assignment(1, epoch, {dirs[0]: [(uuid.uuid4(), 0)]}))
    assert unknown.directories[0].topics[0].partitions[0].error_code == (ErrorCode.unknown_topic_id)

    # The broker reports its second dir offline; the replica it places there goes offline.
    offline = dataclasses.replace(
        heartbeat(1, epoch, cluster_read().last_offset), offline_log_dirs=(dirs[1],)
    )
    assert broker_client.request(offline).error_code == ErrorCode.none
    moved = broker_client.request(assignment(1, epoch, {dirs[1]: [(topic_id, 0)]}))
    assert moved.directories[0].topics[0].partitions[0].error_code == ErrorCode.none
    partition = Partition.objects.get(topic_id=str(topic_id), partition_index=0)
    assert (partition.directories, partition.offline_replicas, partition.leader) == (
        [str(dirs[1])],
        [1],
        -1,
    )
    assert metadata_verify() == []  # the tables are what replaying the log makes


def test_a_registration_takes_the_software_version_its_connection_declared(
    broker_client: Any,
) -> None:
    """A stock broker's registration carries no version; the ApiVersions its connection sent
    (KIP-511's ClientSoftwareVersion, what Kafka's NetworkClient sends) says what it runs, and
    the rollout guard (KIP-1095) reads it from the registration. A version Kafka would refuse
    is not taken."""
    from kio.schema.api_versions.v3 import request as api_versions_v3

    def declare(version: str) -> None:
        answer = broker_client.request(
            api_versions_v3.ApiVersionsRequest(
                client_software_name="apache-kafka-java", client_software_version=version
            )
        )
        assert answer.error_code == ErrorCode.none

    cluster_id = cluster_get_or_create().cluster_id
    declare("4.1.1")
    assert broker_client.request(registration(7, cluster_id)).error_code == ErrorCode.none
    assert Broker.objects.get(pk=7).software_version == "4.1.1"
    record = MetadataRecord.objects.filter(record_type="RegisterBrokerRecord").latest("offset")
    assert record.data["software_version"] == "4.1.1"

    declare("4.1.1 <script>")  # not Kafka's pattern: the last valid one stays
    assert broker_client.request(registration(8, cluster_id)).error_code == ErrorCode.none
    assert Broker.objects.get(pk=8).software_version == "4.1.1"
