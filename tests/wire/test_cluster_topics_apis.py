"""Metadata, DescribeCluster, CreateTopics, DeleteTopics, CreatePartitions and ElectLeaders on
the wire: the handlers called directly (a decoded kio request in, the kio response out) on the
real controller, beside the same request through the REST API: same answers, same error codes,
the same audit row. Every answer is encoded with kio, and the stock kafka-python parser reads
Metadata and DescribeCluster (KIP-1095's Pod tag included)."""

from __future__ import annotations

import datetime
import io
import time
import uuid
from typing import Any

import pytest
from django.db import transaction
from django.db.models import F
from kafka.protocol.admin import DescribeClusterResponse as StockDescribeClusterResponse
from kafka.protocol.metadata import MetadataResponse as StockMetadataResponse
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from audit.models import AuditEvent
from brokers.rpcs import CLUSTER_OPERATIONS
from controlplane.models import Cluster
from controlplane.principals import AuthenticatedPrincipal, principal_by_token
from controlplane.rpc import Caller
from controlplane.runtime.single_writer import commit_scope
from replicas.models import Topic
from wire.apis import load_all
from wire.apis.base import WIRE_APIS, Advertised, WireRequest
from wire.apis.clients import metadata as cluster
from wire.apis.clients.describe_cluster import PodDescribeClusterResponseV2
from wire.apis.clients.metadata import PodMetadataResponse
from wire.encoding import EncodedBody

pytestmark = pytest.mark.django_db

ADVERTISED = Advertised("127.0.0.1", 19092)
CLIENT_ID = "kafka-python-admin"
CANARY = "canary-broker"
load_all()


def principal(token: str) -> AuthenticatedPrincipal:
    found = principal_by_token(token)
    assert found is not None
    return found


def module(api_key: int, version: int) -> Any:
    import importlib

    return importlib.import_module(load_request_schema(api_key, version).__module__)


def call(api_key: int, version: int, body: Any, token: str, client_id: str = CLIENT_ID) -> Any:
    """The handler's answer to `body` from the token's principal, proven to encode with kio; an
    answer the handler wrote itself is read back with kio's reader."""
    request = WireRequest(
        api_key=api_key,
        api_version=version,
        correlation_id=7,
        body=body,
        caller=Caller(
            principal(token),
            host="10.0.0.9",
            client_id=client_id,
            request_id=f"wire-{uuid.uuid4()}",
        ),
        advertised=ADVERTISED,
        listener="SASL_PLAINTEXT",
    )
    answer = WIRE_APIS[api_key].handler(request)
    written = encode(answer)
    if isinstance(answer, EncodedBody):
        read, size = entity_reader(load_response_schema(api_key, version))(memoryview(written), 0)
        assert size == len(written)
        return read
    return answer


def encode(answer: Any) -> bytes:
    if isinstance(answer, bytes):
        return answer
    buffer = io.BytesIO()
    entity_writer(type(answer))(buffer, answer)
    return buffer.getvalue()


def decode(cls: type, data: bytes) -> Any:
    entity, size = entity_reader(cls)(data, 0)
    assert size == len(data)
    return entity


def codes(items: Any) -> list[str]:
    return [ErrorCode(int(i.error_code)).name.upper() for i in items]


def rest_codes(items: list[dict[str, Any]]) -> list[str]:
    return [ErrorCode(i["error_code"]).name.upper() for i in items]


@pytest.fixture
def brokers(register: Any) -> list[int]:
    """Brokers 0..2 (pod broker) and 100 (pod canary-broker), unfenced."""
    ids = [0, 1, 2]
    for b in ids:
        register(b, unfence=True)
    register(100, unfence=True, pod=CANARY)
    return [*ids, 100]


def create_topics_request(
    version: int, *topics: dict[str, Any], validate_only: bool = False
) -> Any:
    m = module(19, version)
    return m.CreateTopicsRequest(
        topics=tuple(
            m.CreatableTopic(
                name=t["name"],
                num_partitions=t.get("num_partitions", -1),
                replication_factor=t.get("replication_factor", -1),
                assignments=(),
                configs=tuple(
                    m.CreatableTopicConfig(name=k, value=v) for k, v in t.get("configs", {}).items()
                ),
            )
            for t in topics
        ),
        timeout=datetime.timedelta(seconds=30),
        validate_only=validate_only,
    )


