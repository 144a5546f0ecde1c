"""AlterClientQuotas, DescribeClientQuotas and the effective quota over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from configs.models import ClientQuota
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime.replay import metadata_verify
from tests.controller_events import create_acls

pytestmark = pytest.mark.django_db

ALTER = "/api/v1/alter-client-quotas"
DESCRIBE = "/api/v1/describe-client-quotas"
EFFECTIVE = "/api/v1/client-quotas/effective"


def ent(**names: str | None) -> list[dict[str, Any]]:
    return [{"entity_type": t.replace("_", "-"), "entity_name": n} for t, n in names.items()]


def op(key: str, value: float = 0.0, remove: bool = False) -> dict[str, Any]:
    return {"key": key, "value": value, "remove": remove}


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset if Cluster.objects.exists() else -1


def alter(api: Any, token: str, *entries: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    status, body = api.post(ALTER, {"entries": list(entries), **extra}, token=token)
    assert status == 200, body
    return list(body["entries"])


def set_quota(api: Any, token: str, entity: list[dict[str, Any]], *ops: dict[str, Any]) -> None:
    (answer,) = alter(api, token, {"entity": entity, "ops": list(ops)})
    assert answer["error_code"] == 0, answer


def describe(api: Any, token: str, *components: dict[str, Any], strict: bool = False) -> Any:
    status, body = api.post(
        DESCRIBE, {"components": list(components), "strict": strict}, token=token
    )
    assert status == 200, body
    assert body["error_code"] == 0
    return body["entries"]


def comp(entity_type: str, match_type: str, match: str | None = None) -> dict[str, Any]:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def stored() -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    out: dict[Any, dict[str, float]] = {}
    for row in ClientQuota.objects.all():
        out.setdefault(tuple(tuple(pair) for pair in row.entity), {})[row.key] = row.value
    return out


def test_alter_describe_and_replay(api, tokens):
    answers = alter(
        api,
        tokens["admin"],
        {
            "entity": ent(user="alice"),
            "ops": [op("producer_byte_rate", 1024), op("request_percentage", 12.5)],
        },
        {"entity": ent(user=None, client_id=None), "ops": [op("consumer_byte_rate", 2048)]},
        {"entity": ent(ip="10.0.0.1"), "ops": [op("connection_creation_rate", 5)]},
        {"entity": ent(ip=None), "ops": [op("connection_creation_rate", 50)]},
    )
    assert [a["error_code"] for a in answers] == [0, 0, 0, 0]
    assert answers[1]["entity"] == ent(user=None, client_id=None)
    assert stored() == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        (("client-id", None), ("user", None)): {"consumer_byte_rate": 2048.0},
        (("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0},
        (("ip", None),): {"connection_creation_rate": 50.0},
    }
    records = list(MetadataRecord.objects.filter(record_type="ClientQuotaRecord"))
    assert len(records) == 5
    assert records[0].principal == "User:admin"
    assert records[1].data == {
        "entity": [["user", "alice"]],
        "key": "request_percentage",
        "value": 12.5,
        "remove": False,
    }
    assert metadata_verify() == []

    entries = describe(api, tokens["admin"], comp("user", "EXACT", "alice"), strict=True)
    assert entries == [
        {
            "entity": [{"entity_type": "user", "entity_name": "alice"}],
            "values": [
                {"key": "producer_byte_rate", "value": 1024.0},
                {"key": "request_percentage", "value": 12.5},
            ],
        }
    ]
    assert [e["entity"] for e in describe(api, tokens["admin"], comp("user", "DEFAULT"))] == [
        [
            {"entity_type": "client-id", "entity_name": None},
            {"entity_type": "user", "entity_name": None},
        ]
    ]
    assert describe(api, tokens["admin"], comp("user", "DEFAULT"), strict=True) == []
    assert len(describe(api, tokens["admin"], comp("user", "ANY"))) == 2
    assert len(describe(api, tokens["admin"], comp("ip", "ANY"))) == 2
    assert describe(api, tokens["admin"], comp("ip", "EXACT", "10.0.0.1"))[0]["values"] == [
        {"key": "connection_creation_rate", "value": 5.0}
    ]
    assert len(describe(api, tokens["admin"])) == 4

    # Remove and change, then the log still replays to the tables.
    set_quota(
        api,
        tokens["admin"],
        ent(user="alice"),
        op("producer_byte_rate", remove=True),
        op("request_percentage", 99.5),
    )
    set_quota(api, tokens["admin"], ent(ip=None), op("connection_creation_rate", remove=True))
    assert stored() == {
        (("user", "alice"),): {"request_percentage": 99.5},
        (("client-id", None), ("user", None)): {"consumer_byte_rate": 2048.0},
        (("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0},
    }
    assert metadata_verify() == []
    assert describe(api, tokens["admin"], comp("ip", "DEFAULT")) == []


def test_no_op_and_validate_only_write_nothing(api, tokens):
    set_quota(api, tokens["admin"], ent(client_id="app"), op("producer_byte_rate", 100))
    end = log_end()
    set_quota(api, tokens["admin"], ent(client_id="app"), op("producer_byte_rate", 100))
    set_quota(api, tokens["admin"], ent(client_id="app"), op("consumer_byte_rate", remove=True))
    assert log_end() == end
    answers = alter(
        api,
        tokens["admin"],
        {"entity": ent(client_id="app"), "ops": [op("producer_byte_rate", 5)]},
        {"entity": ent(client_id="app"), "ops": [op("producer_byte_rate", 5.5)]},
        validate_only=True,
    )
    assert [a["error_code"] for a in answers] == [0, 42]
    assert log_end() == end
    assert stored() == {(("client-id", "app"),): {"producer_byte_rate": 100.0}}


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        (ent(user="u"), [op("producer_byte_rate", 1024.5)], "must be an integer"),
        (ent(user="u"), [op("producer_byte_rate", 0)], "greater than 0"),
        (ent(user="u"), [op("request_percentage", -1.5)], "greater than 0"),
        (ent(user="u"), [op("connection_creation_rate", 10)], "Unknown quota key"),
        (ent(ip="1.2.3.4"), [op("producer_byte_rate", 10)], "Unknown quota key"),
        (ent(user="u"), [op("bogus", 10)], "Unknown quota key"),
        (ent(ip="nope"), [op("connection_creation_rate", 10)], "not a valid IP"),
        (ent(user="u", ip="1.2.3.4"), [op("producer_byte_rate", 10)], "combined"),
        ([], [op("producer_byte_rate", 10)], "empty client quota entity"),
        (ent(user="a") + ent(user="b"), [op("producer_byte_rate", 10)], "duplicate entity"),
        ([{"entity_type": "group", "entity_name": "g"}], [op("producer_byte_rate", 1)], "group"),
        (ent(user=""), [op("producer_byte_rate", 10)], "Empty user not supported"),
        (
            ent(user="u"),
            [op("producer_byte_rate", 10), op("producer_byte_rate", 20)],
            "Duplicate quota key",
        ),
    ],
)
def test_invalid_entries_answer_invalid_request(api, tokens, entity, ops, message):
    end = log_end()
    (answer,) = alter(api, tokens["admin"], {"entity": entity, "ops": ops})
    assert answer["error_code"] == 42 and answer["error"] == "INVALID_REQUEST", answer
    assert message in answer["error_message"]
    assert answer["entity"] == entity
    assert log_end() == end and not ClientQuota.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"entries": "x"},
        {"entries": [{"entity": ent(user="u"), "ops": [op("producer_byte_rate", "1024")]}]},
        {"entries": [{"entity": ent(user="u"), "ops": [op("producer_byte_rate", True)]}]},
        {"entries": [], "extra": 1},
        {"entries": [{"entity": [{"entity_type": "user"}], "ops": []}]},
        {"entries": [{"entity": [{"entity_type": 1, "entity_name": "u"}], "ops": []}]},
        {"entries": [{"entity": ent(user="u"), "ops": [{"value": 1}]}]},
        {"entries": [{"entity": ent(user="u"), "ops": [op("producer_byte_rate", 1) | {"x": 1}]}]},
        {
            "entries": [{"entity": ent(user="u"), "ops": [op("producer_byte_rate", 1)]}],
            "validate_only": "no",
        },
        {
            "entries": [
                {"entity": ent(user="u"), "ops": [{"key": "producer_byte_rate", "remove": 1}]}
            ]
        },
    ],
)
def test_malformed_alter_bodies_are_400(api, tokens, body):
    end = log_end()
    status, answer = api.post(ALTER, body, token=tokens["admin"])
    assert status == 400, answer
    assert answer["error_code"] == 42 and answer["error"] == "INVALID_REQUEST"
    assert log_end() == end and not ClientQuota.objects.exists()


def test_non_finite_json_is_400(api, tokens):
    raw = (
        '{"entries":[{"entity":[{"entity_type":"user","entity_name":"u"}],'
        '"ops":[{"key":"producer_byte_rate","value":NaN}]}]}'
    )
    status, answer = api.post(ALTER, raw, token=tokens["admin"], raw=True)
    assert status == 400 and answer["error_code"] == 42
    assert not ClientQuota.objects.exists()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"components": [comp("user", "EXACT")]}, 42),
        ({"components": [comp("user", "DEFAULT", "x")]}, 42),
        ({"components": [comp("user", "ANY"), comp("user", "ANY")]}, 42),
        ({"components": [comp("ip", "ANY"), comp("client-id", "ANY")]}, 42),
        ({"components": [comp("user", "SPECIFIED")]}, 42),
        ({"components": [comp("group", "ANY")]}, 35),
        ({"components": "x"}, 42),
        ({"components": [], "strict": "yes"}, 42),
        ({}, 42),
    ],
)
def test_invalid_describe_filters(api, tokens, body, code):
    status, answer = api.post(DESCRIBE, body, token=tokens["admin"])
    assert status == 400, answer
    assert answer["error_code"] == code


def test_effective_quota_precedence(api, tokens):
    admin = tokens["admin"]
    order = [
        ent(user="u", client_id="c"),
        ent(user="u", client_id=None),
        ent(user="u"),
        ent(user=None, client_id="c"),
        ent(user=None, client_id=None),
        ent(user=None),
        ent(client_id="c"),
        ent(client_id=None),
    ]
    # Least specific first, each with its rank; then peel them off most specific first.
    for rank, entity in reversed(list(enumerate(order))):
        set_quota(api, admin, entity, op("producer_byte_rate", rank + 1))
    set_quota(api, admin, ent(client_id=None), op("consumer_byte_rate", 77))
    set_quota(api, admin, ent(user="other"), op("request_percentage", 5))  # another user
    set_quota(api, admin, ent(ip=None), op("connection_creation_rate", 3))
    for rank, entity in enumerate(order):
        status, body = api.get(f"{EFFECTIVE}?user=u&client_id=c", token=admin)
        assert status == 200, body
        values = {v["key"]: v for v in body["values"]}
        assert body["user"] == "u" and body["client_id"] == "c"
        assert values["producer_byte_rate"]["value"] == rank + 1
        assert sorted(values["producer_byte_rate"]["entity"], key=str) == sorted(entity, key=str)
        assert values["consumer_byte_rate"]["value"] == 77
        assert "request_percentage" not in values
        set_quota(api, admin, entity, op("producer_byte_rate", remove=True))
    status, body = api.get(f"{EFFECTIVE}?user=u&client_id=c", token=admin)
    assert [v["key"] for v in body["values"]] == ["consumer_byte_rate"]
    assert metadata_verify() == []


@pytest.mark.parametrize(
    "query", ["", "?user=u", "?client_id=c", "?user=&client_id=c", "?user=u&client_id=c&x=1"]
)
def test_effective_needs_user_and_client_id(api, tokens, query):
    status, body = api.get(f"{EFFECTIVE}{query}", token=tokens["admin"])
    assert status == 400 and body["error_code"] == 42


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


def test_authorization(api, tokens):
    alter_body = {"entries": [{"entity": ent(user="u"), "ops": [op("producer_byte_rate", 1)]}]}
    describe_body = {"components": []}
    status, body = api.post(ALTER, alter_body, token=None)
    assert status == 401
    for path, payload in ((ALTER, alter_body), (DESCRIBE, describe_body)):
        status, body = api.post(path, payload, token=tokens["alice"])
        assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED", body
    status, body = api.get(f"{EFFECTIVE}?user=u&client_id=c", token=tokens["alice"])
    assert status == 403
    # A broker principal never writes through the public API (KIP-590).
    status, body = api.post(ALTER, alter_body, token=tokens["broker"])
    assert status == 403 and body["error_code"] == 31
    assert not ClientQuota.objects.exists()

    # DESCRIBE_CONFIGS lets alice read, not write; ALTER_CONFIGS implies DESCRIBE_CONFIGS.
    create_acls(acl("User:alice", "DESCRIBE_CONFIGS"))
    status, _ = api.post(DESCRIBE, describe_body, token=tokens["alice"])
    assert status == 200
    status, _ = api.post(ALTER, alter_body, token=tokens["alice"])
    assert status == 403
    create_acls(acl("User:alice", "ALTER_CONFIGS"))
    status, body = api.post(ALTER, alter_body, token=tokens["alice"])
    assert status == 200 and body["entries"][0]["error_code"] == 0
    assert MetadataRecord.objects.filter(record_type="ClientQuotaRecord").get().principal == (
        "User:alice"
    )
    status, body = api.get(f"{EFFECTIVE}?user=u&client_id=c", token=tokens["alice"])
    assert status == 200 and body["values"][0]["value"] == 1.0
