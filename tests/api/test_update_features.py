"""UpdateFeatures on REST (`POST /api/v1/update-features`) and the cluster's features
(`GET /api/v1/features`): Kafka's rules through the one RPC path, audited; a refusal writes
nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from audit.models import AuditEvent
from controlplane.models import FinalizedFeature, MetadataRecord
from controlplane.runtime.replay import metadata_verify

pytestmark = pytest.mark.django_db
PATH = "/api/v1/update-features"
KAFKA_4_1 = [
    {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 27},
    {"name": "kraft.version", "min_supported_version": 0, "max_supported_version": 1},
    {"name": "group.version", "min_supported_version": 0, "max_supported_version": 1},
    {"name": "transaction.version", "min_supported_version": 0, "max_supported_version": 2},
]
KAFKA_4_4 = [
    {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 33},
    *KAFKA_4_1[1:],
    {"name": "share.version", "min_supported_version": 0, "max_supported_version": 2},
    {"name": "streams.version", "min_supported_version": 0, "max_supported_version": 1},
]


def upgrade(*updates: tuple[str, int], kind: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "feature_updates": [
            {"feature": name, "max_version_level": level, "upgrade_type": kind}
            for name, level in updates
        ],
        **extra,
    }


def levels() -> dict[str, int]:
    return dict(FinalizedFeature.objects.values_list("name", "level"))


def test_an_upgrade_every_broker_supports_is_finalized_and_audited(
    api: Any, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1, features=KAFKA_4_4)
    register(2, features=KAFKA_4_4)
    status, answer = api.post(
        PATH, upgrade(("metadata.version", 33), ("share.version", 2)), token=tokens["admin"]
    )
    assert status == 200, answer
    assert answer["error_code"] == 0
    assert [r["feature"] for r in answer["results"]] == ["metadata.version", "share.version"]
    assert levels()["metadata.version"] == 33 and levels()["share.version"] == 2
    event = AuditEvent.objects.filter(api="UpdateFeatures").get()
    assert {r["resource_name"] for r in event.resources} == {
        "metadata.version=33",
        "share.version=2",
    }
    assert metadata_verify() == []

    status, described = api.get("/api/v1/features", token=tokens["admin"])
    assert status == 200
    assert described["metadata_version"] == {"level": 33, "name": "4.4-IV2"}
    assert described["finalized_features"]["share.version"] == 2
    assert described["supported_features"]["eligible.leader.replicas.version"] == {
        "min_version": 0,
        "max_version": 0,
    }
    assert [b["broker_id"] for b in described["brokers"]] == [1, 2]
    assert described["brokers"][0]["supported_features"]["metadata.version"] == {
        "min_version": 7,
        "max_version": 33,
    }
    status, cluster = api.post("/api/v1/describe-cluster", {}, token=tokens["admin"])
    assert cluster["finalized_features"]["metadata.version"] == 33


def test_a_level_one_broker_lacks_is_refused_and_nothing_is_written(
    api: Any, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1, features=KAFKA_4_4)
    register(2, features=KAFKA_4_1)
    before = MetadataRecord.objects.count()
    status, answer = api.post(
        PATH, upgrade(("share.version", 2), ("metadata.version", 33)), token=tokens["admin"]
    )
    assert status == 400
    assert answer["error_code"] == 95 and answer["error"] == "INVALID_UPDATE_VERSION"
    assert "Broker 2" in answer["error_message"]
    assert MetadataRecord.objects.count() == before
    assert "share.version" not in levels()


def test_eligible_leader_replicas_and_unsafe_downgrades_are_refused(
    api: Any, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1, features=KAFKA_4_4)
    status, answer = api.post(
        PATH, upgrade(("eligible.leader.replicas.version", 1)), token=tokens["admin"]
    )
    assert status == 400 and "KIP-966" in answer["error_message"]
    downgrade = upgrade(("metadata.version", 22), kind=3)
    status, answer = api.post(PATH, downgrade, token=tokens["admin"])
    assert status == 400 and "might delete metadata" not in answer["error_message"]
    assert "Unsafe metadata downgrade is not supported" in answer["error_message"]
    assert levels()["metadata.version"] == 25


def test_validate_only_and_a_safe_downgrade(
    api: Any, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1, features=KAFKA_4_4)
    status, answer = api.post(
        PATH, upgrade(("metadata.version", 27), validate_only=True), token=tokens["admin"]
    )
    assert status == 200 and levels()["metadata.version"] == 25
    assert api.post(PATH, upgrade(("metadata.version", 27)), token=tokens["admin"])[0] == 200
    downgrade = upgrade(("metadata.version", 25), kind=2)
    status, answer = api.post(PATH, downgrade, token=tokens["admin"])
    assert status == 200, answer
    assert levels()["metadata.version"] == 25  # 26 and 27 changed no metadata


def test_only_alter_on_the_cluster_may_update_features(api: Any, tokens: dict[str, str]) -> None:
    status, answer = api.post(PATH, upgrade(("group.version", 1)), token=tokens["alice"])
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    status, answer = api.post(PATH, upgrade(("group.version", 1)), token=tokens["broker"])
    assert status == 403
    for body in (
        {"feature_updates": [{"feature": "group.version"}]},
        {"feature_updates": [{"feature": "x", "max_version_level": 1, "surprise": 1}]},
        upgrade(("group.version", 1), ("group.version", 0), kind=2),
        {"feature_updates": "group.version=1"},
    ):
        status, answer = api.post(PATH, body, token=tokens["admin"])
        assert status == 400 and answer["error_code"] in (42, 95), (body, answer)
