"""The broker lifecycle and the read API over HTTP (Django's test client, the real database)."""

from __future__ import annotations

import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from brokers.models import Broker
from controlplane.controller.features import BOOTSTRAP_FEATURES
from controlplane.models import AppliedRequest, Cluster, MetadataRecord
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.lease import now_ms
from controlplane.runtime.sessions import session_store
from controlplane.runtime.single_writer import projection_writes_allowed
from tests.conftest import heartbeat_body, registration_body
from tests.controller_events import create_acls

pytestmark = pytest.mark.django_db

BROKER_1 = {"resource_type": "BROKER", "resource_name": "1", "error_code": 0}
REG = "/internal/v1/broker-registration"
BEAT = "/internal/v1/broker-heartbeat"


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def test_registration_starts_fenced_and_a_caught_up_heartbeat_unfences(api, tokens, cluster_id):
    status, body = api.post(
        REG,
        registration_body(1, cluster_id),
        token=tokens["broker"],
        headers={"X-Request-ID": "reg-1", "X-Client-ID": "sim"},
    )
    assert status == 200 and body["error_code"] == 0
    epoch = body["broker_epoch"]
    record = MetadataRecord.objects.get(offset=epoch)
    assert record.record_type == "RegisterBrokerRecord"  # the epoch is the record's offset
    assert (record.principal, record.request_id, record.client_id) == (
        "User:broker-a",
        "reg-1",
        "sim",
    )
    assert Broker.objects.get(pk=1).fenced

    status, behind = api.post(BEAT, heartbeat_body(1, epoch, epoch - 1), token=tokens["broker"])
    assert behind == {
        "error_code": 0,
        "error_message": None,
        "is_caught_up": False,
        "is_fenced": True,
        "should_shut_down": False,
    }
    status, caught_up = api.post(BEAT, heartbeat_body(1, epoch, epoch), token=tokens["broker"])
    assert caught_up["is_fenced"] is False and caught_up["is_caught_up"] is True
    assert Broker.objects.get(pk=1).state == "UNFENCED"
    assert MetadataRecord.objects.get(offset=log_end()).record_type == (
        "BrokerRegistrationChangeRecord"
    )
    # The audit trail names the broker's writes, each in the commit of its records (the
    # controller listener's rule too: tests/wire/test_broker_lifecycle.py).
    audited = AuditEvent.objects.order_by("id")
    assert [
        (e.api, e.principal, e.client_id, e.request_id, e.resources, e.first_offset)
        for e in audited
    ] == [
        ("BrokerRegistration", "User:broker-a", "sim", "reg-1", [BROKER_1], epoch),
        ("BrokerHeartbeat", "User:broker-a", "", audited[1].request_id, [BROKER_1], log_end()),
    ]


def test_heartbeats_that_change_nothing_write_no_record(api, tokens, register):
    epoch = register(1, unfence=True)
    end = log_end()
    audited = AuditEvent.objects.count()
    for offset in range(20):
        status, body = api.post(
            BEAT, heartbeat_body(1, epoch, end + offset), token=tokens["broker"]
        )
        assert status == 200 and body["is_fenced"] is False
    assert log_end() == end
    assert AuditEvent.objects.count() == audited  # nothing written: no row either
    assert session_store().get(1).metadata_offset == end + 19


def test_heartbeat_fast_path_costs_no_query_and_falls_back_to_the_table(api, tokens, register):
    from controlplane.principals import token_cache

    epoch = register(1, unfence=True)
    api.post(BEAT, heartbeat_body(1, epoch, epoch), token=tokens["broker"])  # warm ACL cache
    with CaptureQueriesContext(connection) as queries:
        _, answer = api.post(BEAT, heartbeat_body(1, epoch, epoch), token=tokens["broker"])
    assert answer["is_fenced"] is False
    assert len(queries) == 0, [q["sql"] for q in queries]  # token cached, epoch from the mirror
    token_cache.clear()
    with CaptureQueriesContext(connection) as queries:
        _, answer = api.post(BEAT, heartbeat_body(1, epoch, epoch), token=tokens["broker"])
    assert answer["is_fenced"] is False and len(queries) == 1  # the token, once

    session_store().replace_mirror([])  # e.g. Redis restarted: the brokers table decides
    with CaptureQueriesContext(connection) as queries:
        _, answer = api.post(BEAT, heartbeat_body(1, epoch, epoch + 3), token=tokens["broker"])
    assert answer["is_fenced"] is False and len(queries) == 1
    assert session_store().get(1).metadata_offset == epoch + 3


