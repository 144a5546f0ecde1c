"""Regression tests of the defects found by probing the running server (issue 12).

Each test failed before its fix: authorization on partition and incident lists, forged log
lines, a 500 for a non-iterable body, sessions outliving a re-key, unbounded metric labels,
describe-configs of a thousand resources, deep JSON, Unicode digits, framing, chunked bodies.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from controlplane.models import Principal
from controlplane.principals import principal_create
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

FORGED = "\n2026-11-23 07:00:00,000 INFO controlplane.audit [forged] CreateAcls by User:admin"


def create_topic(api: Any, token: str, name: str, partitions: int = 2) -> None:
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}]}
    status, answer = api.post("/api/v1/create-topics", body, token=token)
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer


def allow_describe(api: Any, token: str, topic: str, principal: str = "User:alice") -> None:
    binding = {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": "DESCRIBE",
        "permission_type": "ALLOW",
    }
    status, answer = api.post("/api/v1/create-acls", {"creations": [binding]}, token=token)
    assert status == 200 and answer["results"][0]["error_code"] == 0, answer


# --- 2. authorization on every resource list ----------------------------------------------
def test_partition_and_incident_lists_answer_only_described_topics(api, tokens, register):
    register(0, unfence=True)
    create_topic(api, tokens["admin"], "demo-orders")
    create_topic(api, tokens["admin"], "public-events")

    status, page = api.get("/api/v1/partitions", token=tokens["alice"])
    assert status == 200 and page["count"] == 0 and page["results"] == []
    status, incidents = api.get("/api/v1/replica-incidents", token=tokens["alice"])
    assert status == 200 and incidents["results"] == []

    allow_describe(api, tokens["admin"], "public-events")
    status, page = api.get("/api/v1/partitions", token=tokens["alice"])
    assert status == 200 and page["count"] == 2
    assert {p["topic"] for p in page["results"]} == {"public-events"}
    status, page = api.get("/api/v1/partitions?topic=demo-orders", token=tokens["alice"])
    assert status == 200 and page["count"] == 0
    _, everything = api.get("/api/v1/partitions", token=tokens["admin"])
    assert everything["count"] == 4


def test_incidents_of_hidden_topics_are_left_out(api, tokens, register):
    epoch = register(0, unfence=True)
    create_topic(api, tokens["admin"], "demo-orders", partitions=1)
    body = {
        "broker_id": 0,
        "broker_epoch": epoch,
        "new_state": 1,
        "reason": "disk",
        "topics": [{"name": "demo-orders", "partitions": [0]}],
    }
    status, answer = api.post("/internal/v1/alter-replica-state", body, token=tokens["broker"])
    assert status == 200 and answer["error_code"] == 0, answer
    from replicas.services import replica_state_apply_pending

    replica_state_apply_pending()
    _, seen_by_admin = api.get("/api/v1/replica-incidents", token=tokens["admin"])
    assert [i["topic"] for i in seen_by_admin["results"]] == ["demo-orders"]
    _, seen_by_alice = api.get("/api/v1/replica-incidents", token=tokens["alice"])
    assert seen_by_alice["results"] == []


# --- 3. log lines that cannot be forged ------------------------------------------------------
def _refused_create_acls(api: Any, token: str) -> None:
    binding = {
        "resource_type": "TOPIC",
        "resource_name": "orders" + FORGED,
        "pattern_type": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    status, _ = api.post("/api/v1/create-acls", {"creations": [binding]}, token=token)
    assert status == 403


def _configured_formatter(name: str) -> logging.Formatter:
    from django.conf import settings

    config = settings.LOGGING["formatters"][name]
    factory = config["()"]
    module, _, attribute = factory.rpartition(".")
    cls = getattr(__import__(module, fromlist=[attribute]), attribute)
    kwargs = {("fmt" if k == "format" else k): v for k, v in config.items() if k != "()"}
    return cls(**kwargs)


def test_a_resource_name_cannot_forge_an_audit_log_line(api, tokens, caplog):
    with caplog.at_level(logging.INFO, logger="controlplane.audit"):
        _refused_create_acls(api, tokens["alice"])
    records = [r for r in caplog.records if r.name == "controlplane.audit"]
    assert records, "the refused request is audited"
    from controlplane.log_context import SafeFormatter

    formatter = _configured_formatter("plain")
    assert isinstance(formatter, SafeFormatter)
    for record in records:
        record.request_id = "-"
        line = formatter.format(record)
        assert "\n" not in line and "\\n2026-11-23 07:00:00,000 INFO" in line, line


def test_json_logs_hold_the_message_verbatim_on_one_line(api, tokens, caplog):
    with caplog.at_level(logging.INFO, logger="controlplane.audit"):
        _refused_create_acls(api, tokens["alice"])
    record = next(r for r in caplog.records if r.name == "controlplane.audit")
    record.request_id = "req-1"
    line = _configured_formatter("json").format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["logger"] == "controlplane.audit" and entry["request_id"] == "req-1"
    assert FORGED in entry["message"]


def test_every_field_and_traceback_line_is_escaped():
    from controlplane.log_context import JsonFormatter, SafeFormatter

    formatter = SafeFormatter("%(levelname)s %(name)s %(message)s")
    try:
        raise ValueError("bad\nERROR forged line")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "x\ny", logging.ERROR, __file__, 1, "a %s", ("b\r\x1b[2J\u2028",), sys.exc_info()
        )
    text = formatter.format(record)
    first, *rest = text.split("\n")
    assert first == "ERROR x\\ny a b\\r\\x1b[2J\\u2028"
    assert rest and all(line.startswith("    ") for line in rest)
    assert any("bad\\nERROR forged line" in line for line in rest)
    assert isinstance(JsonFormatter().format(record), str)


# --- 4. no 500 for a non-iterable body --------------------------------------------------------
@pytest.mark.parametrize("who, status", [("admin", 400), ("broker", 403)])
def test_delete_topics_with_a_non_iterable_names_list(api, tokens, who, status):
    code, answer = api.post("/api/v1/delete-topics", {"topic_names": True}, token=tokens[who])
    assert code == status and answer["error_code"] in (42, 31), answer
    event = AuditEvent.objects.get(api="DeleteTopics")
    assert event.http_status == status


# --- 5. sessions tied to the principal's key -------------------------------------------------
@pytest.mark.parametrize("ending", ["re-key", "delete"])
def test_re_keying_or_deleting_a_principal_ends_its_sessions(client, tokens, ending):
    principal_create(name="bob", super_user=True)
    bob = principal_create(name="bob", super_user=True)  # the key bob logs in with
    ui_login(client, "bob", bob)
    assert client.get("/api/v1/whoami").json()["principal"] == "User:bob"
    assert client.get("/ui/").status_code == 200

    if ending == "re-key":
        principal_create(name="bob", super_user=True)
    else:
        Principal.objects.filter(name="bob").delete()

    assert client.get("/api/v1/whoami").status_code == 401
    page = client.get("/ui/")
    assert page.status_code == 302 and page["Location"].startswith("/ui/login/")


# --- 6. a fixed set of metric label values ---------------------------------------------------
def test_unknown_methods_do_not_grow_the_metrics(client):
    from controlplane.metrics import render

    for method in ("ZZPROBE000", "ZZPROBE001", "PROPFIND"):
        client.generic(method, "/api/v1/whoami")
    text = render().decode()
    assert "ZZPROBE" not in text and "PROPFIND" not in text
    assert 'method="OTHER"' in text


# --- a store that is down is 503, on every path --------------------------------------------
@pytest.mark.parametrize("path", ["/metrics", "/api/v1/brokers", "/ui/", "/ui/topics/"])
def test_a_store_that_is_down_is_503_on_every_path_metrics_and_pages_too(
    client, tokens, monkeypatch, path
):
    """The fault campaign's PostgreSQL restart caught /metrics answering 500 (its collectors'
    query met a connection the server had terminated): outside the API's prefixes, the store
    being down went to Django's 500."""
    from django.db import OperationalError
    from django.db.backends.utils import CursorWrapper

    if path.startswith("/ui/"):
        ui_login(client, "admin", tokens["admin"])
    headers = {"HTTP_AUTHORIZATION": f"Bearer {tokens['admin']}"}

    def terminated(*_args: Any, **_kwargs: Any) -> None:
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(CursorWrapper, "execute", terminated)
    response = client.get(path, **headers)
    monkeypatch.undo()
    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"] == "1"
    assert b"retry" in response.content


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's server-side cursors")
def test_a_store_restart_met_while_closing_a_chunked_read_is_503(api, tokens, monkeypatch):
    """The fault campaign's PostgreSQL restart caught DescribeClientQuotas answering 500: the
    quotas are read in chunks through a server-side cursor, and closing it (in Django's
    `finally`, outside its error wrapping) raised psycopg's own OperationalError. SQLite reads
    them through no such cursor: make test, not test-fast."""
    import psycopg

    quota = {
        "entity": [{"entity_type": "user", "entity_name": "alice"}],
        "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
    }
    status, answer = api.post(
        "/api/v1/alter-client-quotas", {"entries": [quota]}, token=tokens["admin"]
    )
    assert status == 200, answer
    closed = {"server_side": 0}
    close = psycopg.ServerCursor.close

    def server_gone(cursor: Any) -> None:
        close(cursor)
        closed["server_side"] += 1
        raise psycopg.OperationalError(
            "consuming input failed: server closed the connection unexpectedly"
        )

    monkeypatch.setattr(psycopg.ServerCursor, "close", server_gone)
    body = {"components": [], "strict": False}
    status, answer = api.post("/api/v1/describe-client-quotas", body, token=tokens["admin"])
    monkeypatch.undo()
    assert closed["server_side"] >= 1  # the read did go through a server-side cursor
    assert status == 503, answer
    assert "retry" in answer["error_message"]


