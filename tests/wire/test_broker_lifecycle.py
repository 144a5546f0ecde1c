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
from kio.schema.broker_heartbeat.v1 import request as heartbeat_v1
from kio.schema.broker_registration.v4 import request as registration_v4
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.errors import ErrorCode

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
    assert versions[62] == (0, 4) and versions[63] == (0, 1)
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
