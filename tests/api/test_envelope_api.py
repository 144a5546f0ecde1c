"""KIP-590's Envelope over HTTP: brokers redirect admin writes, audited as the original client."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from controlplane.models import Cluster, ConfigEntry, MetadataRecord

pytestmark = pytest.mark.django_db

ENVELOPE = "/internal/v1/envelope"
INCREMENTAL = "/api/v1/incremental-alter-configs"


def set_retention(topic: str, value: str) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": topic,
                "configs": [{"name": "retention.ms", "config_operation": "SET", "value": value}],
            }
        ]
    }


def envelope(
    body: dict[str, Any],
    *,
    api_key: int = 44,
    principal: Any = None,
    client_id: str = "legacy-admin",
    host: str = "10.1.2.3",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "request_header": {
            "request_api_key": api_key,
            "request_api_version": 1,
            "client_id": client_id,
            "correlation_id": 7,
        },
        "request_data": body,
        "request_principal": principal or {"type": "User", "name": "alice"},
        "client_host_address": host,
        **extra,
    }


@pytest.fixture
def topic(api: Any, tokens: dict[str, str], register: Any) -> str:
    return orders_topic(api, tokens, register)


def orders_topic(api: Any, tokens: dict[str, str], register: Any) -> str:
    """A broker and topic `orders` (one partition on it)."""
    register(1, unfence=True)
    status, answer = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 1, "replication_factor": 1}]},
        token=tokens["admin"],
    )
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer
    return "orders"


def grant_alter_configs(api: Any, tokens: dict[str, str], *principals: str) -> None:
    """ALTER_CONFIGS on topic `orders` for each principal (User:alice when none is named)."""
    status, answer = api.post(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "orders",
                    "pattern_type": "LITERAL",
                    "principal": principal,
                    "host": "*",
                    "operation": "ALTER_CONFIGS",
                    "permission_type": "ALLOW",
                }
                for principal in principals or ("User:alice",)
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and all(r["error_code"] == 0 for r in answer["results"]), answer


def test_a_broker_redirects_a_write_that_is_applied_and_audited_as_the_original_principal(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    grant_alter_configs(api, tokens)
    before = Cluster.objects.get(pk=1).last_offset
    status, answer = api.post(
        ENVELOPE,
        envelope(set_retention(topic, "60000"), forwarding_broker_id=1),
        token=tokens["broker"],
        headers={"X-Request-ID": "env-1"},
    )
    assert status == 200, answer
    assert answer["error_code"] == 0 and answer["response_header"] == {"correlation_id": 7}
    assert answer["response_status"] == 200
    assert answer["response_data"]["responses"][0]["error_code"] == 0
    assert ConfigEntry.objects.get(resource_name=topic, name="retention.ms").value == "60000"
    record = MetadataRecord.objects.get(offset__gt=before)
    assert (record.principal, record.client_id, record.client_host, record.request_id) == (
        "User:alice",
        "legacy-admin",
        "10.1.2.3",
        "env-1",
    )
    event = AuditEvent.objects.get(request_id="env-1")
    assert event.api == "IncrementalAlterConfigs" and event.principal == "User:alice"
    assert (event.client_id, event.client_host) == ("legacy-admin", "10.1.2.3")
    assert (event.forwarding_principal, event.forwarding_broker_id) == ("User:broker-a", 1)
    assert event.outcome == "SUCCESS" and event.error_code == 0
    assert (event.first_offset, event.last_offset) == (record.offset, record.offset)
    assert event.resources == [
        {"resource_type": "TOPIC", "resource_name": "orders", "error_code": 0}
    ]


def test_the_inner_request_is_authorized_as_the_original_principal(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    # The broker could alter anything it likes; alice has no ACL, so her request is refused.
    status, answer = api.post(ENVELOPE, envelope(set_retention(topic, "1")), token=tokens["broker"])
    assert status == 200 and answer["error_code"] == 0
    inner = answer["response_data"]["responses"][0]
    assert inner["error"] == "TOPIC_AUTHORIZATION_FAILED"
    assert not ConfigEntry.objects.filter(name="retention.ms").exists()
    event = AuditEvent.objects.get(api="IncrementalAlterConfigs")
    assert (event.principal, event.outcome, event.error_code) == ("User:alice", "DENIED", 29)
    assert event.first_offset is None


@pytest.mark.parametrize("sender", ["alice", "admin-no-cluster-action"])
def test_an_envelope_from_a_principal_without_cluster_action_is_refused(
    api: Any, tokens: dict[str, str], topic: str, sender: str
) -> None:
    from controlplane.principals import principal_create

    token = tokens["alice"] if sender == "alice" else principal_create(name="mallory")
    before = Cluster.objects.get(pk=1).last_offset
    status, answer = api.post(
        ENVELOPE,
        envelope(set_retention(topic, "1"), principal={"type": "User", "name": "admin"}),
        token=token,
    )
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
    assert answer["response_data"] is None
    assert Cluster.objects.get(pk=1).last_offset == before
    event = AuditEvent.objects.get(api="Envelope")
    assert event.outcome == "DENIED" and event.error_code == 31
    assert event.resources == [
        {"resource_type": "API", "resource_name": "IncrementalAlterConfigs", "error_code": 31}
    ]


@pytest.mark.parametrize(
    ("api_key", "name"),
    [(32, "DescribeConfigs"), (0, "apiKey 0"), (58, "apiKey 58"), (9999, "apiKey 9999")],
)
def test_a_non_forwardable_api_is_an_invalid_request(
    api: Any, tokens: dict[str, str], api_key: int, name: str
) -> None:
    status, answer = api.post(ENVELOPE, envelope({}, api_key=api_key), token=tokens["broker"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    assert name in answer["error_message"]


@pytest.mark.parametrize(
    "principal",
    [
        {"type": "Group", "name": "alice"},
        {"type": "User", "name": ""},
        {"type": "User"},
        {"type": "User", "name": 5},
        {"type": "User", "name": "a\nb"},
        {"type": "User", "name": "alice", "token_authenticated": "yes"},
        {"type": "User", "name": "alice", "extra": 1},
        "User:alice",
        ["User", "alice"],
    ],
)
def test_an_undecodable_principal_is_a_principal_deserialization_failure(
    api: Any, tokens: dict[str, str], topic: str, principal: Any
) -> None:
    status, answer = api.post(
        ENVELOPE, envelope(set_retention(topic, "1"), principal=principal), token=tokens["broker"]
    )
    assert status == 400 and answer["error"] == "PRINCIPAL_DESERIALIZATION_FAILURE", answer
    assert answer["error_code"] == 97
    assert not ConfigEntry.objects.filter(name="retention.ms").exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"request_header": {}},
        "not an object",
        {**envelope({}), "request_data": [1, 2]},
        {**envelope({}), "surprise": True},
        {**envelope({}), "request_header": {"request_api_key": "44"}},
    ],
)
def test_a_malformed_envelope_is_an_invalid_request(
    api: Any, tokens: dict[str, str], body: Any
) -> None:
    status, answer = api.post(ENVELOPE, body, token=tokens["broker"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer


def test_a_malformed_inner_request_answers_inside_the_envelope(
    api: Any, tokens: dict[str, str]
) -> None:
    status, answer = api.post(ENVELOPE, envelope({"resources": "nope"}), token=tokens["broker"])
    assert status == 200 and answer["error_code"] == 0
    assert answer["response_status"] == 400
    assert answer["response_data"]["error"] == "INVALID_REQUEST"
    event = AuditEvent.objects.get()
    assert (event.principal, event.outcome, event.http_status) == ("User:alice", "FAILED", 400)


def test_a_token_authenticated_principal_may_not_create_tokens(
    api: Any, tokens: dict[str, str]
) -> None:
    status, answer = api.post(
        ENVELOPE,
        envelope(
            {"renewers": [], "max_lifetime_ms": -1},
            api_key=38,
            principal={"type": "User", "name": "admin", "token_authenticated": True},
        ),
        token=tokens["broker"],
    )
    assert status == 200, answer
    assert answer["response_data"]["error_code"] == 64  # DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_a_broker_principal_forwarded_as_the_client_is_refused_like_on_the_public_api(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    status, answer = api.post(
        ENVELOPE,
        envelope(set_retention(topic, "1"), principal={"type": "User", "name": "broker-a"}),
        token=tokens["broker"],
    )
    assert status == 200 and answer["response_status"] == 403
    assert answer["response_data"]["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert not ConfigEntry.objects.filter(name="retention.ms").exists()


def test_a_broker_principal_calling_the_public_admin_api_is_refused_and_audited(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    status, answer = api.post(INCREMENTAL, set_retention(topic, "1"), token=tokens["broker"])
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    event = AuditEvent.objects.get(api="IncrementalAlterConfigs")
    assert (event.principal, event.outcome) == ("User:broker-a", "DENIED")
    assert event.resources == [
        {"resource_type": "TOPIC", "resource_name": "orders", "error_code": 31}
    ]


def test_a_retried_envelope_applies_once(api: Any, tokens: dict[str, str], topic: str) -> None:
    grant_alter_configs(api, tokens)
    answers = [
        api.post(
            ENVELOPE,
            envelope(set_retention(topic, "5000")),
            token=tokens["broker"],
            headers={"X-Request-ID": "same-id"},
        )
        for _ in range(2)
    ]
    assert answers[0][1]["response_data"] == answers[1][1]["response_data"]
    assert MetadataRecord.objects.filter(request_id="same-id").count() == 1
    # Audited once: both arrivals answered the one write (one audit row per applied write).
    (event,) = AuditEvent.objects.filter(request_id="same-id")
    assert event.first_offset is not None and event.outcome == "SUCCESS"
