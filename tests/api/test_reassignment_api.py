"""Partition reassignment (KIP-455) over REST on the real database: alter-partition-reassignments
starts, replaces and cancels moves, partitions show their adding and removing replicas, the
reassignments list (its RPC and its GET) reads them back in one query, a standby's image (loaded
from the tables) finishes a move, Kafka's errors and authorization, the audit row, and the log
replays to the tables (`verify_metadata`) after each step."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from controlplane.controller.errors import Errors
from controlplane.runtime.replay import metadata_verify
from replicas.models import Partition
from tests.api.test_replication_api import Kafka

pytestmark = pytest.mark.django_db

ALTER = "/api/v1/alter-partition-reassignments"
LIST = "/api/v1/list-partition-reassignments"
GET = "/api/v1/partition-reassignments"


@pytest.fixture
def kafka(api, tokens, register) -> Kafka:
    kafka = Kafka(api, tokens, register)
    kafka.register(1, 2, 3, 4, 5)
    kafka.create_topic("orders", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    return kafka


def reassign(kafka: Kafka, moves: dict[int, list[int] | None], **extra: Any) -> Any:
    status, body = kafka.api.post(
        ALTER,
        {
            "topics": [
                {
                    "name": "orders",
                    "partitions": [{"partition_index": i, "replicas": r} for i, r in moves.items()],
                }
            ],
            **extra,
        },
        token=kafka.tokens["admin"],
    )
    assert status == 200, body
    return body


def codes(body: dict[str, Any]) -> list[int]:
    return [p["error_code"] for t in body["responses"] for p in t["partitions"]]


def test_a_move_shows_its_adding_and_removing_replicas_then_completes(kafka: Kafka) -> None:
    assert codes(reassign(kafka, {0: [2, 3, 4]})) == [0]
    moving = kafka.partition("orders", 0)
    assert moving["replica_nodes"] == [2, 3, 4, 1]
    assert (moving["adding_replicas"], moving["removing_replicas"]) == ([4], [1])
    assert kafka.partition("orders", 1)["adding_replicas"] == []
    assert metadata_verify() == []
    # The reassignments in progress, by the RPC and by the GET, alike.
    status, listed = kafka.api.post(LIST, {}, token=kafka.tokens["admin"])
    assert status == 200 and listed["error_code"] == 0
    expected = [
        {
            "name": "orders",
            "partitions": [
                {
                    "partition_index": 0,
                    "replicas": [2, 3, 4, 1],
                    "adding_replicas": [4],
                    "removing_replicas": [1],
                }
            ],
        }
    ]
    assert listed["topics"] == expected
    status, got = kafka.api.get(GET, token=kafka.tokens["admin"])
    assert status == 200 and got["topics"] == expected
    status, named = kafka.api.post(
        LIST,
        {"topics": [{"name": "orders", "partition_indexes": [1, 2]}]},
        token=kafka.tokens["admin"],
    )
    assert named["topics"] == []  # partitions not moving are left out, as Kafka does
    # The leader takes 4 into the ISR: the move completes and 1, the leader, hands over.
    code, _ = kafka.alter_partition("orders", 0, [1, 2, 3, 4])
    assert code == Errors.NEW_LEADER_ELECTED
    done = kafka.partition("orders", 0)
    assert (done["replica_nodes"], done["isr_nodes"], done["leader_id"]) == (
        [2, 3, 4],
        [2, 3, 4],
        2,
    )
    assert (done["adding_replicas"], done["removing_replicas"]) == ([], [])
    assert kafka.api.get(GET, token=kafka.tokens["admin"])[1]["topics"] == []
    assert metadata_verify() == []


def test_cancel_and_replace_and_kafkas_errors(kafka: Kafka) -> None:
    reassign(kafka, {0: [2, 3, 4], 1: [2, 3, 5]})
    reassign(kafka, {1: [2, 3, 4]})  # a new target replaces the one in progress
    assert kafka.partition("orders", 1)["replica_nodes"] == [2, 3, 4, 1, 5]
    assert codes(reassign(kafka, {0: None})) == [0]  # cancel: back to the replicas it had
    back = kafka.partition("orders", 0)
    # Kafka's revert keeps the move's order: the target's kept replicas, then the leaving ones.
    assert back["replica_nodes"] == [2, 3, 1] and back["adding_replicas"] == []
    body = reassign(kafka, {0: None, 2: [], 7: [1, 2, 3]})
    assert codes(body) == [
        Errors.NO_REASSIGNMENT_IN_PROGRESS,
        Errors.INVALID_REPLICA_ASSIGNMENT,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert (
        codes(reassign(kafka, {2: [1, 1, 2], 0: [1, 2, 99]}))
        == [Errors.INVALID_REPLICA_ASSIGNMENT] * 2
    )
    assert codes(reassign(kafka, {2: [1, 2]}, allow_replication_factor_change=False)) == [
        Errors.INVALID_REPLICATION_FACTOR
    ]
    assert metadata_verify() == []


def test_the_moves_are_authorized_on_the_cluster_and_audited(kafka: Kafka, api, tokens) -> None:
    status, body = api.post(
        ALTER,
        {"topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": [4]}]}]},
        token=tokens["alice"],
    )
    assert status == 403 and body["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
    status, body = api.get(GET, token=tokens["alice"])
    assert status == 403
    reassign(kafka, {0: [2, 3, 4]})
    event = AuditEvent.objects.filter(api="AlterPartitionReassignments", http_status=200).first()
    assert event is not None
    assert [r["resource_name"] for r in event.resources] == ["orders-0"]


def test_bad_bodies_are_invalid_requests(kafka: Kafka) -> None:
    for bad in (
        {"topics": [{"name": "orders", "partitions": [{"partition_index": -1, "replicas": [1]}]}]},
        {"topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": "x"}]}]},
        {"topics": "orders"},
        {"topics": [], "extra": 1},
    ):
        status, body = kafka.api.post(ALTER, bad, token=kafka.tokens["admin"])
        assert status == 400 and body["error_code"] == Errors.INVALID_REQUEST, (bad, body)


def test_the_list_reads_one_query_however_many_partitions_move(kafka: Kafka) -> None:
    """One query reads the listing, however many partitions move, between two reads of the
    tables' offset; asked again at that offset, the one query is the offset's (the listing
    kept for it); a commit moves the offset and the listing is read again."""
    kafka.create_topic("wide", [[1, 2, 3]] * 40)
    status, body = kafka.api.post(
        ALTER,
        {
            "topics": [
                {
                    "name": "wide",
                    "partitions": [
                        {"partition_index": i, "replicas": [2, 3, 4]} for i in range(40)
                    ],
                }
            ]
        },
        token=kafka.tokens["admin"],
    )
    assert status == 200 and set(codes(body)) == {0}
    from replicas.selectors import partition_reassignments

    with CaptureQueriesContext(connection) as queries:
        listed = partition_reassignments()
    assert len(queries.captured_queries) == 3
    assert len(listed[0]["partitions"]) == 40
    assert Partition.objects.filter(reassigning=True).count() == 40
    with CaptureQueriesContext(connection) as queries:
        assert partition_reassignments() is listed
    assert [q["sql"] for q in queries.captured_queries] == [
        "SELECT projected_offset FROM cp_cluster WHERE id = 1"
    ]
    cancel = {
        "topics": [{"name": "wide", "partitions": [{"partition_index": 0, "replicas": None}]}]
    }
    status, body = kafka.api.post(ALTER, cancel, token=kafka.tokens["admin"])
    assert status == 200 and set(codes(body)) == {0}  # a commit: the tables' offset moved
    moving = partition_reassignments()
    assert [p["partition_index"] for p in moving[0]["partitions"]] == list(range(1, 40))


def test_a_standby_loading_the_tables_finishes_a_move(kafka: Kafka) -> None:
    """The move is in the log and the tables: a controller that starts from them (a standby
    taking over) completes it on the leader's AlterPartition."""
    from controlplane.runtime.controller import reset_runtime

    reassign(kafka, {0: [2, 3, 4]})
    reset_runtime()  # the next request is handled by a controller loading the tables afresh
    code, _ = kafka.alter_partition("orders", 0, [1, 2, 3, 4])
    assert code == Errors.NEW_LEADER_ELECTED
    assert kafka.partition("orders", 0)["replica_nodes"] == [2, 3, 4]
    assert metadata_verify() == []


