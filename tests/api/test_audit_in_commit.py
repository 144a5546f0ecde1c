"""An audit trail that cannot miss a write: the controller writes the audit row of every request
it applies in the commit of the request's records (issue 10, point 1). The node that answered
writes only the rows of requests that wrote nothing (refusals, validation errors, no-ops).

"The web node dies right after the controller's commit" is played here by taking the web node's
own auditor away (`controlplane.rpc.AUDITORS`): it then never writes a row, as a dead node
would not. The full-stack test (tests/integration/test_audit_in_commit_full_stack.py) kills a
real gunicorn at that moment.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from audit.services import audit_executed
from controlplane.models import MetadataRecord
from controlplane.rpc import AUDITORS
from replicas.services import replica_state_apply_pending
from tests.api.test_replication_api import Kafka

pytestmark = pytest.mark.django_db

SET_RETENTION = {
    "resources": [
        {
            "resource_type": "TOPIC",
            "resource_name": "orders",
            "configs": [{"name": "retention.ms", "config_operation": "SET", "value": "1000"}],
        }
    ]
}


@pytest.fixture
def kafka(api: Any, tokens: dict[str, str], register: Any) -> Kafka:
    cluster = Kafka(api, tokens, register)
    cluster.register(1, 2, 3)
    cluster.create_topic("orders", [[1, 2, 3], [2, 3, 1]])
    return cluster


@pytest.fixture
def web_node_dies_after_the_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answering node never writes an audit row (as one killed after the commit)."""
    monkeypatch.setattr(
        "controlplane.rpc.AUDITORS", [a for a in AUDITORS if a is not audit_executed]
    )


def rows(request_id: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(request_id=request_id))


def test_a_write_is_audited_even_when_the_web_node_never_writes_its_row(
    kafka: Kafka, api: Any, tokens: dict[str, str], web_node_dies_after_the_commit: None
) -> None:
    status, body = api.post(
        "/api/v1/incremental-alter-configs",
        SET_RETENTION,
        token=tokens["admin"],
        headers={"X-Request-ID": "rid-dies", "X-Client-ID": "cli"},
    )
    assert status == 200 and body["responses"][0]["error_code"] == 0, body
    [row] = rows("rid-dies")
    record = MetadataRecord.objects.get(request_id="rid-dies")
    assert (row.first_offset, row.last_offset) == (record.offset, record.offset)
    assert row.api == "IncrementalAlterConfigs"
    assert row.principal == "User:admin"
    assert row.outcome == "SUCCESS" and row.error_code == 0 and row.http_status == 200
    assert row.resources == [{"resource_type": "TOPIC", "resource_name": "orders", "error_code": 0}]
    assert row.time_ms == record.timestamp_ms  # the commit's own timestamp
    assert row.duration_ms >= 0


