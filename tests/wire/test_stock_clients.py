"""Conformance: stock Kafka admin clients, unmodified, manage the cluster over the listener.

kafka-python's KafkaAdminClient and confluent-kafka's (librdkafka's) AdminClient on loopback:
topics, partitions, configs (legacy and incremental), ACLs, client quotas, the cluster, leader
elections; Kafka's error classes for a duplicate topic, a replication factor above the broker
count, an unknown topic and an unauthorized principal; each change seen by the REST API and in
the audit trail with the client's principal and client id."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka import errors as kafka_errors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.admin import ACLResourcePatternType as PatternType

from audit.models import AuditEvent
from tests.wire.conftest import RunningListener

pytestmark = pytest.mark.django_db(transaction=True)
CLIENT_ID = "wire-conformance"


@pytest.fixture
def cluster(
    wire_listener: RunningListener, register: Callable[..., int], tokens: dict[str, str]
) -> RunningListener:
    for broker in range(3):
        register(broker, unfence=True)
    return wire_listener


def kafka_python_admin(
    listener: RunningListener, user: str, token: str, client_id: str = CLIENT_ID
) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=listener.sasl_bootstrap,
        client_id=client_id,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=user,
        sasl_plain_password=token,
        request_timeout_ms=15000,
    )


@pytest.fixture
def admin(cluster: RunningListener, tokens: dict[str, str]) -> Iterator[KafkaAdminClient]:
    client = kafka_python_admin(cluster, "admin", tokens["admin"])
    try:
        yield client
    finally:
        client.close()


def audited(api: str, principal: str = "User:admin") -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(api=api, principal=principal, client_id=CLIENT_ID))


# --- kafka-python ------------------------------------------------------------------------


def test_kafka_python_topic_lifecycle(
    admin: KafkaAdminClient, api: Any, tokens: dict[str, str]
) -> None:
    admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=3)])
    assert "orders" in admin.list_topics()
    status, detail = api.get("/api/v1/topics/orders", token=tokens["admin"])
    assert status == 200 and len(detail["partitions"]) == 6
    (described,) = admin.describe_topics(["orders"])
    assert described["error_code"] == 0
    assert sorted(p["partition_index"] for p in described["partitions"]) == list(range(6))
    for partition in described["partitions"]:
        assert len(partition["replica_nodes"]) == 3
        assert partition["leader_id"] in partition["isr_nodes"]

    with pytest.raises(kafka_errors.TopicAlreadyExistsError):
        admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])
    with pytest.raises(kafka_errors.InvalidReplicationFactorError):
        admin.create_topics([NewTopic("too-wide", num_partitions=1, replication_factor=5)])

    admin.create_partitions({"orders": NewPartitions(total_count=8)})
    status, detail = api.get("/api/v1/topics/orders", token=tokens["admin"])
    assert len(detail["partitions"]) == 8

    with pytest.raises(kafka_errors.UnknownTopicOrPartitionError):
        admin.delete_topics(["no-such-topic"])
    admin.delete_topics(["orders"])
    status, _ = api.get("/api/v1/topics/orders", token=tokens["admin"])
    assert status == 404

    assert audited("CreateTopics") and audited("CreatePartitions") and audited("DeleteTopics")
    row = audited("CreateTopics")[0]
    assert row.client_host == "127.0.0.1"


def test_a_wire_change_is_seen_in_the_ui(
    admin: KafkaAdminClient, client: Any, tokens: dict[str, str]
) -> None:
    from tests.ui.conftest import ui_login

    admin.create_topics([NewTopic("seen-in-ui", num_partitions=2, replication_factor=3)])
    ui_login(client, "admin", tokens["admin"])
    assert b"seen-in-ui" in client.get("/ui/topics/").content
    trail = client.get("/ui/audit/", {"client_id": CLIENT_ID}).content.decode()
    assert "CreateTopics" in trail and "User:admin" in trail and CLIENT_ID in trail


def test_kafka_python_configs_legacy_and_incremental(
    admin: KafkaAdminClient, api: Any, tokens: dict[str, str]
) -> None:
    admin.create_topics([NewTopic("configured", num_partitions=1, replication_factor=1)])
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "configured")], config_filter="all"
    )
    (by_name,) = described.values()
    names = set(by_name["configured"])
    assert {"retention.ms", "cleanup.policy", "min.insync.replicas"} <= names

    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC, "configured", configs={"retention.ms": "3600000"}
            )
        ],
        incremental=True,
    )
    assert _rest_config(api, tokens, "configured", "retention.ms") == "3600000"
    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC, "configured", configs={"cleanup.policy": "compact"}
            )
        ],
        incremental=False,
    )
    assert _rest_config(api, tokens, "configured", "cleanup.policy") == "compact"
    assert audited("IncrementalAlterConfigs") and audited("AlterConfigs")


def _rest_config(api: Any, tokens: dict[str, str], topic: str, name: str) -> str | None:
    status, body = api.post(
        "/api/v1/describe-configs",
        {"resources": [{"resource_type": "TOPIC", "resource_name": topic}]},
        token=tokens["admin"],
    )
    assert status == 200, body
    for entry in body["results"][0]["configs"]:
        if entry["name"] == name:
            return str(entry["value"]) if entry["value"] is not None else None
    return None


def test_kafka_python_acls(admin: KafkaAdminClient, api: Any, tokens: dict[str, str]) -> None:
    acl = ACL(
        principal="User:bob",
        host="*",
        operation=ACLOperation.READ,
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(ResourceType.TOPIC, "payments", PatternType.LITERAL),
    )
    created = admin.create_acls([acl])
    assert created["succeeded"] and not created["failed"]
    everything = ACLFilter(
        principal="User:bob",
        host="*",
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    )
    found, error = admin.describe_acls(everything)
    assert error is kafka_errors.NoError
    assert [(a.principal, a.resource_pattern.resource_name) for a in found] == [
        ("User:bob", "payments")
    ]
    status, body = api.post(
        "/api/v1/describe-acls",
        {
            "resource_type": "ANY",
            "pattern_type": "ANY",
            "operation": "ANY",
            "permission_type": "ANY",
            "principal": "User:bob",
        },
        token=tokens["admin"],
    )
    assert status == 200 and body["resources"], body
    ((_filter, removed, error),) = admin.delete_acls([everything])
    assert [a.principal for a in removed] == ["User:bob"]
    assert error is kafka_errors.NoError
    found, _ = admin.describe_acls(everything)
    assert found == []
    assert audited("CreateAcls") and audited("DeleteAcls")


def test_kafka_python_cluster_and_leader_election(admin: KafkaAdminClient) -> None:
    cluster = admin.describe_cluster()
    assert sorted(broker["broker_id"] for broker in cluster["brokers"]) == [0, 1, 2]
    assert cluster["controller_id"] in (0, 1, 2)
    admin.create_topics([NewTopic("elected", num_partitions=2, replication_factor=3)])
    from kafka.structs import TopicPartition

    admin.elect_leaders(election_type=0, topic_partitions=[TopicPartition("elected", 0)])
    assert audited("ElectLeaders")


def test_kafka_python_client_quotas(
    admin: KafkaAdminClient, api: Any, tokens: dict[str, str]
) -> None:
    """KafkaAdminClient 3.0 has no quota methods: its own protocol classes, sent by its own
    connection manager to the controller it found, are the stock client's path."""
    from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

    entry = AlterClientQuotasRequest.EntryData
    alter = AlterClientQuotasRequest(
        entries=[
            entry(
                entity=[entry.EntityData(entity_type="client-id", entity_name="app-1")],
                ops=[entry.OpData(key="producer_byte_rate", value=1024.0, remove=False)],
            )
        ],
        validate_only=False,
    )
    answer = admin._manager.run(admin._send_request_to_controller, alter)
    assert answer.entries[0].error_code == 0
    component = DescribeClientQuotasRequest.ComponentData
    describe = DescribeClientQuotasRequest(
        components=[component(entity_type="client-id", match_type=0, match="app-1")], strict=False
    )
    answer = admin._manager.run(admin._send_request_to_controller, describe)
    assert answer.error_code == 0
    (entry,) = answer.entries
    assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 1024.0)]
    status, body = api.post(
        "/api/v1/describe-client-quotas",
        {"components": [{"entity_type": "client-id", "match_type": "EXACT", "match": "app-1"}]},
        token=tokens["admin"],
    )
    assert status == 200 and body["entries"][0]["values"][0]["value"] == 1024.0
    assert audited("AlterClientQuotas")


