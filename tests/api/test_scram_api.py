"""SCRAM users over REST (KIP-554): AlterUserScramCredentials and DescribeUserScramCredentials
with Kafka's bodies, Kafka's per-user errors, nothing half-applied, every change audited, and no
salt, salted password or key in any answer, audit row, log page or metadata fetch."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest

from audit.models import AuditEvent
from controlplane.controller.scram.formatter import salted_password
from controlplane.models import MetadataRecord
from controlplane.runtime.replay import metadata_verify
from security.models import ScramCredential
from tests.conftest import Api

pytestmark = pytest.mark.django_db

ALTER = "/api/v1/alter-user-scram-credentials"
DESCRIBE = "/api/v1/describe-user-scram-credentials"
SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def upsertion(
    name: str, password: str, mechanism: str = SHA256, iterations: int = 8192
) -> dict[str, Any]:
    """What Kafka's admin client sends for a password: a fresh salt and the salted password."""
    salt = os.urandom(32)
    salted = salted_password(mechanism, password, salt, iterations) if iterations > 0 else b"x"
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b64(salt),
        "salted_password": b64(salted),
    }


def alter(api: Api, token: str, **body: Any) -> tuple[int, dict[str, Any]]:
    status, answer = api.post(ALTER, body, token=token)
    return status, dict(answer)