def test_without_the_commit_audit_the_same_death_loses_the_row(
    kafka: Kafka,
    api: Any,
    tokens: dict[str, str],
    web_node_dies_after_the_commit: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The test above can fail: with the controller's part taken away too, nothing audits."""
    monkeypatch.setattr("controlplane.runtime.metadata_log.COMMIT_AUDIT", [])
    monkeypatch.setattr("controlplane.runtime.batch.COMMIT_AUDIT", [])
    status, _ = api.post(
        "/api/v1/incremental-alter-configs",
        SET_RETENTION,
        token=tokens["admin"],
        headers={"X-Request-ID": "rid-lost"},
    )
    assert status == 200
    assert MetadataRecord.objects.filter(request_id="rid-lost").exists()
    assert rows("rid-lost") == []


def test_the_row_is_inserted_inside_the_commit_transaction(
    kafka: Kafka, api: Any, tokens: dict[str, str]
) -> None:
    with CaptureQueriesContext(connection) as queries:
        status, _ = api.post(
            "/api/v1/incremental-alter-configs",
            SET_RETENTION,
            token=tokens["admin"],
            headers={"X-Request-ID": "rid-tx"},
        )
    assert status == 200
    statements = [q["sql"] for q in queries.captured_queries]
    # The log's transaction opens with its fence (one conditional update of the cluster row,
    # which locks it), and the audit row is inserted after the log's records, before COMMIT.
    fence = next(
        i for i, s in enumerate(statements) if s.startswith("UPDATE cp_cluster SET last_offset")
    )
    log = next(i for i, s in enumerate(statements) if "INSERT INTO cp_metadata_record" in s)
    audit = [i for i, s in enumerate(statements) if "INSERT INTO cp_audit_event" in s]
    assert len(audit) == 1, "one audit insert, in the commit; none after the answer"
    assert fence < log < audit[0]
    # Each of the commit's two transactions touches the cluster row once: its fence.
    cluster = [s for s in statements if "cp_cluster" in s and "SELECT" not in s.split()[0]]
    assert [s.split(" SET ")[1].split(" ")[0] for s in cluster] == [
        "last_offset",
        "projected_offset",
    ], cluster
    assert not [s for s in statements if "FOR UPDATE" in s and "cp_cluster" in s]
    assert len(rows("rid-tx")) == 1


def test_a_partly_refused_request_names_refused_and_applied_items_in_its_row(
    kafka: Kafka, api: Any, tokens: dict[str, str], web_node_dies_after_the_commit: None
) -> None:
    """Per-topic refusals are decided before the controller call; the controller's row names
    them with their error beside what it applied, as the client's answer does."""
    status, created = api.post(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "mine-",
                    "pattern_type": "PREFIXED",
                    "principal": "User:alice",
                    "host": "*",
                    "operation": "CREATE",
                    "permission_type": "ALLOW",
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and created["results"][0]["error_code"] == 0
    body = {
        "topics": [
            {"name": "mine-1", "num_partitions": 1, "replication_factor": 1},
            {"name": "theirs", "num_partitions": 1, "replication_factor": 1},
        ]
    }
    status, answer = api.post(
        "/api/v1/create-topics", body, token=tokens["alice"], headers={"X-Request-ID": "rid-part"}
    )
    assert status == 200
    codes = {t["name"]: t["error_code"] for t in answer["topics"]}
    assert codes == {"mine-1": 0, "theirs": 29}
    [row] = rows("rid-part")
    assert row.outcome == "PARTIAL" and row.error_code == 29
    assert sorted((r["resource_name"], r["error_code"]) for r in row.resources) == [
        ("mine-1", 0),
        ("theirs", 29),
    ]
    assert row.first_offset is not None


def test_an_envelope_write_keeps_its_forwarding_broker_in_the_commit_row(
    kafka: Kafka, api: Any, tokens: dict[str, str], web_node_dies_after_the_commit: None
) -> None:
    status, body = api.post(
        "/internal/v1/envelope",
        {
            "request_header": {
                "request_api_key": 44,
                "request_api_version": 1,
                "client_id": "old-client",
                "correlation_id": 7,
            },
            "request_data": SET_RETENTION,
            "request_principal": {"type": "User", "name": "admin"},
            "client_host_address": "10.0.0.9",
            "forwarding_broker_id": 2,
        },
        token=tokens["broker"],
        headers={"X-Request-ID": "rid-env"},
    )
    assert status == 200 and body["response_data"]["responses"][0]["error_code"] == 0, body
    [row] = rows("rid-env")
    assert (row.principal, row.client_id, row.client_host) == (
        "User:admin",
        "old-client",
        "10.0.0.9",
    )
    assert (row.forwarding_principal, row.forwarding_broker_id) == ("User:broker-a", 2)
    assert row.forwarding_host  # the broker's own address


def test_refusals_and_no_ops_are_still_audited_by_the_answering_node(
    kafka: Kafka, api: Any, tokens: dict[str, str]
) -> None:
    status, _ = api.post(
        "/api/v1/incremental-alter-configs",
        SET_RETENTION,
        token=tokens["alice"],
        headers={"X-Request-ID": "rid-denied"},
    )
    assert status == 200
    [denied] = rows("rid-denied")
    assert denied.outcome == "DENIED" and denied.first_offset is None
    status, _ = api.post(
        "/api/v1/incremental-alter-configs",
        {**SET_RETENTION, "validate_only": True},
        token=tokens["admin"],
        headers={"X-Request-ID": "rid-validate"},
    )
    assert status == 200
    [validated] = rows("rid-validate")
    assert validated.outcome == "SUCCESS" and validated.first_offset is None


def test_a_retried_request_id_keeps_one_row(kafka: Kafka, api: Any, tokens: dict[str, str]) -> None:
    for _ in range(3):
        status, _ = api.post(
            "/api/v1/incremental-alter-configs",
            SET_RETENTION,
            token=tokens["admin"],
            headers={"X-Request-ID": "rid-retry"},
        )
        assert status == 200
    assert len(rows("rid-retry")) == 1


def test_an_applied_alter_replica_state_is_audited_with_its_broker_and_log_dir(
    kafka: Kafka, api: Any, tokens: dict[str, str]
) -> None:
    log_dir = "5c7e2a52-7d57-4c1e-9a70-1d3c1c1d0e01"
    status, body = api.post(
        "/internal/v1/alter-replica-state",
        {
            "broker_id": 2,
            "broker_epoch": kafka.epochs[2],
            "new_state": 1,
            "reason": "disk gone",
            "log_dir": log_dir,
            "topics": [{"name": "orders", "partitions": [0, 1]}],
        },
        token=tokens["broker"],
        headers={"X-Request-ID": "rid-ars"},
    )
    assert status == 200 and body["error_code"] == 0, body
    replica_state_apply_pending()
    [row] = rows("rid-ars")
    assert row.api == "AlterReplicaState" and row.principal == "User:broker-a"
    assert row.outcome == "SUCCESS" and row.first_offset is not None
    named = {(r["resource_type"], r["resource_name"]) for r in row.resources}
    assert named == {
        ("BROKER", "2"),
        ("LOG_DIR", log_dir),
        ("PARTITION", "orders-0"),
        ("PARTITION", "orders-1"),
    }
    changes = MetadataRecord.objects.filter(request_id="rid-ars")
    # The failed dir on the broker's registration, then the two partitions' changes.
    assert changes.count() == row.last_offset - row.first_offset + 1 == 3


def test_a_log_dir_that_is_not_a_uuid_is_refused(
    kafka: Kafka, api: Any, tokens: dict[str, str]
) -> None:
    status, body = api.post(
        "/internal/v1/alter-replica-state",
        {
            "broker_id": 2,
            "broker_epoch": kafka.epochs[2],
            "new_state": 1,
            "log_dir": "../../etc",
            "topics": [{"name": "orders", "partitions": [0]}],
        },
        token=tokens["broker"],
    )
    assert (
        status == 400 and body["error"] == "INVALID_REQUEST" and "log_dir" in body["error_message"]
    )


def test_a_commit_that_fails_writes_neither_records_nor_the_row(
    kafka: Kafka, api: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same transaction: a commit refused after the audit insert rolls the row back too."""
    from controlplane.runtime import metadata_log

    def fenced(*args: Any, **kwargs: Any) -> None:
        raise metadata_log.ApiError(metadata_log.Errors.NOT_CONTROLLER, "fenced for the test")

    original = metadata_log._commit

    def commit_then_fail(lease: Any, delta: Any, times: Any, statements: Any, *rest: Any) -> None:
        original(lease, delta, times, lambda: iter((*statements(), fenced)), *rest)

    monkeypatch.setattr(metadata_log, "_commit", commit_then_fail)
    monkeypatch.setattr("controlplane.services.RETRY_BACKOFF_S", 0.0)
    monkeypatch.setattr("django.conf.settings.CP_REQUEST_TIMEOUT_MS", 300)
    before = MetadataRecord.objects.count()
    status, _ = api.post(
        "/api/v1/incremental-alter-configs",
        SET_RETENTION,
        token=tokens["admin"],
        headers={"X-Request-ID": "rid-fail"},
    )
    assert status in (503, 504)
    assert MetadataRecord.objects.count() == before
    assert [r.first_offset for r in rows("rid-fail")] == [None]  # the refusal, audited by the node