def test_kafka_python_unauthorized_principal(
    cluster: RunningListener, tokens: dict[str, str]
) -> None:
    alice = kafka_python_admin(cluster, "alice", tokens["alice"])
    try:
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            alice.create_topics([NewTopic("hers", num_partitions=1, replication_factor=1)])
    finally:
        alice.close()
    denied = AuditEvent.objects.filter(api="CreateTopics", principal="User:alice")
    assert denied.exists()


def test_plaintext_is_anonymous(cluster: RunningListener) -> None:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id=CLIENT_ID)
    try:
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            client.create_topics([NewTopic("anon", num_partitions=1, replication_factor=1)])
    finally:
        client.close()
    assert AuditEvent.objects.filter(api="CreateTopics", principal="User:ANONYMOUS").exists()


# --- confluent-kafka (librdkafka) ---------------------------------------------------------


def confluent_admin(listener: RunningListener, user: str, token: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": listener.sasl_bootstrap,
            "client.id": CLIENT_ID,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": token,
        }
    )


def test_confluent_kafka_admin_client(
    cluster: RunningListener, api: Any, tokens: dict[str, str]
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka import admin as ck

    client = confluent_admin(cluster, "admin", tokens["admin"])
    (future,) = client.create_topics([ck.NewTopic("ck-orders", 4, 3)]).values()
    future.result(timeout=20)
    metadata = client.list_topics(timeout=20)
    assert len(metadata.topics["ck-orders"].partitions) == 4
    assert sorted(metadata.brokers) == [0, 1, 2]

    with pytest.raises(KafkaException) as duplicate:
        next(iter(client.create_topics([ck.NewTopic("ck-orders", 1, 1)]).values())).result(20)
    assert duplicate.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    with pytest.raises(KafkaException) as too_wide:
        next(iter(client.create_topics([ck.NewTopic("ck-wide", 1, 5)]).values())).result(20)
    assert too_wide.value.args[0].name() == "INVALID_REPLICATION_FACTOR"

    next(iter(client.create_partitions([ck.NewPartitions("ck-orders", 6)]).values())).result(20)
    status, detail = api.get("/api/v1/topics/ck-orders", token=tokens["admin"])
    assert len(detail["partitions"]) == 6

    resource = ck.ConfigResource(ck.ResourceType.TOPIC, "ck-orders")
    configs = next(iter(client.describe_configs([resource]).values())).result(20)
    assert configs["retention.ms"].is_default
    incremental = ck.ConfigResource(
        ck.ResourceType.TOPIC,
        "ck-orders",
        incremental_configs=[
            ck.ConfigEntry(
                "retention.ms", "7200000", incremental_operation=ck.AlterConfigOpType.SET
            )
        ],
    )
    next(iter(client.incremental_alter_configs([incremental]).values())).result(20)
    assert _rest_config(api, tokens, "ck-orders", "retention.ms") == "7200000"
    legacy = ck.ConfigResource(
        ck.ResourceType.TOPIC, "ck-orders", set_config={"cleanup.policy": "compact"}
    )
    next(iter(client.alter_configs([legacy]).values())).result(20)
    assert _rest_config(api, tokens, "ck-orders", "cleanup.policy") == "compact"

    binding = ck.AclBinding(
        ck.ResourceType.TOPIC,
        "ck-orders",
        ck.ResourcePatternType.LITERAL,
        "User:carol",
        "*",
        ck.AclOperation.WRITE,
        ck.AclPermissionType.ALLOW,
    )
    next(iter(client.create_acls([binding]).values())).result(20)
    acl_filter = ck.AclBindingFilter(
        ck.ResourceType.ANY,
        None,
        ck.ResourcePatternType.ANY,
        "User:carol",
        None,
        ck.AclOperation.ANY,
        ck.AclPermissionType.ANY,
    )
    assert client.describe_acls(acl_filter).result(20) == [binding]
    deleted = next(iter(client.delete_acls([acl_filter]).values())).result(20)
    assert deleted == [binding]

    described = client.describe_cluster().result(20)
    assert sorted(node.id for node in described.nodes) == [0, 1, 2]
    assert described.controller.id in (0, 1, 2)

    unknown = next(iter(client.delete_topics(["ck-none"]).values()))
    with pytest.raises(KafkaException) as missing:
        unknown.result(20)
    assert missing.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"
    next(iter(client.delete_topics(["ck-orders"]).values())).result(20)
    status, _ = api.get("/api/v1/topics/ck-orders", token=tokens["admin"])
    assert status == 404
    assert audited("CreateTopics") and audited("DeleteTopics") and audited("CreateAcls")


def test_confluent_kafka_unauthorized_principal(
    cluster: RunningListener, tokens: dict[str, str]
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka import admin as ck

    client = confluent_admin(cluster, "alice", tokens["alice"])
    with pytest.raises(KafkaException) as denied:
        next(iter(client.create_topics([ck.NewTopic("alices", 1, 1)]).values())).result(20)
    assert denied.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
