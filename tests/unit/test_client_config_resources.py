"""CLIENT_METRICS (KIP-714) and GROUP (KIP-848) config resources in the pure core: Kafka's keys,
types and ranges, its codes (unknown client metrics keys and out-of-range intervals
INVALID_REQUEST, everything else INVALID_CONFIG), the whole resulting set checked as Kafka's
controller checks it (a group's session above its heartbeat, with its stored keys), all or
nothing per resource, ConfigRecords with Kafka's resource types, and DescribeConfigs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.client_configs import GROUP_BOUNDS, check_match_pattern
from controlplane.controller.config_schema import is_sensitive, redact_record_data
from controlplane.controller.configs.describe import describe_configs
from controlplane.controller.errors import ApiError
from controlplane.controller.kraft.frames import decode_metadata_value
from controlplane.controller.kraft.twins import kafka_record
from controlplane.controller.records import ConfigRecord
from tests.unit.test_config_rpcs import configs, errors, inc, op, resource, run
from tests.unit.test_replication_core import Cluster

INCREMENTAL, ALTER = "IncrementalAlterConfigs", "AlterConfigs"


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


def answer(cluster: Cluster, rtype: str, name: str, *ops: dict[str, Any]) -> tuple[str, str]:
    (response,) = run(cluster, INCREMENTAL, inc(rtype, name, *ops))["responses"]
    return response["error"], response["error_message"]


def test_a_client_metrics_subscription_is_set_as_kafkas_tool_sets_it(cluster: Cluster) -> None:
    ok = answer(
        cluster,
        "CLIENT_METRICS",
        "orders-metrics",
        op("metrics", "SET", "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator"),
        op("interval.ms", "SET", "1000"),
        op("match", "SET", "client_software_name=kafka-python,client_id=orders-.*"),
    )
    assert ok == ("NONE", None)
    assert configs(cluster, "CLIENT_METRICS", "orders-metrics") == {
        "interval.ms": "1000",
        "match": "client_software_name=kafka-python,client_id=orders-.*",
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator",
    }
    assert answer(cluster, "CLIENT_METRICS", "orders-metrics", op("metrics", "APPEND", "*")) == (
        "NONE",
        None,
    )
    assert configs(cluster, "CLIENT_METRICS", "orders-metrics")["metrics"].endswith(",*")
    written = [r for r in cluster.records if isinstance(r, ConfigRecord)]
    assert {(r.resource_type, r.resource_name) for r in written} == {
        ("CLIENT_METRICS", "orders-metrics")
    }
    twin = decode_metadata_value(kafka_record(written[0], 25).value)
    assert (twin.name, twin.fields["ResourceType"]) == ("ConfigRecord", 16)


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        ([op("colour", "SET", "blue")], "INVALID_REQUEST", "Unknown client metrics configuration"),
        ([op("interval.ms", "SET", "99")], "INVALID_REQUEST", "between 100 and 3600000"),
        ([op("interval.ms", "SET", "3600001")], "INVALID_REQUEST", "interval must be between"),
        ([op("interval.ms", "SET", "soon")], "INVALID_CONFIG", "Not a number of type INT"),
        ([op("match", "SET", "client_id")], "INVALID_CONFIG", "Illegal client matching pattern"),
        ([op("match", "SET", "user=bob")], "INVALID_CONFIG", "Illegal client matching pattern"),
        ([op("match", "SET", "client_id=(")], "INVALID_CONFIG", "Illegal client matching"),
        ([op("match", "SET", "client_id=a=b")], "INVALID_CONFIG", "Illegal client matching"),
        # All or nothing: a good key beside a bad one writes neither.
        (
            [op("metrics", "SET", "*"), op("interval.ms", "SET", "50")],
            "INVALID_REQUEST",
            "interval.ms",
        ),
    ],
)
def test_client_metrics_bad_input_is_kafkas_code_and_writes_nothing(
    cluster: Cluster, ops: list[dict[str, Any]], error: str, message: str
) -> None:
    code, text = answer(cluster, "CLIENT_METRICS", "subscription", *ops)
    assert code == error and message in text
    assert configs(cluster, "CLIENT_METRICS", "subscription") == {}


def test_unnamed_resources_are_invalid_requests(cluster: Cluster) -> None:
    assert answer(cluster, "CLIENT_METRICS", "", op("metrics", "SET", "*")) == (
        "INVALID_REQUEST",
        "Subscription name can't be empty",
    )
    assert answer(cluster, "GROUP", "", op("consumer.session.timeout.ms", "SET", "50000")) == (
        "INVALID_REQUEST",
        "Default group resources are not allowed.",
    )


def test_a_group_config_is_checked_with_the_groups_other_keys(cluster: Cluster) -> None:
    assert answer(cluster, "GROUP", "g", op("consumer.heartbeat.interval.ms", "SET", "15000")) == (
        "NONE",
        None,
    )
    # 45000 stays above 15000; 12000 is below the stored heartbeat, and below Kafka's minimum.
    code, message = answer(cluster, "GROUP", "g", op("consumer.session.timeout.ms", "SET", "12000"))
    assert code == "INVALID_CONFIG"
    assert message == (
        "consumer.session.timeout.ms must be greater than or equal to "
        "group.consumer.min.session.timeout.ms"
    )
    assert configs(cluster, "GROUP", "g") == {"consumer.heartbeat.interval.ms": "15000"}
    assert answer(cluster, "GROUP", "g", op("share.auto.offset.reset", "SET", "by_duration:PT1H"))[
        0
    ] == ("NONE")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("consumer.session.timeout.ms", "0", "Value must be at least 1"),
        ("consumer.session.timeout.ms", "61000", "must be less than or equal to"),
        ("share.record.lock.duration.ms", "999", "Value must be at least 1000"),
        ("share.record.lock.duration.ms", "14000", "group.share.min.record.lock.duration.ms"),
        ("streams.num.standby.replicas", "3", "group.streams.max.standby.replicas"),
        ("share.isolation.level", "dirty", "String must be one of"),
        ("share.auto.offset.reset", "none", "by_duration:<PnDTnHnMn.nS>"),
        ("share.auto.offset.reset", "by_duration:-PT1S", "by_duration"),
        ("streams.heartbeat.interval.ms", "x", "Not a number of type INT"),
        ("group.id", "x", "Unknown group config name: group.id"),
    ],
)
def test_group_bad_input_is_invalid_config_and_writes_nothing(
    cluster: Cluster, name: str, value: str, message: str
) -> None:
    code, text = answer(cluster, "GROUP", "g", op(name, "SET", value))
    assert code == "INVALID_CONFIG" and message in text, text
    assert configs(cluster, "GROUP", "g") == {}


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["consumer", "share", "streams"]),
    session=st.integers(40000, 65000),
    heartbeat=st.integers(4000, 50000),
)
def test_a_groups_session_and_heartbeat_are_accepted_exactly_within_kafkas_rules(
    kind: str, session: int, heartbeat: int
) -> None:
    cluster = Cluster()
    session_key, heartbeat_key = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
    (s_low, s_high), (h_low, h_high) = (
        (bound[1] for bound in GROUP_BOUNDS[key])  # type: ignore[index]
        for key in (session_key, heartbeat_key)
    )
    accepted = s_low <= session <= s_high and h_low <= heartbeat <= h_high and session > heartbeat
    code, _ = answer(
        cluster,
        "GROUP",
        "g",
        op(session_key, "SET", str(session)),
        op(heartbeat_key, "SET", str(heartbeat)),
    )
    assert (code == "NONE") == accepted
    assert bool(configs(cluster, "GROUP", "g")) == accepted


def test_legacy_alter_configs_replaces_a_groups_whole_set(cluster: Cluster) -> None:
    run(cluster, ALTER, resource("GROUP", "g", consumer_session_timeout_ms="50000"))
    assert configs(cluster, "GROUP", "g") == {"consumer.session.timeout.ms": "50000"}
    response = run(cluster, ALTER, resource("CLIENT_METRICS", "m", interval_ms="2000"))
    assert errors(response) == ["NONE"]
    run(cluster, ALTER, resource("GROUP", "g"))
    assert configs(cluster, "GROUP", "g") == {}


def test_describe_answers_every_key_with_its_source() -> None:
    stored = {("GROUP", "g"): {"consumer.session.timeout.ms": "50000"}}
    entries = describe_configs(
        "GROUP",
        "g",
        dynamic=lambda t, n, k: stored.get((t, n), {}).get(k),
        static={},
        include_synonyms=True,
    )
    by_name = {e["name"]: e for e in entries}
    assert len(by_name) == 10
    session = by_name["consumer.session.timeout.ms"]
    assert (session["value"], session["config_source"]) == ("50000", "GROUP_CONFIG")
    assert [s["source"] for s in session["synonyms"]] == ["GROUP_CONFIG", "DEFAULT_CONFIG"]
    reset = by_name["share.auto.offset.reset"]
    assert (reset["value"], reset["config_source"], reset["config_type"]) == (
        "latest",
        "DEFAULT_CONFIG",
        "STRING",
    )
    metrics = describe_configs(
        "CLIENT_METRICS", "m", dynamic=lambda *_: None, static={}, keys=["interval.ms"]
    )
    assert [(e["name"], e["value"], e["config_source"]) for e in metrics] == [
        ("interval.ms", "300000", "DEFAULT_CONFIG")
    ]


def test_client_configs_are_not_secrets() -> None:
    assert not is_sensitive("CLIENT_METRICS", "match")
    assert not is_sensitive("GROUP", "consumer.session.timeout.ms")
    assert is_sensitive("GROUP", "not.a.group.key")  # unknown: conservative, as Kafka
    data = {"resource_type": "GROUP", "resource_name": "g", "name": "share.isolation.level"}
    assert redact_record_data("ConfigRecord", {**data, "value": "read_committed"})["value"] == (
        "read_committed"
    )


@given(st.text(max_size=30))
def test_a_match_pattern_is_accepted_only_as_a_known_selector_and_a_regex(pattern: str) -> None:
    import re

    parts = pattern.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    try:
        check_match_pattern(pattern)
    except ApiError:
        return
    assert len(parts) == 2 and parts[0].strip() in {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
    re.compile(parts[1].strip())


def test_an_empty_list_of_keys_describes_every_key_as_null_does() -> None:
    """Kafka's ConfigHelper reads an empty configuration_keys as null: every key."""
    for rtype in ("GROUP", "TOPIC"):
        every = describe_configs(rtype, "x", dynamic=lambda *_: None, static={}, keys=None)
        assert describe_configs(rtype, "x", dynamic=lambda *_: None, static={}, keys=[]) == every
        assert len(every) > 1