def test_fenced_broker_asking_to_shut_down_is_answered_by_the_web_node(api, tokens, register):
    epoch = register(1)
    api.post(BEAT, heartbeat_body(1, epoch, epoch - 1), token=tokens["broker"])  # warm ACL cache
    end = log_end()
    with CaptureQueriesContext(connection) as queries:
        _, answer = api.post(
            BEAT, heartbeat_body(1, epoch, epoch - 1, want_shut_down=True), token=tokens["broker"]
        )
    # The controller would answer the same and write nothing (it is fenced already).
    assert answer == {
        "error_code": 0,
        "error_message": None,
        "is_caught_up": False,
        "is_fenced": True,  # Kafka's SHUTDOWN_NOW is fenced
        "should_shut_down": True,
    }
    assert len(queries) == 0 and log_end() == end


def test_stale_epoch_and_unknown_broker(api, tokens, register):
    epoch = register(1)
    _, wrong = api.post(BEAT, heartbeat_body(1, epoch + 5, 0), token=tokens["broker"])
    assert wrong["error_code"] == 77 and wrong["error"] == "STALE_BROKER_EPOCH"
    _, unknown = api.post(BEAT, heartbeat_body(42, 0, 0), token=tokens["broker"])
    assert unknown["error_code"] == 77
    assert "No broker registration found for broker 42" in unknown["error_message"]


def test_duplicate_and_inconsistent_registrations(api, tokens, cluster_id, register):
    register(1)
    end = log_end()
    _, duplicate = api.post(REG, registration_body(1, cluster_id), token=tokens["broker"])
    assert duplicate["error_code"] == 101  # DUPLICATE_BROKER_REGISTRATION: live session
    _, other = api.post(REG, registration_body(2, "not-this-cluster"), token=tokens["broker"])
    assert other["error_code"] == 104  # INCONSISTENT_CLUSTER_ID
    assert log_end() == end


def test_same_incarnation_reregistration_keeps_the_epoch(api, tokens, cluster_id):
    body = registration_body(3, cluster_id)
    _, first = api.post(REG, body, token=tokens["broker"])
    _, again = api.post(REG, body, token=tokens["broker"])
    assert first["broker_epoch"] == again["broker_epoch"]
    assert MetadataRecord.objects.filter(record_type="RegisterBrokerRecord").count() == 1


def test_want_fence_and_controlled_shutdown(api, tokens, register):
    e1 = register(1, unfence=True)
    e2 = register(2, unfence=True)
    _, fenced = api.post(
        BEAT, heartbeat_body(1, e1, log_end(), want_fence=True), token=tokens["broker"]
    )
    assert fenced["is_fenced"] is True and Broker.objects.get(pk=1).fenced
    _, shut = api.post(
        BEAT, heartbeat_body(2, e2, log_end(), want_shut_down=True), token=tokens["broker"]
    )
    assert shut["should_shut_down"] is True  # no leaderships to move: SHUTDOWN_NOW at once
    assert Broker.objects.get(pk=2).fenced


def test_session_expiry_fences_once_and_then_writes_nothing(api, tokens, register):
    epoch = register(1, unfence=True)
    register(2, unfence=True)
    runtime = get_runtime()
    session_store().touch(1, now_ms=now_ms() - 60_000, metadata_offset=epoch)
    response = runtime.handle(ControllerEvent("FenceStaleBrokers")).response
    assert response["fenced_brokers"] == [1]
    assert Broker.objects.get(pk=1).fenced and not Broker.objects.get(pk=2).fenced
    end = log_end()
    assert runtime.handle(ControllerEvent("FenceStaleBrokers")).response["fenced_brokers"] == []
    assert log_end() == end
    record = MetadataRecord.objects.get(offset=end)
    assert record.principal == "User:controller" and record.data["fenced"] == 1
    # The broker comes back: heartbeats again and is unfenced with the same epoch.
    _, back = api.post(BEAT, heartbeat_body(1, epoch, end), token=tokens["broker"])
    assert back["is_fenced"] is False