# --- 7. huge IN lists ------------------------------------------------------------------------
def test_describe_configs_of_two_thousand_resources(api, tokens):
    resources = [
        {"resource_type": "TOPIC", "resource_name": f"t{i}", "configuration_keys": None}
        for i in range(2000)
    ]
    with CaptureQueriesContext(connection) as queries:
        status, answer = api.post(
            "/api/v1/describe-configs", {"resources": resources}, token=tokens["admin"]
        )
    assert status == 200, answer
    assert len(answer["results"]) == 2000
    assert {r["error_code"] for r in answer["results"]} == {3}  # UNKNOWN_TOPIC_OR_PARTITION
    # A few flat IN lists, never one OR per resource (SQLite: "Expression tree is too large").
    assert max(q["sql"].count(" OR ") for q in queries.captured_queries) < 10


# --- 8. deep JSON ----------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [33, 1000, 100_000])
@pytest.mark.parametrize(
    "path, who", [("/api/v1/create-topics", "admin"), ("/internal/v1/broker-heartbeat", "broker")]
)
def test_deeply_nested_json_is_invalid_request(api, tokens, path, who, depth):
    body = "[" * depth + "]" * depth
    status, answer = api.post(path, body, token=tokens[who], raw=True)
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    assert "nested" in answer["error_message"]