def results(answer: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {r["user"]: (r["error"], r["error_message"]) for r in answer["results"]}


def describe(api: Api, token: str, users: Any = None) -> dict[str, Any]:
    status, answer = api.post(DESCRIBE, {"users": users}, token=token)
    assert status == 200, answer
    return dict(answer)


def test_a_user_is_added_described_altered_and_deleted(api: Api, tokens: dict[str, str]) -> None:
    admin = tokens["admin"]
    first = upsertion("alice", "alice-secret")
    status, answer = alter(api, admin, upsertions=[first, upsertion("bob", "b", SHA512, 4096)])
    assert status == 200 and results(answer) == {"alice": ("NONE", None), "bob": ("NONE", None)}

    described = describe(api, admin)
    assert described["error_code"] == 0
    assert described["results"] == [
        {
            "user": "alice",
            "error_code": 0,
            "error_message": None,
            "credential_infos": [{"mechanism": SHA256, "iterations": 8192}],
        },
        {
            "user": "bob",
            "error_code": 0,
            "error_message": None,
            "credential_infos": [{"mechanism": SHA512, "iterations": 4096}],
        },
    ]
    # Altered: a new salt and iteration count replace the credential.
    status, answer = alter(api, admin, upsertions=[upsertion("alice", "new", iterations=16384)])
    assert results(answer) == {"alice": ("NONE", None)}
    (alice,) = describe(api, admin, [{"name": "alice"}])["results"]
    assert alice["credential_infos"] == [{"mechanism": SHA256, "iterations": 16384}]
    row = ScramCredential.objects.get(name="alice")
    assert row.salt != first["salt"]  # the projection keeps the new salt, no salted password

    status, answer = alter(api, admin, deletions=[{"name": "alice", "mechanism": SHA256}])
    assert results(answer) == {"alice": ("NONE", None)}
    (gone,) = describe(api, admin, [{"name": "alice"}])["results"]
    assert (gone["error_code"], gone["credential_infos"]) == (91, [])
    assert "does not exist: alice" in gone["error_message"]
    assert metadata_verify() == []
    types = list(
        MetadataRecord.objects.filter(record_type__contains="ScramCredential")
        .order_by("offset")
        .values_list("record_type", flat=True)
    )
    assert types == [
        "UserScramCredentialRecord",
        "UserScramCredentialRecord",
        "UserScramCredentialRecord",
        "RemoveUserScramCredentialRecord",
    ]


def test_bad_input_is_answered_per_user_with_kafkas_codes_and_writes_nothing_of_that_user(
    api: Api, tokens: dict[str, str]
) -> None:
    admin = tokens["admin"]
    status, answer = alter(
        api,
        admin,
        deletions=[
            {"name": "ghost", "mechanism": SHA256},  # no such credential
            {"name": "twice", "mechanism": SHA256},
            {"name": "carol", "mechanism": "SCRAM-SHA-1"},
        ],
        upsertions=[
            upsertion("low", "p", iterations=4095),
            upsertion("high", "p", iterations=16385),
            {**upsertion("md5", "p"), "mechanism": "SCRAM-MD5"},
            upsertion("twice", "p"),
            upsertion("", "p"),
            upsertion("ok", "p"),
        ],
    )
    assert status == 200, answer
    assert results(answer) == {
        "ghost": (
            "RESOURCE_NOT_FOUND",
            "Attempt to delete a user credential that does not exist",
        ),
        "twice": (
            "DUPLICATE_RESOURCE",
            "A user credential cannot be altered twice in the same request",
        ),
        "carol": ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
        "low": ("UNACCEPTABLE_CREDENTIAL", "Too few iterations"),
        "high": ("UNACCEPTABLE_CREDENTIAL", "Too many iterations"),
        "md5": ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
        "": ("UNACCEPTABLE_CREDENTIAL", "Username must not be empty"),
        "ok": ("NONE", None),
    }
    assert list(ScramCredential.objects.values_list("name", flat=True)) == ["ok"]
    assert [r["user"] for r in describe(api, admin)["results"]] == ["ok"]
    event = AuditEvent.objects.get(api="AlterUserScramCredentials")
    assert event.outcome == "PARTIAL"
    assert {r["resource_name"] for r in event.resources} >= {"User:ok", "User:ghost"}


@pytest.mark.parametrize(
    "body",
    [
        {"upsertions": [{**upsertion("a", "p"), "salt": "not base64!"}]},
        {"upsertions": [{**upsertion("a", "p"), "salted_password": 5}]},
        {"upsertions": [{**upsertion("a", "p"), "iterations": 2**31}]},
        {"upsertions": [{**upsertion("a", "p"), "password": "p"}]},
        {"deletions": [{"name": "a"}]},
        {"deletions": "a"},
    ],
)
def test_a_malformed_body_is_invalid_request_and_writes_nothing(
    api: Api, tokens: dict[str, str], body: dict[str, Any]
) -> None:
    status, answer = alter(api, tokens["admin"], **body)
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    assert not ScramCredential.objects.exists()
    assert "not base64!" not in json.dumps(answer)


def test_describe_answers_duplicates_and_unknown_users_as_kafka(
    api: Api, tokens: dict[str, str]
) -> None:
    admin = tokens["admin"]
    alter(api, admin, upsertions=[upsertion("alice", "a"), upsertion("bob", "b")])
    answer = describe(api, admin, [{"name": "alice"}, {"name": "alice"}, {"name": "nobody"}])
    assert [(r["user"], r["error_code"]) for r in answer["results"]] == [
        ("alice", 92),
        ("nobody", 91),
    ]
    assert answer["results"][0]["error_message"].startswith(
        "Cannot describe SCRAM credentials for the same user twice in a single request"
    )
    assert [r["user"] for r in describe(api, admin, [])["results"]] == ["alice", "bob"]


def test_only_alter_on_the_cluster_changes_credentials_and_describe_needs_describe(
    api: Api, tokens: dict[str, str]
) -> None:
    status, answer = alter(api, tokens["alice"], upsertions=[upsertion("mallory", "p")])
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
    status, answer = api.post(DESCRIBE, {"users": None}, token=tokens["alice"])
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
    # A broker principal sends no admin write on the public API (KIP-590).
    status, answer = alter(api, tokens["broker"], upsertions=[upsertion("mallory", "p")])
    assert status == 403, answer
    assert not ScramCredential.objects.exists()
    denied = AuditEvent.objects.filter(api="AlterUserScramCredentials", outcome="DENIED")
    assert denied.count() == 2


def test_no_salt_salted_password_or_key_leaves_through_answers_logs_or_audit(
    api: Api, tokens: dict[str, str], client: Any
) -> None:
    admin = tokens["admin"]
    sent = upsertion("alice", "alice-secret")
    status, answer = alter(api, admin, upsertions=[sent])
    assert status == 200
    row = ScramCredential.objects.get(name="alice")
    secrets = {sent["salt"], sent["salted_password"], row.stored_key, row.server_key}
    seen = [json.dumps(answer), json.dumps(describe(api, admin))]
    for path in (
        "/api/v1/metadata-log?type=UserScramCredentialRecord",
        "/api/v1/metadata-log",
        "/api/v1/audit-events",
    ):
        status, body = api.get(path, token=admin)
        assert status == 200, (path, body)
        seen.append(json.dumps(body))
    logged = json.loads(seen[2])["results"]
    assert logged and logged[0]["data"]["salt"] == "(redacted)"
    assert logged[0]["data"]["iterations"] == 8192
    seen.append(json.dumps(list(AuditEvent.objects.values())))
    for text in seen:
        for secret in secrets:
            assert secret not in text


@pytest.mark.parametrize("accept", ["application/json", "application/msgpack"])
def test_the_rest_metadata_fetch_redacts_credentials_and_simulated_brokers_replay_them(
    api: Api, tokens: dict[str, str], accept: str
) -> None:
    """Simulated brokers follow the log by the REST fetch and log nobody in with SCRAM: they get
    every record, a credential's salt and keys redacted (stock brokers read the real ones from
    Kafka's binary log), and replay them."""
    import msgspec

    from controlplane.controller.image import MetadataDelta, MetadataImage
    from controlplane.controller.records import record_from_data
    from controlplane.runtime import fetch_cache

    fetch_cache.fetch_cache().clear()
    sent = upsertion("alice", "alice-secret")
    alter(api, tokens["admin"], upsertions=[sent])
    alter(api, tokens["admin"], deletions=[{"name": "alice", "mechanism": SHA256}])
    row_keys = list(
        MetadataRecord.objects.filter(record_type="UserScramCredentialRecord").values_list(
            "data", flat=True
        )
    )
    response = api.client.get(
        "/internal/v1/metadata?after_offset=-1",
        HTTP_AUTHORIZATION=f"Bearer {tokens['broker']}",
        HTTP_ACCEPT=accept,
    )
    assert response.status_code == 200
    body = msgspec.msgpack.decode(response.content) if "msgpack" in accept else response.json()
    for secret in (sent["salt"], sent["salted_password"], row_keys[0]["stored_key"]):
        assert secret.encode() not in response.content
    delta = MetadataDelta(MetadataImage(cluster_id=body["cluster_id"]))
    for record in body["records"]:
        delta.replay(record_from_data(record["type"], record["data"]))
    credentials = [r["data"] for r in body["records"] if r["type"] == "UserScramCredentialRecord"]
    assert credentials == [
        {
            "name": "alice",
            "mechanism": SHA256,
            "salt": "(redacted)",
            "stored_key": "(redacted)",
            "server_key": "(redacted)",
            "iterations": 8192,
        }
    ]
    assert delta.scram_credential("alice", SHA256) is None  # replayed: created, then removed


def test_the_audit_export_redacts_credentials_in_the_database_as_redact_record_data() -> None:
    from django.db import connection

    from audit import export as exporter
    from controlplane.controller.config_schema import redact_record_data

    dialect = exporter._PG if connection.vendor == "postgresql" else exporter._SQLITE
    expression, params = exporter.exported_data_sql(dialect)
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    data = {
        "name": "alice",
        "mechanism": SHA512,
        "salt": b64(b"salt"),
        "stored_key": b64(b"s" * 64),
        "server_key": b64(b"k" * 64),
        "iterations": 4096,
    }
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {expression} FROM (SELECT 'UserScramCredentialRecord' AS record_type,"
            f" %s{cast} AS data) AS r",
            [*params, json.dumps(data)],
        )
        exported = json.loads(cursor.fetchone()[0])
    assert exported == redact_record_data("UserScramCredentialRecord", data)
    assert exported["salt"] == exported["stored_key"] == exported["server_key"] == "(redacted)"
    assert exported["iterations"] == 4096
