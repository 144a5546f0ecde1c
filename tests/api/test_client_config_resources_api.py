"""CLIENT_METRICS and GROUP config resources over REST and the client door: set, appended,
described with their sources, refused with Kafka's codes and Kafka's authorization (GROUP on the
GROUP resource, CLIENT_METRICS on the CLUSTER), audited, and never redacted (not secrets)."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from controlplane.runtime.replay import metadata_verify
from tests.api.test_configs_api import (
    DESCRIBE,
    INCREMENTAL,
    acl,
    by_name,
    create_acls,
    describe,
    inc,
    op,
    post_ok,
    stored,
)
from tests.wire.test_admin_apis import wire_call

pytestmark = pytest.mark.django_db

METRICS = "org.apache.kafka.producer.,org.apache.kafka.consumer."


def test_a_subscription_and_a_group_config_are_set_described_and_deleted(
    api: Any, tokens: dict[str, str]
) -> None:
    admin = tokens["admin"]
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc(
                    "CLIENT_METRICS",
                    "producers",
                    op("metrics", "SET", METRICS),
                    op("interval.ms", "SET", "1000"),
                ),
                inc("GROUP", "orders-readers", op("consumer.session.timeout.ms", "SET", "50000")),
            ]
        },
        admin,
    )
    assert [(a["resource_type"], a["error"]) for a in answers] == [
        ("CLIENT_METRICS", "NONE"),
        ("GROUP", "NONE"),
    ]
    assert stored() == {
        ("CLIENT_METRICS", "producers", "interval.ms"): "1000",
        ("CLIENT_METRICS", "producers", "metrics"): METRICS,
        ("GROUP", "orders-readers", "consumer.session.timeout.ms"): "50000",
    }
    subscription = by_name(describe(api, admin, "CLIENT_METRICS", "producers"))
    assert subscription["interval.ms"]["config_source"] == "CLIENT_METRICS_CONFIG"
    assert subscription["match"]["config_source"] == "DEFAULT_CONFIG"
    group = by_name(describe(api, admin, "GROUP", "orders-readers"))
    assert (group["consumer.session.timeout.ms"]["value"], len(group)) == ("50000", 10)
    assert group["consumer.heartbeat.interval.ms"]["value"] == "5000"
    # Kafka's client door answers the same, with its codes (sources 7 and 8, types).
    (wire,) = wire_call(
        32, 4, {"resources": [{"resource_type": 16, "resource_name": "producers"}]}, admin
    ).results
    sources = {c.name: int(c.config_source) for c in wire.configs}
    assert sources["interval.ms"] == 7 and sources["match"] == 5
    (wire_group,) = wire_call(
        32, 4, {"resources": [{"resource_type": 32, "resource_name": "orders-readers"}]}, admin
    ).results
    assert {c.name: int(c.config_source) for c in wire_group.configs}[
        "consumer.session.timeout.ms"
    ] == 8
    # kafka-client-metrics --delete: every key deleted.
    post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc(
                    "CLIENT_METRICS",
                    "producers",
                    op("metrics", "DELETE"),
                    op("interval.ms", "DELETE"),
                )
            ]
        },
        admin,
    )
    assert set(stored()) == {("GROUP", "orders-readers", "consumer.session.timeout.ms")}
    status, log = api.get("/api/v1/metadata-log?type=ConfigRecord", token=admin)
    assert status == 200 and "(redacted)" not in str(log) and METRICS in str(log)
    assert metadata_verify() == []
    event = AuditEvent.objects.filter(api="IncrementalAlterConfigs").order_by("id").first()
    assert event is not None
    assert {(r["resource_type"], r["resource_name"]) for r in event.resources} == {
        ("CLIENT_METRICS", "producers"),
        ("GROUP", "orders-readers"),
    }


def test_kafkas_authorization_group_on_the_group_client_metrics_on_the_cluster(
    api: Any, tokens: dict[str, str]
) -> None:
    create_acls(
        acl("GROUP", "alice-group", "ALTER_CONFIGS"),
        acl("GROUP", "alice-group", "DESCRIBE_CONFIGS"),
    )
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc("GROUP", "alice-group", op("share.isolation.level", "SET", "read_committed")),
                inc("GROUP", "bob-group", op("share.isolation.level", "SET", "read_committed")),
                inc("CLIENT_METRICS", "alice-metrics", op("metrics", "SET", "*")),
            ]
        },
        tokens["alice"],
    )
    assert [a["error"] for a in answers] == [
        "NONE",
        "GROUP_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
    ]
    assert set(stored()) == {("GROUP", "alice-group", "share.isolation.level")}
    results = post_ok(
        api,
        DESCRIBE,
        {
            "resources": [
                {"resource_type": "GROUP", "resource_name": "alice-group"},
                {"resource_type": "GROUP", "resource_name": "bob-group"},
                {"resource_type": "CLIENT_METRICS", "resource_name": "alice-metrics"},
            ]
        },
        tokens["alice"],
    )
    assert [r["error"] for r in results] == [
        "NONE",
        "GROUP_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
    ]
    event = AuditEvent.objects.filter(api="IncrementalAlterConfigs").get()
    assert event.outcome == "PARTIAL"


def test_invalid_values_are_answered_per_resource_and_validate_only_writes_nothing(
    api: Any, tokens: dict[str, str]
) -> None:
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc("CLIENT_METRICS", "a", op("interval.ms", "SET", "10")),
                inc("CLIENT_METRICS", "b", op("match", "SET", "client_id=[")),
                inc("GROUP", "g", op("consumer.heartbeat.interval.ms", "SET", "50000")),
                inc("GROUP", "h", op("streams.num.standby.replicas", "SET", "1")),
            ],
            "validate_only": True,
        },
        tokens["admin"],
    )
    assert [a["error"] for a in answers] == [
        "INVALID_REQUEST",
        "INVALID_CONFIG",
        "INVALID_CONFIG",
        "NONE",
    ]
    assert stored() == {}