# --- 9. Unicode digits -----------------------------------------------------------------------
@pytest.mark.parametrize("value", ["%C2%B2", "%E2%91%A0", "%D9%A3", "-1", "1.5", "x"])
def test_broker_filters_take_ascii_digits_only(api, tokens, value):
    status, answer = api.get(f"/api/v1/replica-incidents?broker={value}", token=tokens["admin"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    status, answer = api.get(f"/api/v1/partitions?broker={value}", token=tokens["admin"])
    assert status in (200, 400), answer


# --- 10. framing -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/ui/login/", "/api/docs/", "/api/v1/whoami"])
def test_no_page_can_be_framed(client, path):
    response = client.get(path)
    assert response["X-Frame-Options"] == "DENY"
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy


def test_swagger_ui_has_no_inline_script(client):
    page = client.get("/api/docs/").content.decode()
    assert "<script>" not in page.replace(" ", "")
    assert client.get("/api/docs/?script=").status_code == 200


# --- 13. chunked bodies ----------------------------------------------------------------------
def _chunked_post(client: Any, token: str, body: bytes, *, terminated: bool) -> Any:
    return client.generic(
        "POST",
        "/api/v1/create-topics",
        b"",
        CONTENT_TYPE="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_TRANSFER_ENCODING="chunked",
        CONTENT_LENGTH="",
        **{"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": terminated},
    )


def test_a_chunked_body_is_read_when_the_server_ends_it(client, tokens, register):
    register(0, unfence=True)
    body = json.dumps({"topics": [{"name": "chunked", "num_partitions": 1}]}).encode()
    response = _chunked_post(client, tokens["admin"], body, terminated=True)
    assert response.status_code == 200, response.content
    assert response.json()["topics"][0]["error_code"] == 0


def test_a_chunked_body_without_an_end_is_refused_clearly(client, tokens):
    body = json.dumps({"topics": [{"name": "chunked"}]}).encode()
    response = _chunked_post(client, tokens["admin"], body, terminated=False)
    assert response.status_code == 411
    assert response.json()["error"] == "INVALID_REQUEST"


# --- 1. the controller suspects its own ingress before the brokers ---------------------------
def test_mass_lapse_is_held_off_loudly_then_fencing_resumes(api, tokens, register):
    from brokers.models import Broker
    from controlplane.metrics import render
    from controlplane.runtime.controller import get_runtime
    from controlplane.runtime.lease import now_ms
    from controlplane.runtime.sessions import local_sessions

    for broker_id in range(4):
        register(broker_id, unfence=True)
    runtime = get_runtime()
    sessions = local_sessions()
    long_ago = now_ms() - 60_000
    for broker_id in range(4):  # nobody was heard for a minute: the ingress, not the brokers
        sessions.touch(broker_id, now_ms=long_ago, metadata_offset=0)

    runtime.tick()
    assert not Broker.objects.filter(fenced=True).exists()
    held = AuditEvent.objects.get(api="FencingHeldOff")
    assert held.principal == "User:controller"
    assert [r["resource_name"] for r in held.resources] == ["0", "1", "2", "3"]
    assert "kafka_controller_fencing_held_off_brokers 4.0" in render().decode()

    for broker_id in range(3):  # heartbeats flow again; broker 3 really is gone
        sessions.touch(broker_id, now_ms=now_ms(), metadata_offset=0)
    runtime.tick()
    assert list(Broker.objects.filter(fenced=True).values_list("broker_id", flat=True)) == [3]
    assert AuditEvent.objects.filter(api="FencingResumed").count() == 1
    assert "kafka_controller_fencing_held_off_brokers 0.0" in render().decode()