def test_unregister_broker_auth_errors_and_idempotent_retry(api, tokens, register):
    register(5)
    body = {"broker_id": 5}
    status, refused = api.post("/api/v1/unregister-broker", body, token=tokens["broker"])
    assert status == 403 and refused["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    status, refused = api.post("/api/v1/unregister-broker", body, token=tokens["alice"])
    assert status == 403 and refused["error_code"] == 31
    headers = {"X-Request-ID": "unregister-5"}
    status, done = api.post(
        "/api/v1/unregister-broker", body, token=tokens["admin"], headers=headers
    )
    assert status == 200 and done["error_code"] == 0
    status, retried = api.post(
        "/api/v1/unregister-broker", body, token=tokens["admin"], headers=headers
    )
    assert retried == done  # the same request id applies once and answers the same
    assert MetadataRecord.objects.filter(record_type="UnregisterBrokerRecord").count() == 1
    assert AppliedRequest.objects.filter(request_id="unregister-5").exists()
    _, unknown = api.post("/api/v1/unregister-broker", body, token=tokens["admin"])
    assert unknown["error_code"] == 102 and unknown["error"] == "BROKER_ID_NOT_REGISTERED"


def test_authentication_and_authorization(api, tokens):
    status, body = api.get("/api/v1/cluster", token=None)
    assert status == 401 and body["error_code"] == 58
    status, body = api.get("/api/v1/cluster", token="not-a-token")
    assert status == 401
    status, body = api.post(REG, {}, token=tokens["alice"])
    assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    status, body = api.get("/api/v1/cluster", token=tokens["alice"])
    assert status == 403  # no DESCRIBE on the cluster and allow.everyone.if.no.acl.found=false
    status, body = api.get("/api/v1/whoami", token=tokens["alice"])
    assert status == 200 and body["principal"] == "User:alice"


def acl(principal: str, operation: str, permission: str = "ALLOW") -> dict[str, str]:
    return {
        "resource_type": "CLUSTER",
        "resource_name": "kafka-cluster",
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": permission,
    }


def test_acls_from_the_log_drive_authorization(api, tokens, register):
    assert create_acls(acl("User:alice", "DESCRIBE"))["results"] == [
        {"error_code": 0, "error_message": None}
    ]
    status, _ = api.get("/api/v1/cluster", token=tokens["alice"])
    assert status == 200
    register(1)
    create_acls(acl("User:broker-a", "CLUSTER_ACTION", "DENY"))
    status, body = api.post(BEAT, heartbeat_body(1, 0, 0), token=tokens["broker"])
    assert status == 403 and body["error_code"] == 31  # DENY beats the implicit ALLOW
    bad = create_acls(acl("User:alice", "ANY"))
    assert bad["results"][0]["error_code"] == 42


BAD_REGISTRATIONS = [
    ("{not json", "Malformed request body"),
    ('["a", "list"]', "Expected a JSON object"),
    ({"broker_id": "1"}, "broker_id"),
    ({"broker_id": True}, "broker_id"),
    ({"broker_id": -1}, "broker_id"),
    ({"broker_id": 2**31}, "broker_id"),
    ({"pod": "zookeeper"}, "pod"),
    ({"incarnation_id": "nope"}, "incarnation_id"),
    ({"log_dirs": ["nope"]}, "log_dirs"),
    ({"listeners": []}, "listeners"),
    (
        {"listeners": [{"name": "X", "host": "h", "port": 70000, "security_protocol": "SSL"}]},
        "port",
    ),
    (
        {"listeners": [{"name": "X", "host": "h", "port": 1, "security_protocol": "FOO"}]},
        "security_protocol",
    ),
    ({"surprise": 1}, "surprise: Unknown field"),
    ({"cluster_id": None}, "cluster_id"),
]


@pytest.mark.parametrize(("change", "named"), BAD_REGISTRATIONS)
def test_bad_registration_bodies_are_400_invalid_request(api, tokens, cluster_id, change, named):
    if isinstance(change, str):
        status, body = api.post(REG, change, token=tokens["broker"], raw=True)
    else:
        status, body = api.post(
            REG, {**registration_body(1, cluster_id), **change}, token=tokens["broker"]
        )
    assert status == 400
    assert body["error_code"] == 42 and body["error"] == "INVALID_REQUEST"
    assert named in body["error_message"]
    assert log_end() == -1 and not Broker.objects.exists()


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"broker_id": 1, "broker_epoch": 0}, "current_metadata_offset"),
        (
            {"broker_id": 1, "broker_epoch": 0, "current_metadata_offset": 0, "want_fence": "yes"},
            "want_fence",
        ),
        (
            {"broker_id": 1, "broker_epoch": 0, "current_metadata_offset": 0, "want_fence": 1},
            "want_fence",
        ),
        ({"broker_id": 1, "broker_epoch": -7, "current_metadata_offset": 0}, "broker_epoch"),
    ],
)
def test_bad_heartbeats_are_400(api, tokens, register, body, named):
    register(1)
    end = log_end()
    status, answer = api.post(BEAT, body, token=tokens["broker"])
    assert status == 400 and answer["error_code"] == 42 and named in answer["error_message"]
    assert log_end() == end


