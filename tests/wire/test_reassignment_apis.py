"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) on the wire: the handler
beside the REST route (same answers and codes), every version through kio's codec, inside a
broker's Envelope as the original principal (audited as it, the broker noted), and on a running
listener: advertised on the client and the controller listener alike, since a broker offers its
clients only what its controller serves (Kafka's tool through a broker otherwise answers "The
node does not support LIST_PARTITION_REASSIGNMENTS")."""

from __future__ import annotations

from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from controlplane.principals import principal_create
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_admin_apis import (
    encode_principal,
    envelope_body,
    inner_bytes,
    inner_response,
    last_audit,
    rest,
    wire_call,
)
from tests.wire.test_server import authenticate, served
from wire.apis import load_all

pytestmark = pytest.mark.django_db
load_all()


@pytest.fixture
def topic(api: Any, tokens: dict[str, str], register: Any) -> str:
    for broker_id in range(4):
        register(broker_id, unfence=True)
    status, body = rest(
        api,
        "create-topics",
        {
            "topics": [
                {
                    "name": "moving",
                    "assignments": [
                        {"partition_index": 0, "broker_ids": [0, 1, 2]},
                        {"partition_index": 1, "broker_ids": [1, 2, 0]},
                    ],
                }
            ]
        },
        tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    return "moving"


def alter_body(topic: str, moves: dict[int, list[int] | None], version: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "timeout": 30_000,
        "topics": [
            {
                "name": topic,
                "partitions": [{"partition_index": i, "replicas": r} for i, r in moves.items()],
            }
        ],
    }
    if version >= 1:
        body["allow_replication_factor_change"] = True
    return body


def partition_codes(answer: Any) -> dict[tuple[str, int], ErrorCode]:
    return {
        (t.name, p.partition_index): p.error_code for t in answer.responses for p in t.partitions
    }


def test_every_version_moves_cancels_and_lists_as_rest(api, tokens, topic):
    for version in (0, 1):
        answer = wire_call(45, version, alter_body(topic, {0: [1, 2, 3]}, version), tokens["admin"])
        assert answer.error_code == ErrorCode.none
        assert partition_codes(answer) == {(topic, 0): ErrorCode.none}
        listed = wire_call(46, 0, {"timeout": 30_000, "topics": None}, tokens["admin"])
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in listed.topics] == [
            (topic, [0])
        ]
        moving = listed.topics[0].partitions[0]
        assert (list(moving.replicas), list(moving.adding_replicas)) == ([1, 2, 3, 0], [3])
        assert list(moving.removing_replicas) == [0]
        status, rest_list = rest(api, "list-partition-reassignments", {}, tokens["admin"])
        assert status == 200 and rest_list["topics"][0]["partitions"][0]["replicas"] == [1, 2, 3, 0]
        cancelled = wire_call(
            45, version, alter_body(topic, {0: None, 1: None}, version), tokens["admin"]
        )
        assert partition_codes(cancelled) == {
            (topic, 0): ErrorCode.none,
            (topic, 1): ErrorCode.no_reassignment_in_progress,
        }
        assert wire_call(46, 0, {"timeout": 30_000, "topics": None}, tokens["admin"]).topics == ()


def test_kafkas_errors_and_a_whole_request_refusal(tokens, topic):
    body = alter_body(topic, {0: [], 1: [0, 0, 1]}, 1)
    body["topics"].append({"name": "gone", "partitions": [{"partition_index": 0, "replicas": [1]}]})
    answer = wire_call(45, 1, body, tokens["admin"])
    assert partition_codes(answer) == {
        (topic, 0): ErrorCode.invalid_replica_assignment,
        (topic, 1): ErrorCode.invalid_replica_assignment,
        ("gone", 0): ErrorCode.unknown_topic_or_partition,
    }
    rf = alter_body(topic, {0: [1, 2]}, 1)
    rf["allow_replication_factor_change"] = False
    assert partition_codes(wire_call(45, 1, rf, tokens["admin"])) == {
        (topic, 0): ErrorCode.invalid_replication_factor
    }
    # A principal without ALTER on the cluster: the top-level error, and every partition's.
    refused = wire_call(45, 1, alter_body(topic, {0: [1, 2, 3]}, 1), tokens["alice"])
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert set(partition_codes(refused).values()) == {ErrorCode.cluster_authorization_failed}
    listed = wire_call(46, 0, {"timeout": 30_000, "topics": None}, tokens["alice"])
    assert listed.error_code == ErrorCode.cluster_authorization_failed


def test_a_broker_forwards_them_in_an_envelope_as_the_client(tokens, topic):
    inner = inner_bytes(45, 1, alter_body(topic, {1: [2, 3, 0]}, 1), "reassign-tool")
    as_admin = envelope_body(inner, encode_principal("User:admin"))
    answer = wire_call(58, 0, as_admin, tokens["broker"], client_id="1")
    assert answer.error_code == ErrorCode.none
    _, response = inner_response(45, 1, answer.response_data)
    assert partition_codes(response) == {(topic, 1): ErrorCode.none}
    event = last_audit("AlterPartitionReassignments")
    assert (event.principal, event.forwarding_broker_id) == ("User:admin", 1)
    assert [r["resource_name"] for r in event.resources] == [f"{topic}-1"]
    listing = inner_bytes(46, 0, {"timeout": 30_000, "topics": None}, "reassign-tool")
    answer = wire_call(58, 0, envelope_body(listing), tokens["broker"], client_id="1")
    _, response = inner_response(46, 0, answer.response_data)
    # alice may not DESCRIBE the cluster: Kafka's error, inside a successful Envelope.
    assert response.error_code == ErrorCode.cluster_authorization_failed


@pytest.mark.django_db(transaction=True)
def test_both_listeners_advertise_them(wire_listener: RunningListener) -> None:
    token = principal_create(name="broker-9", broker=True)
    admin = principal_create(name="ops", super_user=True)
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "broker-9", token) == ErrorCode.none
        assert {45, 46} <= set(served(client))
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, "ops", admin) == ErrorCode.none
        versions = served(client)
        assert versions[45] == (0, 1) and versions[46] == (0, 0)


