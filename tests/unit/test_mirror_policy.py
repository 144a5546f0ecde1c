"""What a flow replicates (issue 13, point 4), by MirrorSourceConnector's rules in the pure core:
DefaultReplicationPolicy and cycle detection, the topic filter (whole-name regexes, Kafka's default
excludes, heartbeats), the ACL rule (ALLOW WRITE not synced, ALLOW ALL becomes READ, DENY kept,
LITERAL topic ACLs only) and the config rule (config.properties.exclude, dynamic configs only),
and the task configs and assignments as Connect computes them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller.mirror.assignment import (
    ASSIGNED_PARTITIONS,
    assigned_partition_counts,
    eager_assignment,
    source_task_configs,
)
from controlplane.controller.mirror.policy import (
    HEARTBEATS_FILTER,
    ReplicationPolicy,
    TopicSelection,
    config_sync_ops,
    creation_configs,
    target_acl,
)
from controlplane.controller.mirror.settings import SourceSettings

TOPIC = st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True)


def selection(**config: str) -> TopicSelection:
    return TopicSelection.of("A", "B", SourceSettings.parse(config))


def test_default_replication_policy() -> None:
    policy = ReplicationPolicy()
    assert policy.format_remote_topic("A", "orders") == "A.orders"
    assert policy.topic_source("A.orders") == "A" and policy.upstream_topic("A.orders") == "orders"
    assert policy.topic_source("orders") is None
    assert policy.topic_source("A.") is None  # Java's split drops the trailing empty string
    assert policy.original_topic("B.A.orders") == "orders"
    assert ReplicationPolicy("_").format_remote_topic("A", "orders") == "A_orders"
    assert policy.is_heartbeats_topic("heartbeats") and policy.is_heartbeats_topic("C.heartbeats")
    for internal in ("__consumer_offsets", ".hidden", "mm2-offsets.A.internal", "x-internal"):
        assert policy.is_internal_topic(internal), internal


def test_topic_filter_whole_names_defaults_and_reasons() -> None:
    chosen = selection(topics="orders.*, payments")
    assert chosen.matched_filter("orders.eu") == "orders.*"
    assert chosen.matched_filter("payments") == "payments"
    assert chosen.matched_filter("payments-v2") is None  # whole-name match, not search
    assert chosen.matched_filter("legacy.orders") is None
    everything = selection()
    assert everything.matched_filter("x.replica") is None  # Kafka's default excludes
    assert everything.matched_filter("__consumer_offsets") is None
    assert everything.matched_filter("connect-configs-internal") is None
    assert chosen.matched_filter("heartbeats") == HEARTBEATS_FILTER  # heartbeats replicate
    no_beats = selection(topics="orders.*", **{"heartbeats.replication.enabled": "false"})
    assert no_beats.matched_filter("heartbeats") is None
    excluded = selection(topics="orders.*", **{"topics.exclude": "orders.test.*"})
    assert excluded.matched_filter("orders.test.1") is None


def test_cycles_are_never_replicated_back() -> None:
    chosen = selection(topics=".*")
    assert chosen.is_cycle("B.orders")  # came from the target
    assert chosen.is_cycle("C.B.orders")  # came from the target further upstream
    assert not chosen.is_cycle("C.orders") and not chosen.is_cycle("orders")
    assert chosen.matched_filter("B.orders") is None
    assert chosen.matched_filter("B.heartbeats") is None  # even heartbeats
    assert chosen.remote_topic("C.orders") == "A.C.orders"


@given(TOPIC, st.sampled_from(["A", "C", "us-west"]))
def test_remote_topics_name_their_source_and_never_return(topic: str, source: str) -> None:
    policy = ReplicationPolicy()
    remote = policy.format_remote_topic(source, topic)
    assert policy.topic_source(remote) == source and policy.upstream_topic(remote) == topic
    back = TopicSelection("B", source, (".*",), (), policy)  # the flow back to the source
    assert back.is_cycle(remote)


def acl(operation: str, permission: str = "ALLOW", **overrides: str) -> dict[str, Any]:
    return {
        "resource_type": "TOPIC",
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": operation,
        "permission_type": permission,
        **overrides,
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (acl("READ"), ("READ", "ALLOW")),
        (acl("DESCRIBE"), ("DESCRIBE", "ALLOW")),
        (acl("WRITE"), None),  # ALLOW WRITE: only the flow writes remote topics
        (acl("ALL"), ("READ", "ALLOW")),  # ALLOW ALL becomes ALLOW READ
        (acl("WRITE", "DENY"), ("WRITE", "DENY")),  # DENY is kept
        (acl("ALL", "DENY"), ("ALL", "DENY")),
        (acl("READ", pattern_type="PREFIXED"), None),  # LITERAL only
        (acl("READ", resource_type="GROUP"), None),
        (acl("READ", resource_name="not-selected"), None),
        (acl("READ", resource_name="B.orders"), None),  # a cycle
    ],
)
def test_acl_sync_rule(source: dict[str, Any], expected: tuple[str, str] | None) -> None:
    synced = target_acl(source, selection(topics="orders, B.orders"))
    if expected is None:
        assert synced is None
    else:
        assert synced is not None
        assert (synced["operation"], synced["permission_type"]) == expected
        assert synced["resource_name"] == "A." + source["resource_name"]
        assert synced["pattern_type"] == "LITERAL" and synced["principal"] == "User:alice"


def entry(
    name: str, value: str | None, source: str = "DYNAMIC_TOPIC_CONFIG", **flags: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "config_source": source,
        "read_only": False,
        "is_sensitive": False,
        **flags,
    }


def test_config_sync_rule() -> None:
    exclude = SourceSettings.parse({}).config_properties_exclude
    source = [
        entry("retention.ms", "1000"),
        entry("cleanup.policy", "compact"),
        entry("min.insync.replicas", "2"),  # excluded by MirrorMaker's default list
        entry("unclean.leader.election.enable", "true"),  # excluded
        entry("segment.bytes", "1073741824", "DEFAULT_CONFIG"),  # a default: not copied
        entry("max.message.bytes", "5", read_only=True),
        entry("some.secret", None, is_sensitive=True),
    ]
    target = [entry("retention.ms", "1000"), entry("compression.type", "lz4")]
    ops = config_sync_ops(source, target, exclude)
    assert ops == [
        {"name": "cleanup.policy", "config_operation": "SET", "value": "compact"},
        {"name": "compression.type", "config_operation": "DELETE", "value": None},
    ]
    assert (
        config_sync_ops(
            source, [entry("retention.ms", "1000"), entry("cleanup.policy", "compact")], exclude
        )
        == []
    )
    assert creation_configs(source, exclude) == [
        {"name": "cleanup.policy", "value": "compact"},
        {"name": "retention.ms", "value": "1000"},
    ]
    # A target's own excluded key is never touched.
    assert config_sync_ops([], [entry("min.insync.replicas", "3")], exclude) == []


def test_task_configs_round_robin_as_mirror_source_connector() -> None:
    # Kafka's example: 3 tasks, topics with 8, 2 and 2 partitions.
    configs = source_task_configs({"name": "x"}, {"t0": 8, "t1": 2, "t2": 2}, 3)
    assert [c[ASSIGNED_PARTITIONS] for c in configs] == [
        "t0-0,t0-3,t0-6,t1-1",
        "t0-1,t0-4,t0-7,t2-0",
        "t0-2,t0-5,t1-0,t2-1",
    ]
    assert all(c["name"] == "x" for c in configs)
    assert source_task_configs({}, {}, 4) == []
    assert len(source_task_configs({}, {"one": 1}, 4)) == 1
    merged = assigned_partition_counts({ASSIGNED_PARTITIONS: "my-topic-0,my-topic-2,b-0"})
    assert merged == {"my-topic": 3, "b": 1}


def test_eager_assignment_is_connects() -> None:
    members = [("m-c", "127.0.0.4/A__B"), ("m-a", "127.0.0.2/A__B"), ("m-b", "127.0.0.3/A__B")]
    connectors = ["MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"]
    plan = {
        a.member_id: a
        for a in eager_assignment(
            members, connectors, {"MirrorHeartbeatConnector": 1, "MirrorSourceConnector": 2}
        )
    }
    assert plan["m-a"].connectors == ("MirrorCheckpointConnector",)
    assert plan["m-b"].connectors == ("MirrorHeartbeatConnector",)
    assert plan["m-c"].connectors == ("MirrorSourceConnector",)
    assert plan["m-a"].tasks == ("MirrorHeartbeatConnector-0",)
    assert plan["m-b"].tasks == ("MirrorSourceConnector-0",)
    assert plan["m-c"].tasks == ("MirrorSourceConnector-1",)
    assert eager_assignment([], connectors, {}) == ()
