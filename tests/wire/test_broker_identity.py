"""A broker speaks only for itself: a principal named `kafka-broker-<id>` registers,
heartbeats, changes ISRs, allocates producer ids and places replicas only for broker `<id>`,
and forwards Envelopes only while that broker is registered and unfenced. Each refusal is
CLUSTER_AUTHORIZATION_FAILED, audited, and writes nothing. A principal with CLUSTER_ACTION that
no id is bound to keeps Kafka's model (it may act for any broker). Each case here is a finding
of a hostile broker principal on loopback: it applied before this rule."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kio.schema.alter_partition.v3 import request as alter_v3
from kio.schema.assign_replicas_to_dirs.v0 import request as assign_v0
from kio.schema.broker_heartbeat.v1 import request as heartbeat_v1
from kio.schema.errors import ErrorCode

from audit.models import AuditEvent
from brokers.models import Broker
from controlplane.models import Acl, MetadataRecord
from controlplane.principals import principal_create
from controlplane.runtime.lease import cluster_get_or_create
from replicas.models import Partition
from tests.conftest import heartbeat_body
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_admin_apis import creation, inner_bytes, inner_response
from tests.wire.test_broker_lifecycle import allocate, alter, heartbeat
from tests.wire.test_broker_lifecycle import registration as lifecycle_registration
from tests.wire.test_listener_roles import envelope
from tests.wire.test_server import authenticate

pytestmark = pytest.mark.django_db(transaction=True)

BrokerClient = Callable[[int], RawClient]


@pytest.fixture
def broker_as(wire_listener: RunningListener) -> Iterator[BrokerClient]:
    """A controller-listener connection authenticated as `kafka-broker-<id>`."""
    clients: list[RawClient] = []

    def connect(broker_id: int) -> RawClient:
        name = f"kafka-broker-{broker_id}"
        token = principal_create(name=name, broker=True)
        client = RawClient(wire_listener.host, wire_listener.controller_port).__enter__()
        clients.append(client)
        assert authenticate(client, name, token) == ErrorCode.none
        return client

    yield connect
    for client in clients:
        client.__exit__(None, None, None)


def registration(broker_id: int, cluster_id: str) -> Any:
    """A stock broker's registration, its listener on a port any id may take."""
    request = lifecycle_registration(broker_id, cluster_id)
    listener = dataclasses.replace(request.listeners[0], port=19092)
    return dataclasses.replace(request, listeners=(listener,))


def registered(client: RawClient, broker_id: int, *, unfence: bool = True) -> int:
    answer = client.request(registration(broker_id, cluster_get_or_create().cluster_id))
    assert answer.error_code == ErrorCode.none, answer
    epoch = int(answer.broker_epoch)
    if unfence:
        beat = client.request(heartbeat(broker_id, epoch, epoch))
        assert beat.error_code == ErrorCode.none and not beat.is_fenced
    return epoch


def forged_heartbeat(broker_id: int, epoch: int, **wants: bool) -> Any:
    return heartbeat_v1.BrokerHeartbeatRequest(
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=epoch,
        want_fence=wants.get("want_fence", False),
        want_shut_down=wants.get("want_shut_down", False),
        offline_log_dirs=(),
    )


def denied(api: str) -> list[tuple[str, str, int]]:
    return list(
        AuditEvent.objects.filter(api=api, outcome="DENIED")
        .order_by("id")
        .values_list("principal", "outcome", "error_code")
    )


def test_a_broker_principal_registers_only_its_own_id(broker_as: BrokerClient) -> None:
    client = broker_as(100)
    assert registered(client, 100) >= 0
    records = MetadataRecord.objects.count()
    for ghost in (101, 999, 2147483647):
        answer = client.request(registration(ghost, cluster_get_or_create().cluster_id))
        assert answer.error_code == ErrorCode.cluster_authorization_failed, ghost
    assert set(Broker.objects.values_list("broker_id", flat=True)) == {100}
    assert MetadataRecord.objects.count() == records
    assert denied("BrokerRegistration") == [
        ("User:kafka-broker-100", "DENIED", 31),
        ("User:kafka-broker-100", "DENIED", 31),
        ("User:kafka-broker-100", "DENIED", 31),
    ]