def rest_create(api: Any, token: str, *topics: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = [
        {
            "name": t["name"],
            "num_partitions": t.get("num_partitions", -1),
            "replication_factor": t.get("replication_factor", -1),
            "configs": [{"name": k, "value": v} for k, v in t.get("configs", {}).items()],
        }
        for t in topics
    ]
    status, answer = api.post("/api/v1/create-topics", {"topics": body}, token=token)
    return status, answer


def metadata_request(version: int, names: list[str] | None, **flags: bool) -> Any:
    m = module(3, version)
    topics = None
    if names is not None:
        topics = tuple(
            m.MetadataRequestTopic(name=n, topic_id=None)
            if version >= 10
            else m.MetadataRequestTopic(name=n)
            for n in names
        )
    elif version == 0:
        topics = ()
    values: dict[str, Any] = {"topics": topics}
    if version >= 4:
        values["allow_auto_topic_creation"] = True
    if version >= 8:
        values["include_topic_authorized_operations"] = flags.get("topic_ops", False)
    if 8 <= version <= 10:
        values["include_cluster_authorized_operations"] = flags.get("cluster_ops", False)
    return m.MetadataRequest(**values)


# --- CreateTopics ----------------------------------------------------------------------------


def test_create_topics_answers_as_rest_does(api, tokens, brokers):
    orders = {
        "name": "orders",
        "num_partitions": 3,
        "replication_factor": 2,
        "configs": {"retention.ms": "1000"},
    }
    answer = call(19, 7, create_topics_request(7, orders), tokens["admin"])
    [created] = answer.topics
    assert codes(answer.topics) == ["NONE"] and answer.throttle_time == datetime.timedelta(0)
    assert (created.num_partitions, created.replication_factor) == (3, 2)
    assert created.topic_id != uuid.UUID(int=0)
    configs = {c.name: c for c in created.configs}
    assert configs["retention.ms"].value == "1000" and configs["retention.ms"].config_source == 1

    # The same request for another name through REST: the same answer, field by field.
    status, rest = rest_create(api, tokens["admin"], {**orders, "name": "billing"})
    assert status == 200
    [over_rest] = rest["topics"]
    assert (over_rest["num_partitions"], over_rest["replication_factor"]) == (3, 2)
    assert {c["name"]: c["value"] for c in over_rest["configs"]} == {
        c.name: c.value for c in created.configs
    }

    # Duplicates and a replication factor above the broker count: the REST error codes.
    again = [orders, {"name": "wide", "num_partitions": 1, "replication_factor": 5}]
    wire = call(19, 7, create_topics_request(7, *again), tokens["admin"]).topics
    status, rest = rest_create(api, tokens["admin"], *again)
    assert codes(wire) == ["TOPIC_ALREADY_EXISTS", "INVALID_REPLICATION_FACTOR"]
    assert rest_codes(rest["topics"]) == ["TOPIC_ALREADY_EXISTS", "INVALID_REPLICATION_FACTOR"]
    assert [w.error_message for w in wire] == [r["error_message"] for r in rest["topics"]]
    # Old versions carry what they have (v2: name, code, message).
    [old] = call(19, 2, create_topics_request(2, orders), tokens["admin"]).topics
    assert (old.name, old.error_code) == ("orders", ErrorCode.topic_already_exists)


def test_create_topics_validate_only_creates_nothing(api, tokens, brokers):
    request = create_topics_request(
        5, {"name": "dry", "num_partitions": 2, "replication_factor": 1}, validate_only=True
    )
    [answer] = call(19, 5, request, tokens["admin"]).topics
    assert answer.error_code == ErrorCode.none and answer.num_partitions == 2
    status, listing = api.get("/api/v1/topics", token=tokens["admin"])
    assert status == 200 and listing["count"] == 0


def test_unauthorized_principal_is_refused_as_over_rest(api, tokens, brokers):
    topic = {"name": "secret", "num_partitions": 1, "replication_factor": 1}
    wire = call(19, 7, create_topics_request(7, topic), tokens["alice"]).topics
    status, rest = rest_create(api, tokens["alice"], topic)
    assert codes(wire) == ["TOPIC_AUTHORIZATION_FAILED"] == rest_codes(rest["topics"])
    call(19, 7, create_topics_request(7, topic), tokens["admin"])

    # Metadata: asked by name, refused; in an all-topics answer, left out (as GET /topics).
    answer = call(3, 12, metadata_request(12, ["secret"]), tokens["alice"])
    [refused] = answer.topics
    assert refused.error_code == ErrorCode.topic_authorization_failed
    assert refused.topic_id == uuid.UUID(int=0) and refused.partitions == ()
    everything = decode(
        PodMetadataResponse, call(3, 12, metadata_request(12, None), tokens["alice"])
    )
    assert everything.topics == ()
    status, page = api.get("/api/v1/topics", token=tokens["alice"])
    assert page["count"] == 0
    status, detail = api.get("/api/v1/topics/secret", token=tokens["alice"])
    assert ErrorCode(detail["error_code"]) == ErrorCode.topic_authorization_failed

    # Deleting, growing and electing: refused per item as over REST.
    m = module(20, 5)
    wire_delete = call(
        20,
        5,
        m.DeleteTopicsRequest(topic_names=("secret",), timeout=datetime.timedelta(seconds=5)),
        tokens["alice"],
    )
    status, rest = api.post(
        "/api/v1/delete-topics", {"topic_names": ["secret"]}, token=tokens["alice"]
    )
    assert codes(wire_delete.responses) == ["TOPIC_AUTHORIZATION_FAILED"]
    assert rest_codes(rest["responses"]) == ["TOPIC_AUTHORIZATION_FAILED"]
    m = module(43, 2)
    elect = m.ElectLeadersRequest(
        election_type=0,
        topic_partitions=(m.TopicPartitions(topic="secret", partitions=(0,)),),
        timeout=datetime.timedelta(seconds=5),
    )
    wire_elect = call(43, 2, elect, tokens["alice"])
    status, rest = api.post(
        "/api/v1/elect-leaders",
        {
            "election_type": "PREFERRED",
            "topic_partitions": [{"topic": "secret", "partitions": [0]}],
        },
        token=tokens["alice"],
    )
    assert status == 403 and ErrorCode(rest["error_code"]) == ErrorCode.cluster_authorization_failed
    # A whole-request refusal is put on every partition asked for (and at the top, v1+).
    assert wire_elect.error_code == ErrorCode.cluster_authorization_failed
    [result] = wire_elect.replica_election_results
    assert result.topic == "secret"
    assert codes(result.partition_result) == ["CLUSTER_AUTHORIZATION_FAILED"]
    assert result.partition_result[0].error_message == rest["error_message"]


def test_a_whole_request_refusal_is_every_items_error(tokens, brokers):
    # KIP-590: a broker principal never sends admin writes to the public API.
    request = create_topics_request(7, {"name": "a"}, {"name": "b"})
    answer = call(19, 7, request, tokens["broker"])
    assert [t.name for t in answer.topics] == ["a", "b"]
    assert codes(answer.topics) == ["CLUSTER_AUTHORIZATION_FAILED"] * 2
    # An invalid body (a DeleteTopics v6 state naming neither name nor id): INVALID_REQUEST.
    m = module(20, 6)
    bad = m.DeleteTopicsRequest(
        topics=(m.DeleteTopicState(name=None, topic_id=uuid.UUID(int=0)),),
        timeout=datetime.timedelta(seconds=5),
    )
    answer = call(20, 6, bad, tokens["admin"])
    assert codes(answer.responses) == ["INVALID_REQUEST"]


def test_the_audit_row_names_the_wire_caller(tokens, brokers):
    AuditEvent.objects.all().delete()
    call(
        19,
        7,
        create_topics_request(7, {"name": "audited", "num_partitions": 1, "replication_factor": 1}),
        tokens["admin"],
        client_id="terraform-provider",
    )
    [event] = AuditEvent.objects.filter(api="CreateTopics")
    assert (event.principal, event.client_id, event.client_host) == (
        "User:admin",
        "terraform-provider",
        "10.0.0.9",
    )
    assert event.error_code == 0 and event.first_offset is not None
    assert [(r["resource_type"], r["resource_name"]) for r in event.resources] == [
        ("TOPIC", "audited")
    ]


# --- DeleteTopics, CreatePartitions ----------------------------------------------------------


def test_delete_topics_by_name_and_by_id(api, tokens, brokers):
    created = call(
        19,
        7,
        create_topics_request(
            7,
            {"name": "one", "num_partitions": 1, "replication_factor": 1},
            {"name": "two", "num_partitions": 1, "replication_factor": 1},
        ),
        tokens["admin"],
    )
    two_id = created.topics[1].topic_id
    m = module(20, 4)
    answer = call(
        20,
        4,
        m.DeleteTopicsRequest(
            topic_names=("one", "missing"), timeout=datetime.timedelta(seconds=5)
        ),
        tokens["admin"],
    )
    assert {r.name: r.error_code for r in answer.responses} == {
        "one": ErrorCode.none,
        "missing": ErrorCode.unknown_topic_or_partition,
    }
    status, rest = api.post(
        "/api/v1/delete-topics", {"topic_names": ["missing"]}, token=tokens["admin"]
    )
    assert rest_codes(rest["responses"]) == ["UNKNOWN_TOPIC_OR_PARTITION"]
    # v6 names topics by id.
    m = module(20, 6)
    unknown = uuid.uuid4()
    answer = call(
        20,
        6,
        m.DeleteTopicsRequest(
            topics=(m.DeleteTopicState(topic_id=two_id), m.DeleteTopicState(topic_id=unknown)),
            timeout=datetime.timedelta(seconds=5),
        ),
        tokens["admin"],
    )
    by_id = {r.topic_id: r for r in answer.responses}
    assert (by_id[two_id].name, by_id[two_id].error_code) == ("two", ErrorCode.none)
    assert by_id[unknown].error_code == ErrorCode.unknown_topic_id
    status, listing = api.get("/api/v1/topics", token=tokens["admin"])
    assert status == 200 and listing["count"] == 0


def test_create_partitions_as_rest(api, tokens, brokers):
    call(
        19,
        7,
        create_topics_request(7, {"name": "grow", "num_partitions": 1, "replication_factor": 2}),
        tokens["admin"],
    )
    m = module(37, 3)
    request = m.CreatePartitionsRequest(
        topics=(
            m.CreatePartitionsTopic(name="grow", count=3, assignments=None),
            m.CreatePartitionsTopic(name="nothing", count=3, assignments=None),
        ),
        timeout=datetime.timedelta(seconds=5),
        validate_only=False,
    )
    answer = call(37, 3, request, tokens["admin"])
    status, rest = api.post(
        "/api/v1/create-partitions",
        {"topics": [{"name": "grow", "count": 3}, {"name": "nothing", "count": 3}]},
        token=tokens["admin"],
    )
    assert codes(answer.results) == ["NONE", "UNKNOWN_TOPIC_OR_PARTITION"]
    # Growing to the count it now has is Kafka's INVALID_PARTITIONS, over both doors alike.
    assert rest_codes(rest["results"]) == ["INVALID_PARTITIONS", "UNKNOWN_TOPIC_OR_PARTITION"]
    status, detail = api.get("/api/v1/topics/grow", token=tokens["admin"])
    assert status == 200 and detail["partition_count"] == 3
    [v0] = call(
        37,
        0,
        module(37, 0).CreatePartitionsRequest(
            topics=(module(37, 0).CreatePartitionsTopic(name="grow", count=2, assignments=None),),
            timeout=datetime.timedelta(seconds=5),
            validate_only=True,
        ),
        tokens["admin"],
    ).results
    assert v0.error_code == ErrorCode.invalid_partitions


def test_elect_leaders_answers_as_rest(api, tokens, brokers):
    call(
        19,
        7,
        create_topics_request(7, {"name": "led", "num_partitions": 2, "replication_factor": 2}),
        tokens["admin"],
    )
    for version in (0, 1, 2):
        m = module(43, version)
        values: dict[str, Any] = {
            "topic_partitions": (
                m.TopicPartitions(topic="led", partitions=(0, 1)),
                m.TopicPartitions(topic="gone", partitions=(0,)),
            ),
            "timeout": datetime.timedelta(seconds=5),
        }
        if version >= 1:
            values["election_type"] = 0
        answer = call(43, version, m.ElectLeadersRequest(**values), tokens["admin"])
        wire = {
            (r.topic, p.partition_id): p.error_code
            for r in answer.replica_election_results
            for p in r.partition_result
        }
        status, rest = api.post(
            "/api/v1/elect-leaders",
            {
                "election_type": "PREFERRED",
                "topic_partitions": [
                    {"topic": "led", "partitions": [0, 1]},
                    {"topic": "gone", "partitions": [0]},
                ],
            },
            token=tokens["admin"],
        )
        assert status == 200
        assert wire == {
            (r["topic"], p["partition_id"]): ErrorCode(p["error_code"])
            for r in rest["replica_election_results"]
            for p in r["partition_result"]
        }
        assert wire[("gone", 0)] == ErrorCode.unknown_topic_or_partition


# --- Metadata --------------------------------------------------------------------------------


def test_metadata_v12_carries_pods_and_a_stock_parser_reads_it(api, tokens, brokers):
    call(
        19,
        7,
        create_topics_request(7, {"name": "orders", "num_partitions": 4, "replication_factor": 2}),
        tokens["admin"],
    )
    data = call(3, 12, metadata_request(12, None), tokens["admin"])
    assert isinstance(data, bytes)  # the all-topics answer, encoded (and cached)
    ours = decode(PodMetadataResponse, data)
    assert [(b.node_id, b.host, b.port, b.rack, b.pod) for b in ours.brokers] == [
        (0, "127.0.0.1", 19092, "rack-0", "broker"),
        (1, "127.0.0.1", 19092, "rack-1", "broker"),
        (2, "127.0.0.1", 19092, "rack-2", "broker"),
        (100, "127.0.0.1", 19092, "rack-1", CANARY),
    ]
    assert ours.controller_id in {b.node_id for b in ours.brokers}
    stock = StockMetadataResponse.decode(data, version=12)
    assert [(b.node_id, b.host, b.port, b.rack) for b in stock.brokers] == [
        (b.node_id, b.host, b.port, b.rack) for b in ours.brokers
    ]
    assert stock.cluster_id == ours.cluster_id and stock.controller_id == ours.controller_id
    # Topics and partitions: what GET /api/v1/topics/orders shows.
    status, detail = api.get("/api/v1/topics/orders", token=tokens["admin"])
    assert status == 200
    [topic] = stock.topics
    assert (topic.name, str(topic.topic_id), topic.error_code) == ("orders", detail["topic_id"], 0)
    assert [
        (
            p.partition_index,
            p.leader_id,
            p.leader_epoch,
            p.replica_nodes,
            p.isr_nodes,
            p.offline_replicas,
        )
        for p in topic.partitions
    ] == [
        (
            p["partition_index"],
            p["leader_id"],
            p["leader_epoch"],
            p["replica_nodes"],
            p["isr_nodes"],
            p["offline_replicas"],
        )
        for p in detail["partitions"]
    ]
    # Asked again at the same offset: the cached bytes; after a change, a new answer.
    assert call(3, 12, metadata_request(12, None), tokens["admin"]) is data
    call(
        19,
        7,
        create_topics_request(7, {"name": "more", "num_partitions": 1, "replication_factor": 1}),
        tokens["admin"],
    )
    again = StockMetadataResponse.decode(
        call(3, 12, metadata_request(12, None), tokens["admin"]), version=12
    )
    assert [t.name for t in again.topics] == ["more", "orders"]


def test_pod_tag_is_a_tagged_field_a_stock_client_skips():
    """A v12 broker carrying Pod encodes as the stock broker plus one tag; dropping the tag
    gives the stock bytes."""
    import kio.schema.metadata.v12.response as m

    plain = m.MetadataResponseBroker(node_id=1, host="h", port=9, rack=None)
    tagged = cluster.PodMetadataBroker(node_id=1, host="h", port=9, rack=None, pod=CANARY)
    plain_bytes, tagged_bytes = encode(plain), encode(tagged)
    assert plain_bytes.endswith(b"\x00")  # no tags
    # one tag: count 1, the tag (varint 10950 = c6 55), its size (1 + 13), the compact string
    # (its length + 1, then the bytes)
    assert (
        tagged_bytes
        == plain_bytes[:-1]
        + b"\x01\xc6\x55"
        + bytes([1 + len(CANARY), len(CANARY) + 1])
        + CANARY.encode()
    )


def test_metadata_every_version_parses_with_the_stock_client(tokens, brokers):
    call(
        19,
        7,
        create_topics_request(7, {"name": "orders", "num_partitions": 2, "replication_factor": 2}),
        tokens["admin"],
    )
    for version in range(13):
        for names in (None, ["orders", "missing"]):
            answer = encode(call(3, version, metadata_request(version, names), tokens["admin"]))
            stock = StockMetadataResponse.decode(answer, version=version)
            assert [b.node_id for b in stock.brokers] == [0, 1, 2, 100], version
            by_name = {t.name: t for t in stock.topics}
            assert len(by_name["orders"].partitions) == 2
            if names is not None:
                assert by_name["missing"].error_code == ErrorCode.unknown_topic_or_partition.value


def test_metadata_authorized_operations(tokens, brokers):
    call(
        19,
        7,
        create_topics_request(7, {"name": "orders", "num_partitions": 1, "replication_factor": 1}),
        tokens["admin"],
    )
    topic_ops = sum(1 << op.value for op in cluster.TOPIC_OPERATIONS)
    cluster_ops = sum(1 << op.value for op in CLUSTER_OPERATIONS)
    answer = call(
        3, 10, metadata_request(10, ["orders"], topic_ops=True, cluster_ops=True), tokens["admin"]
    )
    assert answer.topics[0].topic_authorized_operations == topic_ops
    assert answer.cluster_authorized_operations == cluster_ops
    stock = StockMetadataResponse.decode(encode(answer), version=10)
    assert stock.topics[0].authorized_operations == {op.value for op in cluster.TOPIC_OPERATIONS}
    # Not asked: Kafka's "not asked" value; a principal without DESCRIBE on the cluster: 0.
    answer = call(3, 10, metadata_request(10, ["orders"]), tokens["alice"])
    assert answer.topics[0].topic_authorized_operations == cluster.OPERATIONS_NOT_ASKED
    answer = call(3, 10, metadata_request(10, None, cluster_ops=True), tokens["alice"])
    assert decode(type_of(10), answer).cluster_authorized_operations == 0


def type_of(version: int) -> type:
    from kio.index import load_response_schema

    return load_response_schema(3, version)


def test_metadata_names_unknown_topics_and_ids(tokens, brokers):
    created = call(
        19,
        7,
        create_topics_request(7, {"name": "orders", "num_partitions": 1, "replication_factor": 1}),
        tokens["admin"],
    )
    m = module(3, 12)
    unknown = uuid.uuid4()
    request = m.MetadataRequest(
        topics=(
            m.MetadataRequestTopic(name=None, topic_id=created.topics[0].topic_id),
            m.MetadataRequestTopic(name=None, topic_id=unknown),
            m.MetadataRequestTopic(name="missing", topic_id=None),
        ),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    answer = call(3, 12, request, tokens["admin"])
    assert [(t.name, t.topic_id, t.error_code) for t in answer.topics] == [
        ("orders", created.topics[0].topic_id, ErrorCode.none),
        (None, unknown, ErrorCode.unknown_topic_id),
        ("missing", uuid.UUID(int=0), ErrorCode.unknown_topic_or_partition),
    ]
    # allow_auto_topic_creation: never created.
    assert (
        call(3, 12, metadata_request(12, ["missing"]), tokens["admin"]).topics[0].error_code
        == ErrorCode.unknown_topic_or_partition
    )


def test_no_live_broker_advertises_one_synthetic_node(tokens, cluster_id):
    answer = decode(PodMetadataResponse, call(3, 12, metadata_request(12, None), tokens["admin"]))
    [node] = answer.brokers
    assert (node.host, node.port, answer.controller_id) == ("127.0.0.1", 19092, node.node_id)
    described = call(
        60,
        1,
        module(60, 1).DescribeClusterRequest(include_cluster_authorized_operations=False),
        tokens["admin"],
    )
    assert [b.broker_id for b in described.brokers] == [node.node_id]
    assert described.controller_id == node.node_id


# --- DescribeCluster -------------------------------------------------------------------------


def test_describe_cluster_is_the_rpcs_answer_at_this_listener(api, tokens, brokers, register):
    register(7)  # registered, still fenced
    status, rest = api.post(
        "/api/v1/describe-cluster",
        {"include_cluster_authorized_operations": True},
        token=tokens["admin"],
    )
    assert status == 200
    m = module(60, 1)
    answer = call(
        60, 1, m.DescribeClusterRequest(include_cluster_authorized_operations=True), tokens["admin"]
    )
    assert answer.cluster_id == rest["cluster_id"]
    assert answer.cluster_authorized_operations == rest["cluster_authorized_operations"]
    assert [(b.broker_id, b.host, b.port, b.rack, b.pod) for b in answer.brokers] == [
        (b["broker_id"], "127.0.0.1", 19092, b["rack"], b["pod"]) for b in rest["brokers"]
    ]
    metadata = decode(PodMetadataResponse, call(3, 12, metadata_request(12, None), tokens["admin"]))
    assert [b.broker_id for b in answer.brokers] == [b.node_id for b in metadata.brokers]
    assert answer.controller_id == metadata.controller_id
    stock = StockDescribeClusterResponse.decode(encode(answer), version=1)
    assert [b.broker_id for b in stock.brokers] == [0, 1, 2, 100]
    assert stock.authorized_operations == {op.value for op in CLUSTER_OPERATIONS}

    # v2: fenced brokers when asked, marked fenced.
    m = module(60, 2)
    v2 = call(
        60,
        2,
        m.DescribeClusterRequest(
            include_cluster_authorized_operations=False, include_fenced_brokers=True
        ),
        tokens["admin"],
    )
    assert [(b.broker_id, b.is_fenced) for b in v2.brokers] == [
        (0, False),
        (1, False),
        (2, False),
        (100, False),
        (7, True),
    ]
    ours = decode(PodDescribeClusterResponseV2, encode(v2))
    assert [b.pod for b in ours.brokers] == ["broker", "broker", "broker", CANARY, "broker"]
    stock = StockDescribeClusterResponse.decode(encode(v2), version=2)
    assert [b.broker_id for b in stock.brokers] == [0, 1, 2, 100, 7]
    # Controllers are no endpoint a broker describes (KIP-919).
    refused = call(
        60,
        2,
        m.DescribeClusterRequest(
            include_cluster_authorized_operations=False,
            include_fenced_brokers=False,
            endpoint_type=2,
        ),
        tokens["admin"],
    )
    assert refused.error_code == ErrorCode.unsupported_endpoint_type


# --- performance -----------------------------------------------------------------------------


def test_metadata_for_1000_topics_of_10_partitions(
    api, tokens, brokers, django_assert_max_num_queries
):
    topics = [
        {"name": f"t{i:04d}", "num_partitions": 10, "replication_factor": 2} for i in range(1000)
    ]
    status, answer = rest_create(api, tokens["admin"], *topics)
    assert status == 200 and set(rest_codes(answer["topics"])) == {"NONE"}
    cluster.metadata_cache.clear()
    started = time.perf_counter()
    with django_assert_max_num_queries(6):
        data = call(3, 12, metadata_request(12, None), tokens["admin"])
    first_ms = (time.perf_counter() - started) * 1000
    # The token's principal is cached 5 s; a loaded machine may take longer than that to
    # build the first answer. A small request first keeps the count below the answer's cache.
    call(3, 12, metadata_request(12, []), tokens["admin"])
    started = time.perf_counter()
    with django_assert_max_num_queries(1):
        assert call(3, 12, metadata_request(12, None), tokens["admin"]) is data
    cached_ms = (time.perf_counter() - started) * 1000
    stock = StockMetadataResponse.decode(data, version=12)
    assert len(stock.topics) == 1000 and sum(len(t.partitions) for t in stock.topics) == 10_000
    # The figures are printed, not asserted (speed lives in bench/: make bench-wire); the
    # answer being the very bytes of the first (`is data`) with one query shows the cache.
    print(
        f"\nMetadata v12 1,000 x 10: first {first_ms:.0f} ms, "
        f"cached {cached_ms:.1f} ms, {len(data)} bytes"
    )


def test_an_all_topics_answer_read_while_the_tables_trail_the_log_is_not_kept(api, tokens, brokers):
    """A commit is the log's transaction, then the tables'. A Metadata answer read between the
    two shows the tables' state; it is cached under the tables' offset, so once they follow,
    the next answer shows the committed topic instead of the earlier answer's bytes."""
    status, answer = rest_create(api, tokens["admin"], {"name": "kept"}, {"name": "late"})
    assert status == 200 and set(rest_codes(answer["topics"])) == {"NONE"}
    cluster.metadata_cache.clear()

    def names() -> set[str]:
        data = call(3, 12, metadata_request(12, None), tokens["admin"])
        return {t.name for t in StockMetadataResponse.decode(data, version=12).topics}

    class TablesFollowed(Exception):
        pass

    with pytest.raises(TablesFollowed), transaction.atomic():
        with commit_scope():  # the log holds "late"; the tables stand a commit behind, without it
            Topic.objects.filter(name="late").delete()
            Cluster.objects.filter(pk=1).update(projected_offset=F("projected_offset") - 1)
        assert names() == {"kept"}
        raise TablesFollowed  # the tables' transaction commits: "late" and its offset
    assert names() == {"kept", "late"}