def test_a_broker_forwards_them_in_the_rest_envelope_as_the_client(kafka: Kafka) -> None:
    """KIP-590 over REST: both RPCs are forwardable, as Kafka's brokers forward them."""
    from tests.api.test_envelope_api import envelope

    admin = {"type": "User", "name": "admin"}
    moving = {
        "topics": [
            {"name": "orders", "partitions": [{"partition_index": 2, "replicas": [3, 1, 4]}]}
        ]
    }
    status, answer = kafka.api.post(
        "/internal/v1/envelope",
        envelope(moving, api_key=45, principal=admin, forwarding_broker_id=2),
        token=kafka.tokens["broker"],
    )
    assert status == 200 and answer["response_status"] == 200, answer
    assert codes(answer["response_data"]) == [0]
    assert kafka.partition("orders", 2)["adding_replicas"] == [4]
    status, listed = kafka.api.post(
        "/internal/v1/envelope",
        envelope({"topics": None}, api_key=46, principal={"type": "User", "name": "alice"}),
        token=kafka.tokens["broker"],
    )
    # alice may not DESCRIBE the cluster: Kafka's error, inside the envelope's answer.
    assert status == 200 and listed["response_status"] == 403
    assert listed["response_data"]["error_code"] == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert metadata_verify() == []