def test_a_forged_heartbeat_neither_fences_nor_shuts_down_another_broker(
    broker_as: BrokerClient,
) -> None:
    victim = broker_as(101)
    epoch = registered(victim, 101)
    hostile = broker_as(100)
    registered(hostile, 100)
    records = MetadataRecord.objects.count()
    for wants in ({"want_shut_down": True}, {"want_fence": True}):
        answer = hostile.request(forged_heartbeat(101, epoch, **wants))
        assert answer.error_code == ErrorCode.cluster_authorization_failed
    row = Broker.objects.get(pk=101)
    assert not row.fenced and not row.in_controlled_shutdown
    assert MetadataRecord.objects.count() == records
    assert len(denied("BrokerHeartbeat")) == 2


def test_alter_partition_producer_ids_and_dirs_only_for_its_own_id(
    broker_as: BrokerClient, api: Any, tokens: dict[str, str]
) -> None:
    leader_client = broker_as(100)
    epochs = {100: registered(leader_client, 100)}
    hostile = broker_as(102)
    epochs[102] = registered(hostile, 102)
    assignment = [{"partition_index": 0, "broker_ids": [100, 102]}]
    body = {
        "topics": [
            {
                "name": "owned",
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": assignment,
            }
        ]
    }
    status, created = api.post("/api/v1/create-topics", body, token=tokens["admin"])
    assert status == 200 and created["topics"][0]["error_code"] == 0, created
    partition = Partition.objects.get(topic__name="owned", partition_index=0)
    assert partition.leader == 100
    shrink = alter(
        uuid.UUID(partition.topic_id),
        partition.leader_epoch,
        partition.partition_epoch,
        [(100, epochs[100])],
    )
    forged = hostile.request(
        alter_v3.AlterPartitionRequest(broker_id=100, broker_epoch=epochs[100], topics=(shrink,))
    )
    assert forged.error_code == ErrorCode.cluster_authorization_failed
    partition.refresh_from_db()
    assert sorted(partition.isr) == [100, 102]
    # As itself, the follower is not the leader: Kafka answers INVALID_REQUEST for it.
    own = hostile.request(
        alter_v3.AlterPartitionRequest(broker_id=102, broker_epoch=epochs[102], topics=(shrink,))
    )
    assert own.error_code == ErrorCode.none
    assert own.topics[0].partitions[0].error_code == ErrorCode.invalid_request

    ids = hostile.request(allocate(100, epochs[100]))
    assert ids.error_code == ErrorCode.cluster_authorization_failed and ids.producer_id_start == -1
    placed = hostile.request(
        assign_v0.AssignReplicasToDirsRequest(
            broker_id=100, broker_epoch=epochs[100], directories=()
        )
    )
    assert placed.error_code == ErrorCode.cluster_authorization_failed
    assert not MetadataRecord.objects.filter(record_type="ProducerIdsRecord").exists()


def test_an_envelope_comes_only_from_a_registered_unfenced_broker(
    broker_as: BrokerClient,
) -> None:
    principal_create(name="acl-admin", super_user=True)
    ghost = broker_as(102)  # a broker principal with no registered broker
    inner = inner_bytes(30, 3, {"creations": [creation("forged")]}, "acl-tool")
    answer = ghost.request(envelope(inner))
    assert answer.error_code == ErrorCode.cluster_authorization_failed
    assert not Acl.objects.exists()
    fenced = broker_as(103)
    registered(fenced, 103, unfence=False)
    assert fenced.request(envelope(inner)).error_code == ErrorCode.cluster_authorization_failed
    assert not Acl.objects.exists()
    assert [p for p, _, _ in denied("Envelope")] == [
        "User:kafka-broker-102",
        "User:kafka-broker-103",
    ]

    live = broker_as(100)
    registered(live, 100)
    accepted = live.request(envelope(inner))
    assert accepted.error_code == ErrorCode.none
    _, response = inner_response(30, 3, bytes(accepted.response_data))
    assert response.results[0].error_code == ErrorCode.none
    row = AuditEvent.objects.get(api="CreateAcls")
    # Audited as the client, forwarded by the broker its principal is bound to.
    assert (row.principal, row.forwarding_principal, row.forwarding_broker_id) == (
        "User:acl-admin",
        "User:kafka-broker-100",
        100,
    )