def test_huge_bodies_are_refused_before_parsing(api, tokens, cluster_id):
    body = registration_body(1, cluster_id, rack="x" * 2_000_000)
    status, answer = api.post(REG, body, token=tokens["broker"])
    assert status == 413 and answer["error_code"] == 42 and "exceeds" in answer["error_message"]
    assert not Broker.objects.exists()


def test_unknown_api_path_and_method_answer_json(api, tokens):
    status, body = api.get("/api/v1/no-such-thing", token=tokens["admin"])
    assert status == 404 and body["error_code"] == 42
    status, body = api.get(REG, token=tokens["broker"])
    assert status == 405 and body["error_code"] == 42


def test_no_active_controller_is_503_with_retry_after(api, tokens, cluster_id, settings):
    settings.CP_REQUEST_TIMEOUT_MS = 300
    Cluster.objects.filter(pk=1).update(
        lease_holder="another-node", controller_epoch=7, lease_expires_ms=now_ms() + 60_000
    )
    response = api.client.post(
        REG,
        registration_body(1, cluster_id),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {tokens['broker']}",
    )
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert response.json()["error"] == "NOT_CONTROLLER"


def test_metadata_fetch_pages_and_validates(api, tokens, register):
    for broker_id in range(3):
        register(broker_id)
    first = len(BOOTSTRAP_FEATURES)  # the bootstrap FeatureLevelRecords come first
    status, page = api.get(
        f"/internal/v1/metadata?after_offset={first}&max_records=1", token=tokens["broker"]
    )
    assert status == 200 and [r["offset"] for r in page["records"]] == [first + 1]
    assert page["last_offset"] == first + 2 and page["controller_epoch"] == 1
    assert page["records"][0]["type"] == "RegisterBrokerRecord"
    status, empty = api.get(
        f"/internal/v1/metadata?after_offset={first + 2}&wait_ms=50", token=tokens["broker"]
    )
    assert status == 200 and empty["records"] == []
    status, bad = api.get("/internal/v1/metadata?after_offset=abc", token=tokens["broker"])
    assert status == 400 and "after_offset" in bad["error_message"]
    status, bad = api.get("/internal/v1/metadata?max_records=0", token=tokens["broker"])
    assert status == 400 and "max_records" in bad["error_message"]


@pytest.mark.django_db(transaction=True)
def test_metadata_long_poll_wakes_on_commit(api, tokens, register):
    register(1)
    end = log_end()

    def register_later() -> None:
        time.sleep(0.3)
        try:
            register(2)
        finally:
            connection.close()  # this thread's own connection

    writer = threading.Thread(target=register_later)
    started = time.monotonic()
    writer.start()
    status, page = api.get(
        f"/internal/v1/metadata?after_offset={end}&wait_ms=5000", token=tokens["broker"]
    )
    writer.join()
    waited = time.monotonic() - started
    assert status == 200 and [r["offset"] for r in page["records"]] == [end + 1]
    assert waited < 4  # woken by the commit, not by the end of the wait


def test_metadata_fetch_costs_one_query_per_commit_whatever_the_cluster_size(api, tokens, register):
    def fetch_queries() -> list[int]:
        # The head alone first (read once for this commit), to warm the token cache without
        # warming the records' answer.
        api.get(f"/internal/v1/metadata?after_offset={2**62}", token=tokens["broker"])
        counts = []
        for _ in range(2):  # encoded once, then served from the fetch cache
            with CaptureQueriesContext(connection) as captured:
                status, _ = api.get("/internal/v1/metadata?after_offset=-1", token=tokens["broker"])
                assert status == 200
            counts.append(len(captured))
        return counts

    register(0)
    few = fetch_queries()
    for broker_id in range(1, 12):
        register(broker_id, unfence=True)
    # The records, then nothing at all: the head is read once per commit notice, the answer
    # is kept for it.
    assert fetch_queries() == few == [1, 0]