def test_a_poll_between_two_commits_is_the_same_bytes_authorized_and_audited_each_time(
    tokens, topic
):
    """Tools poll the listing while the tables stand still: asked again at the same offset of
    the tables, the answer is the encoding kept for it; each ask is still authorized and
    audited on its own, and a commit answers the moved state."""
    from audit.models import AuditEvent
    from tests.wire.test_admin_apis import ADVERTISED, caller
    from wire.apis.base import WIRE_APIS, WireRequest
    from wire.convert import from_data

    assert wire_call(45, 1, alter_body(topic, {0: [1, 2, 3], 1: [2, 3, 0]}, 1), tokens["admin"])
    asked = {"timeout": 30_000, "topics": [{"name": topic, "partition_indexes": [0, 1]}]}

    def ask(token: str) -> Any:
        return WIRE_APIS[46].handler(
            WireRequest(
                api_key=46,
                api_version=0,
                correlation_id=3,
                body=from_data(load_request_schema(46, 0), asked),
                caller=caller(token),
                advertised=ADVERTISED,
                listener="SASL_PLAINTEXT",
            )
        )

    audited = AuditEvent.objects.filter(api="ListPartitionReassignments").count()
    first = ask(tokens["admin"])
    assert ask(tokens["admin"]) is first
    refused = wire_call(46, 0, asked, tokens["alice"])  # no DESCRIBE on the cluster
    assert refused.error_code == ErrorCode.cluster_authorization_failed and refused.topics == ()
    assert AuditEvent.objects.filter(api="ListPartitionReassignments").count() == audited + 3
    listed = wire_call(46, 0, asked, tokens["admin"])
    assert [p.partition_index for p in listed.topics[0].partitions] == [0, 1]

    wire_call(45, 1, alter_body(topic, {0: None}, 1), tokens["admin"])  # a commit
    moved = ask(tokens["admin"])
    assert moved is not first
    listed = wire_call(46, 0, asked, tokens["admin"])
    assert [p.partition_index for p in listed.topics[0].partitions] == [1]
