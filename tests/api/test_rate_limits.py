"""Rate limits: Kafka's controller_mutation_rate quota (KIP-599) on topic and partition creation
and deletion, and the public API's request rate per principal (429 with Retry-After)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane import throttling
from controlplane.models import Cluster
from replicas.models import Topic
from tests.api.test_quotas_api import ent, op, set_quota
from tests.conftest import heartbeat_body

pytestmark = pytest.mark.django_db

CREATE = "/api/v1/create-topics"
DELETE = "/api/v1/delete-topics"
PARTITIONS = "/api/v1/create-partitions"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(throttling, "clock", moved)
    return moved


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def create(api: Any, token: str, *topics: tuple[str, int], **extra: Any) -> dict[str, Any]:
    body = {"topics": [{"name": n, "num_partitions": p} for n, p in topics], **extra}
    status, answer = api.post(CREATE, body, token=token)
    assert status == 200, answer
    return dict(answer)


def codes(answers: list[dict[str, Any]]) -> list[int]:
    return [a["error_code"] for a in answers]


@pytest.fixture
def quota_of_one(api, tokens, register, clock):
    """admin may create or delete one partition a second (a burst of 11, Kafka's window)."""
    register(0, unfence=True)
    set_quota(api, tokens["admin"], ent(user="admin"), op("controller_mutation_rate", 1.0))


def test_creations_beyond_the_quota_are_throttling_quota_exceeded(api, tokens, quota_of_one):
    first = create(api, tokens["admin"], ("a", 10))
    assert codes(first["topics"]) == [0] and first["throttle_time_ms"] == 0
    # 1 token left: this topic is admitted and takes the bucket 4 below zero, the next is not.
    second = create(api, tokens["admin"], ("b", 5), ("c", 1))
    assert codes(second["topics"]) == [0, 89]
    refused = second["topics"][1]
    assert refused["error_message"] == "The throttling quota has been exceeded."
    assert second["throttle_time_ms"] == 4000
    before = log_end()
    third = create(api, tokens["admin"], ("c", 1))
    assert codes(third["topics"]) == [89] and third["throttle_time_ms"] == 4000
    assert log_end() == before and not Topic.objects.filter(name="c").exists()


def test_the_bucket_refills_at_the_rate(api, tokens, quota_of_one, clock):
    create(api, tokens["admin"], ("a", 11), ("b", 2))  # 11 spent, then 2 more: -2
    assert codes(create(api, tokens["admin"], ("c", 1))["topics"]) == [89]
    clock.now += 1.5
    throttled = create(api, tokens["admin"], ("c", 1))
    assert throttled["throttle_time_ms"] == 500
    clock.now += 0.5
    assert codes(create(api, tokens["admin"], ("c", 1))["topics"]) == [0]


def test_deletions_and_new_partitions_count_too(api, tokens, quota_of_one, clock):
    create(api, tokens["admin"], ("a", 6), ("b", 4))  # 10 of 11 spent
    grow = {"topics": [{"name": "a", "count": 9, "assignments": None}], "timeout_ms": 1000}
    status, grown = api.post(PARTITIONS, grow, token=tokens["admin"])  # 3 more: -2
    assert status == 200 and codes(grown["results"]) == [0], grown
    status, again = api.post(
        PARTITIONS, {**grow, "topics": [{"name": "a", "count": 10}]}, token=tokens["admin"]
    )
    assert codes(again["results"]) == [89] and again["throttle_time_ms"] == 2000
    status, deleted = api.post(
        DELETE, {"topic_names": ["b"], "topics": [], "timeout_ms": 1000}, token=tokens["admin"]
    )
    assert status == 200 and codes(deleted["responses"]) == [89], deleted
    assert Topic.objects.filter(name="b").exists()
    clock.now += 2
    status, deleted = api.post(
        DELETE, {"topic_names": ["b"], "topics": [], "timeout_ms": 1000}, token=tokens["admin"]
    )
    assert codes(deleted["responses"]) == [0] and not Topic.objects.filter(name="b").exists()


def test_validate_only_and_other_principals_are_not_counted(api, tokens, quota_of_one):
    for _ in range(5):
        answer = create(api, tokens["admin"], ("v", 10), validate_only=True)
        assert codes(answer["topics"]) == [0]
    assert codes(create(api, tokens["admin"], ("a", 12))["topics"]) == [0]  # 11 - 12: -1
    assert codes(create(api, tokens["admin"], ("b", 1))["topics"]) == [89]
    # The quota is admin's (a user entity): another super user is not throttled.
    from controlplane.principals import principal_create

    other = principal_create(name="other-admin", super_user=True)
    assert codes(create(api, other, ("b", 1))["topics"]) == [0]


def test_the_client_id_entity_applies_by_kafkas_precedence(api, tokens, register, clock):
    register(0, unfence=True)
    set_quota(
        api, tokens["admin"], ent(client_id="bulk-loader"), op("controller_mutation_rate", 0.1)
    )
    headers = {"X-Client-ID": "bulk-loader"}
    body = {"topics": [{"name": "x", "num_partitions": 2}]}
    _, first = api.post(CREATE, body, token=tokens["admin"], headers=headers)
    assert codes(first["topics"]) == [0]  # 1.1 tokens: admitted, -0.9
    body = {"topics": [{"name": "y", "num_partitions": 1}]}
    _, second = api.post(CREATE, body, token=tokens["admin"], headers=headers)
    assert codes(second["topics"]) == [89] and second["throttle_time_ms"] == 9000
    _, third = api.post(CREATE, body, token=tokens["admin"])  # another client id
    assert codes(third["topics"]) == [0]


# --- the request rate per principal -----------------------------------------------------------
def test_a_principal_beyond_its_request_rate_gets_429(api, tokens, settings, clock, register):
    settings.CP_API_RATE_LIMIT = 2.0
    settings.CP_API_RATE_BURST = 3.0
    epoch = register(0, unfence=True)
    for _ in range(3):
        assert api.get("/api/v1/whoami", token=tokens["alice"])[0] == 200
    status, answer = api.get("/api/v1/whoami", token=tokens["alice"])
    assert status == 429 and answer["error"] == "THROTTLING_QUOTA_EXCEEDED"
    response = api.client.get("/api/v1/whoami", HTTP_AUTHORIZATION=f"Bearer {tokens['alice']}")
    assert response.status_code == 429 and response["Retry-After"] == "1"
    # Another principal has its own budget; the brokers' internal listener has none.
    assert api.get("/api/v1/whoami", token=tokens["admin"])[0] == 200
    for _ in range(10):
        status, _ = api.post(
            "/internal/v1/broker-heartbeat", heartbeat_body(0, epoch, epoch), token=tokens["broker"]
        )
        assert status == 200
    clock.now += 0.5  # one token back
    assert api.get("/api/v1/whoami", token=tokens["alice"])[0] == 200
    assert api.get("/api/v1/whoami", token=tokens["alice"])[0] == 429