def test_metadata_log_filters_and_pagination(api, tokens, register):
    for broker_id in range(3):
        register(broker_id, unfence=True)
    status, page = api.get(
        "/api/v1/metadata-log?type=RegisterBrokerRecord&page_size=2", token=tokens["admin"]
    )
    assert status == 200 and page["count"] == 3 and len(page["results"]) == 2
    assert page["next"] is not None
    _, ranged = api.get("/api/v1/metadata-log?offset_min=2&offset_max=3", token=tokens["admin"])
    assert [r["offset"] for r in ranged["results"]] == [2, 3]
    _, by_principal = api.get("/api/v1/metadata-log?principal=User:nobody", token=tokens["admin"])
    assert by_principal["count"] == 0


def test_log_filters_by_request_id_and_broker_find_every_row_that_carries_one(
    api, tokens, register
):
    """The log's request id and broker indexes hold only the rows that carry one (most of a
    large commit's records carry neither), its type index only the records of other types than
    the partitions': the filters still find every such row, and on PostgreSQL they look the
    others up by those indexes, not by scanning the log."""
    for broker_id in range(3):
        register(broker_id, unfence=True)
    for name in ("filters-a", "filters-b"):
        status, answer = api.post(
            "/api/v1/create-topics",
            {"topics": [{"name": name, "num_partitions": 3, "replication_factor": 2}]},
            token=tokens["admin"],
            headers={"X-Request-ID": f"create-{name}"},
        )
        assert status == 200 and answer["topics"][0]["error_code"] == 0, answer
    rows = list(MetadataRecord.objects.values_list("offset", "request_id", "broker_id"))
    with_id = [offset for offset, request_id, _ in rows if request_id == "create-filters-a"]
    of_broker = [offset for offset, _, broker_id in rows if broker_id == 1]
    assert len(with_id) == 4 and of_broker  # the topic and its 3 partitions; the broker's
    assert any(request_id == "" for _, request_id, _ in rows)  # the elections, the fencing
    _, by_id = api.get(
        "/api/v1/metadata-log?request_id=create-filters-a&page_size=100", token=tokens["admin"]
    )
    assert [r["offset"] for r in by_id["results"]] == with_id
    _, by_broker = api.get("/api/v1/metadata-log?broker_id=1&page_size=100", token=tokens["admin"])
    assert [r["offset"] for r in by_broker["results"]] == of_broker
    # The type index leaves out the partitions' records; the filter finds them all the same.
    types = {
        offset: record_type
        for offset, record_type in MetadataRecord.objects.values_list("offset", "record_type")
    }
    for record_type in ("TopicRecord", "PartitionRecord"):
        _, by_type = api.get(
            f"/api/v1/metadata-log?type={record_type}&page_size=100", token=tokens["admin"]
        )
        expected = sorted(o for o, t in types.items() if t == record_type)
        assert [r["offset"] for r in by_type["results"]] == expected and expected
    if connection.vendor != "postgresql":
        return  # SQLite's planner is not the one a large log runs on
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a test-sized log is scanned cheaply
        for where, index in (
            ("request_id = 'create-filters-a'", "cp_log_request"),
            ("broker_id = 1", "cp_log_broker"),
            ("record_type = 'TopicRecord'", "cp_log_type"),
            ("record_type IN ('ConfigRecord', 'AccessControlEntryRecord')", "cp_log_type"),
        ):
            cursor.execute(f"EXPLAIN SELECT * FROM cp_metadata_record WHERE {where}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert index in plan, plan
        # The partitions' records are not in it: a large commit's rows cost that index nothing.
        cursor.execute(
            "SELECT pg_get_expr(indpred, indrelid) FROM pg_index"
            " WHERE indexrelid = 'cp_log_type'::regclass"
        )
        (predicate,) = cursor.fetchone()
        assert "PartitionRecord" in predicate and "PartitionChangeRecord" in predicate, predicate


def test_list_views_do_not_grow_queries_with_rows(api, tokens, register):
    def queries(path: str) -> int:
        api.get(path, token=tokens["admin"])  # warm caches (the token's principal)
        with CaptureQueriesContext(connection) as captured:
            status, _ = api.get(path, token=tokens["admin"])
            assert status == 200
        return len(captured)

    for broker_id in range(3):
        register(broker_id, unfence=True)
    few = {p: queries(p) for p in ("/api/v1/brokers", "/api/v1/cluster", "/api/v1/metadata-log")}
    for broker_id in range(3, 15):
        register(broker_id, unfence=True)
    many = {p: queries(p) for p in few}
    assert many == few


def test_cluster_and_broker_reads(api, tokens, register):
    register(1, unfence=True)
    register(2, pod="canary-broker")
    _, cluster = api.get("/api/v1/cluster", token=tokens["admin"])
    assert cluster["controller_id"] == 3000 and cluster["controller_epoch"] == 1
    assert cluster["broker_states"] == {"FENCED": 1, "UNFENCED": 1, "CONTROLLED_SHUTDOWN": 0}
    assert cluster["broker_pods"] == {"broker": 1, "canary-broker": 1}
    assert {b["broker_id"]: b["pod"] for b in cluster["brokers"]} == {
        1: "broker",
        2: "canary-broker",
    }
    _, one = api.get("/api/v1/brokers/1", token=tokens["admin"])
    assert one["state"] == "UNFENCED" and one["listeners"][0]["port"] == 9092
    status, missing = api.get("/api/v1/brokers/99", token=tokens["admin"])
    assert status == 404 and missing["error_code"] == 42
    _, canaries = api.get("/api/v1/brokers?pod=canary-broker", token=tokens["admin"])
    assert [b["broker_id"] for b in canaries["results"]] == [2]


def test_schema_docs_and_metrics(api, tokens, register, client):
    register(1)
    schema = client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/internal/v1/broker-heartbeat" in paths and "/api/v1/metadata-log" in paths
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    metrics = client.get("/metrics").content.decode()
    assert "kafka_controller_kafkacontroller_fencedbrokercount 1.0" in metrics
    assert "kafka_controller_controller_epoch 1.0" in metrics
    assert "cp_http_requests_total" in metrics


def test_request_id_is_echoed(client):
    response = client.get("/api/v1/whoami", HTTP_X_REQUEST_ID="trace-me-1")
    assert response["X-Request-ID"] == "trace-me-1"


def test_verify_metadata_is_clean_and_catches_tampering(register, api, tokens):
    register(1, unfence=True)
    register(2)
    out = StringIO()
    call_command("verify_metadata", stdout=out)
    assert "replays to exactly" in out.getvalue()
    with projection_writes_allowed():  # tampering on purpose
        Broker.objects.filter(pk=2).update(rack="tampered")
    err = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("verify_metadata", stderr=err)
    assert exited.value.code == 1
    assert "brokers.2.rack" in err.getvalue() and "tampered" in err.getvalue()


def test_create_principal_prints_the_token_last(db):
    from controlplane.principals import principal_by_token

    out = StringIO()
    call_command("create_principal", "carol", "--broker", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    principal = principal_by_token(token)
    assert principal is not None and principal.principal == "User:carol" and principal.is_broker


def test_a_token_never_starts_with_a_dash_which_a_command_line_would_take_for_an_option(
    db, monkeypatch
):
    """One token_urlsafe in 64 starts with "-": `simulate_brokers --token -x...` then failed
    ("expected one argument") and a CI stack's brokers never came up."""
    import secrets

    from controlplane.principals import principal_by_token, principal_create

    drawn = iter(["-dash-first", "_underscore-first"])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda _n: next(drawn))
    token = principal_create(name="dave", broker=True)
    assert token == "_underscore-first"
    assert principal_by_token(token) is not None
    monkeypatch.undo()
    assert not any(principal_create(name="erin").startswith("-") for _ in range(200))


@pytest.mark.parametrize("page", ["", "0", "-1", "x", "last"])
def test_a_page_that_is_not_a_whole_number_from_1_is_refused(api, tokens, page):
    """Found by schemathesis: `?page=` (empty) was taken for page 1."""
    status, answer = api.get(f"/api/v1/brokers?page={page}", token=tokens["admin"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    assert api.get("/api/v1/brokers?page=1", token=tokens["admin"])[0] == 200