def test_a_principal_bound_to_no_id_keeps_kafkas_model(wire_listener: RunningListener) -> None:
    """An operator's choice: one CLUSTER_ACTION identity for many brokers (the simulator's)."""
    token = principal_create(name="fleet", broker=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "fleet", token) == ErrorCode.none
        for broker_id in (7, 8):
            registered(client, broker_id)
    assert set(Broker.objects.filter(fenced=False).values_list("broker_id", flat=True)) == {7, 8}


def test_registration_keeps_ids_in_range_and_off_the_controller(wire_listener: Any) -> None:
    token = principal_create(name="fleet", broker=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "fleet", token) == ErrorCode.none
        cluster_id = cluster_get_or_create().cluster_id
        for broker_id in (2147483647, 3000):  # Int32.MAX_VALUE; the controller's voter id
            answer = client.request(registration(broker_id, cluster_id))
            assert answer.error_code == ErrorCode.invalid_registration, broker_id
    assert not Broker.objects.exists()


def test_the_rest_door_binds_the_same_principals(api: Any, cluster_id: str) -> None:
    own = principal_create(name="kafka-broker-5", broker=True)
    other = principal_create(name="kafka-broker-6", broker=True)
    from tests.conftest import registration_body

    status, body = api.post(
        "/internal/v1/broker-registration", registration_body(5, cluster_id), token=own
    )
    assert status == 200 and body["error_code"] == 0
    epoch = int(body["broker_epoch"])
    status, refused = api.post(
        "/internal/v1/broker-heartbeat",
        {**heartbeat_body(5, epoch, epoch), "want_shut_down": True},
        token=other,
    )
    assert status == 403 and refused["error_code"] == 31, refused
    status, refused = api.post(
        "/internal/v1/alter-replica-state",
        {
            "broker_id": 5,
            "broker_epoch": epoch,
            "new_state": 1,
            "reason": "forged",
            "topics": [],
        },
        token=other,
    )
    assert refused["error_code"] == 31, (status, refused)
    assert not Broker.objects.get(pk=5).in_controlled_shutdown


def test_alter_partition_answers_kafkas_codes_for_a_null_topic_id_and_recovering(
    broker_as: BrokerClient, api: Any, tokens: dict[str, str]
) -> None:
    """A zero topic id (kio's None) is UNKNOWN_TOPIC_ID, never a closed connection; a leader
    reporting RECOVERED -> RECOVERING is INVALID_REQUEST and changes nothing (Kafka's
    validateAlterPartitionData)."""
    client = broker_as(100)
    epoch = registered(client, 100)
    assignment = [{"partition_index": 0, "broker_ids": [100]}]
    body = {
        "topics": [
            {
                "name": "solo",
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": assignment,
            }
        ]
    }
    status, created = api.post("/api/v1/create-topics", body, token=tokens["admin"])
    assert status == 200 and created["topics"][0]["error_code"] == 0, created
    partition = Partition.objects.get(topic__name="solo", partition_index=0)
    null = alter_v3.TopicData(topic_id=None, partitions=alter(uuid.uuid4(), 0, 0, []).partitions)
    answer = client.request(
        alter_v3.AlterPartitionRequest(broker_id=100, broker_epoch=epoch, topics=(null,))
    )
    assert answer.error_code == ErrorCode.none
    assert answer.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_id

    same = alter(
        uuid.UUID(partition.topic_id), partition.leader_epoch, partition.partition_epoch, []
    )
    recovering = dataclasses.replace(
        same.partitions[0],
        new_isr_with_epochs=(alter_v3.BrokerState(broker_id=100, broker_epoch=epoch),),
        leader_recovery_state=1,
    )
    answer = client.request(
        alter_v3.AlterPartitionRequest(
            broker_id=100,
            broker_epoch=epoch,
            topics=(dataclasses.replace(same, partitions=(recovering,)),),
        )
    )
    assert answer.topics[0].partitions[0].error_code == ErrorCode.invalid_request
    before = partition.partition_epoch
    partition.refresh_from_db()
    assert partition.partition_epoch == before
