"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.models import Cluster, ConfigEntry, MetadataRecord
from controlplane.runtime.controller import get_runtime
from tests.controller_events import create_acls as create_admin_acls

pytestmark = pytest.mark.django_db

DESCRIBE = "/api/v1/describe-configs"
ALTER = "/api/v1/alter-configs"
INCREMENTAL = "/api/v1/incremental-alter-configs"
SECRET = "do-not-show-me-0123"


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def stored() -> dict[tuple[str, str, str], str]:
    return {(e.resource_type, e.resource_name, e.name): e.value for e in ConfigEntry.objects.all()}


def op(name: str, operation: str, value: str | None = None) -> dict[str, Any]:
    return {"name": name, "config_operation": operation, "value": value}


def inc(rtype: str, name: str, *ops: dict[str, Any]) -> dict[str, Any]:
    return {"resource_type": rtype, "resource_name": name, "configs": list(ops)}


def alter_resource(rtype: str, name: str, **configs: str | None) -> dict[str, Any]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }


def post_ok(api: Any, path: str, body: dict[str, Any], token: str) -> list[dict[str, Any]]:
    status, answer = api.post(path, body, token=token)
    assert status == 200, answer
    key = "results" if path == DESCRIBE else "responses"
    return list(answer[key])


def describe(
    api: Any, token: str, rtype: str, name: str, keys: list[str] | None = None, **flags: bool
) -> dict[str, Any]:
    results = post_ok(
        api,
        DESCRIBE,
        {
            "resources": [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}
            ],
            **flags,
        },
        token,
    )
    return results[0]


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in result["configs"]}


def create_acls(*creations: dict[str, str]) -> None:
    response = create_admin_acls(*creations)
    assert all(r["error_code"] == 0 for r in response["results"]), response


def acl(rtype: str, name: str, operation: str, principal: str = "User:alice") -> dict[str, str]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": "ALLOW",
    }


@pytest.fixture
def topic(api: Any, tokens: dict[str, str], register: Any) -> str:
    for broker_id in range(3):
        register(broker_id, unfence=True)
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 2, "replication_factor": 3}]},
        token=tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    return "orders"


# --- writes -------------------------------------------------------------------------------


def test_incremental_alter_and_describe_topic(api, tokens, topic):
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc(
                    "TOPIC",
                    topic,
                    op("retention.ms", "SET", "1000"),
                    op("cleanup.policy", "APPEND", "compact"),
                )
            ]
        },
        tokens["admin"],
    )
    assert answers == [
        {
            "error_code": 0,
            "error": "NONE",
            "error_message": None,
            "resource_type": "TOPIC",
            "resource_name": topic,
        }
    ]
    assert stored() == {
        ("TOPIC", topic, "retention.ms"): "1000",
        ("TOPIC", topic, "cleanup.policy"): "delete,compact",
    }
    result = describe(api, tokens["admin"], "TOPIC", topic)
    assert result["error_code"] == 0
    configs = by_name(result)
    assert configs["retention.ms"]["value"] == "1000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["retention.ms"]["config_type"] == "LONG"
    assert configs["cleanup.policy"]["value"] == "delete,compact"
    assert configs["segment.ms"]["config_source"] == "DEFAULT_CONFIG"
    # The records are in the metadata log, as Kafka's ConfigRecord.
    records = MetadataRecord.objects.filter(record_type="ConfigRecord")
    assert records.count() == 2


def test_alter_configs_full_replace(api, tokens, topic):
    post_ok(
        api,
        ALTER,
        {"resources": [alter_resource("TOPIC", topic, **{"retention.ms": "5", "segment.ms": "9"})]},
        tokens["admin"],
    )
    answers = post_ok(
        api,
        ALTER,
        {"resources": [alter_resource("TOPIC", topic, **{"segment.ms": "10"})]},
        tokens["admin"],
    )
    assert answers[0]["error_code"] == 0
    assert stored() == {("TOPIC", topic, "segment.ms"): "10"}


def test_no_op_and_validate_only_write_nothing(api, tokens, topic):
    body = {"resources": [inc("TOPIC", topic, op("retention.ms", "SET", "1000"))]}
    post_ok(api, INCREMENTAL, body, tokens["admin"])
    end = log_end()
    assert post_ok(api, INCREMENTAL, body, tokens["admin"])[0]["error_code"] == 0
    assert log_end() == end
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [inc("TOPIC", topic, op("retention.ms", "SET", "2000"))],
            "validate_only": True,
        },
        tokens["admin"],
    )
    assert answers[0]["error_code"] == 0
    answers = post_ok(
        api,
        ALTER,
        {
            "resources": [alter_resource("TOPIC", topic, **{"retention.ms": "x"})],
            "validate_only": True,
        },
        tokens["admin"],
    )
    assert answers[0]["error"] == "INVALID_CONFIG"
    assert log_end() == end
    assert stored() == {("TOPIC", topic, "retention.ms"): "1000"}


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"resources": "x"},
        {"resources": [{"resource_type": "TOPIC"}]},
        {"resources": [inc("QUEUE", "x", op("a", "SET", "b"))]},
        {"resources": [inc("TOPIC", "orders", op("retention.ms", "MULTIPLY", "2"))]},
        {"resources": [inc("TOPIC", "orders", op("retention.ms", "SET", 5))]},
        {"resources": [inc("TOPIC", "orders", {"name": "retention.ms", "value": "5"})]},
        {"resources": [], "validate_only": "yes"},
        {"resources": [], "extra": 1},
    ],
)
def test_bad_input_is_400_and_writes_nothing(api, tokens, topic, body):
    end = log_end()
    status, answer = api.post(INCREMENTAL, body, token=tokens["admin"])
    assert status == 400, answer
    assert answer["error"] == "INVALID_REQUEST" and answer["error_code"] == 42
    assert log_end() == end and stored() == {}
    status, answer = api.post("/api/v1/describe-configs", body, token=tokens["admin"])
    assert status == 400


def test_per_resource_errors(api, tokens, topic):
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc("TOPIC", "missing", op("retention.ms", "SET", "1")),
                inc("TOPIC", topic, op("x", "SET", "1")),
                inc("TOPIC", topic, op("retention.ms", "SET", "1")),
                inc("BROKER", "42", op("log.retention.ms", "SET", "1")),
                inc("BROKER", "1", op("log.retention.ms", "APPEND", "1")),
                inc("BROKER", "", op("num.partitions", "SET", "3")),
                inc("GROUP", "g", op("a", "SET", "1")),
                inc(
                    "BROKER",
                    "2",
                    op("log.retention.ms", "SET", "-1"),
                    op("log.retention.ms", "DELETE"),
                ),
                inc("BROKER_LOGGER", "0", op("kafka.controller", "SET", "TRACE")),
            ]
        },
        tokens["admin"],
    )
    assert [a["error"] for a in answers] == [
        "UNKNOWN_TOPIC_OR_PARTITION",
        "INVALID_REQUEST",  # duplicate resource
        "INVALID_REQUEST",
        "BROKER_ID_NOT_REGISTERED",
        "INVALID_CONFIG",
        "INVALID_CONFIG",
        "INVALID_CONFIG",  # Unknown group config name: a
        "INVALID_REQUEST",  # duplicate keys
        "NONE",
    ]
    assert [a["resource_name"] for a in answers][:3] == ["missing", topic, topic]
    assert stored() == {("BROKER_LOGGER", "0", "kafka.controller"): "TRACE"}
    result = describe(api, tokens["admin"], "BROKER_LOGGER", "0")
    assert by_name(result)["kafka.controller"]["value"] == "TRACE"
    assert by_name(result)["kafka.controller"]["config_source"] == "DYNAMIC_BROKER_LOGGER_CONFIG"


def test_unknown_topic_config_message(api, tokens, topic):
    answers = post_ok(
        api,
        ALTER,
        {"resources": [alter_resource("TOPIC", topic, x="1")]},
        tokens["admin"],
    )
    assert answers[0]["error"] == "INVALID_CONFIG"
    assert answers[0]["error_message"] == "Unknown topic config name: x"


# --- describe: sources and precedence -----------------------------------------------------


def test_describe_sources_and_precedence(api, tokens, topic, settings):
    settings.CP_STATIC_BROKER_CONFIGS = {
        **settings.CP_STATIC_BROKER_CONFIGS,
        "log.retention.ms": "7000",
        "min.insync.replicas": "2",
    }
    post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc("BROKER", "", op("min.insync.replicas", "SET", "3")),
                inc("BROKER", "1", op("min.insync.replicas", "SET", "1")),
                inc("TOPIC", topic, op("max.message.bytes", "SET", "100")),
            ]
        },
        tokens["admin"],
    )
    configs = by_name(describe(api, tokens["admin"], "TOPIC", topic, include_synonyms=True))
    assert (
        configs["max.message.bytes"]["value"],
        configs["max.message.bytes"]["config_source"],
    ) == (
        "100",
        "DYNAMIC_TOPIC_CONFIG",
    )
    mir = configs["min.insync.replicas"]
    assert (mir["value"], mir["config_source"]) == ("3", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert [(s["name"], s["value"], s["source"]) for s in mir["synonyms"]] == [
        ("min.insync.replicas", "3", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        ("min.insync.replicas", "2", "STATIC_BROKER_CONFIG"),
        ("min.insync.replicas", "1", "DEFAULT_CONFIG"),
    ]
    assert configs["retention.ms"]["value"] == "7000"
    assert configs["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert configs["retention.ms"]["synonyms"][0]["name"] == "log.retention.ms"
    broker = by_name(describe(api, tokens["admin"], "BROKER", "1", include_documentation=True))
    assert broker["min.insync.replicas"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
    assert broker["min.insync.replicas"]["value"] == "1"
    assert broker["num.partitions"]["read_only"] is True
    assert broker["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert broker["min.insync.replicas"]["documentation"]
    assert broker["min.insync.replicas"]["synonyms"] == []
    other = by_name(describe(api, tokens["admin"], "BROKER", "2"))
    assert other["min.insync.replicas"]["config_source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    default = describe(api, tokens["admin"], "BROKER", "")
    assert [c["name"] for c in default["configs"]] == ["min.insync.replicas"]
    only = describe(api, tokens["admin"], "TOPIC", topic, keys=["segment.ms", "nope"])
    assert [c["name"] for c in only["configs"]] == ["segment.ms"]
    missing = describe(api, tokens["admin"], "TOPIC", "missing")
    assert missing["error"] == "UNKNOWN_TOPIC_OR_PARTITION" and missing["configs"] == []
    assert describe(api, tokens["admin"], "BROKER", "99")["error"] == "BROKER_ID_NOT_REGISTERED"


# --- sensitive values ---------------------------------------------------------------------


def test_the_token_key_is_a_static_setting_hidden_and_never_written(
    api, tokens, topic, caplog, settings
):
    """delegation.token.secret.key is read-only, as in Kafka (a node setting): every change
    is INVALID_CONFIG and writes nothing; DescribeConfigs shows it as a static password
    (STATIC_BROKER_CONFIG, no value), and the value is never in an answer or a log line."""
    settings.CP_STATIC_BROKER_CONFIGS = {
        **settings.CP_STATIC_BROKER_CONFIGS,
        "delegation.token.secret.key": SECRET,
    }
    caplog.set_level("DEBUG")
    before = log_end()
    for operation in ("SET", "APPEND", "DELETE"):
        bad = post_ok(
            api,
            INCREMENTAL,
            {
                "resources": [
                    inc("BROKER", "", op("delegation.token.secret.key", operation, SECRET))
                ]
            },
            tokens["admin"],
        )
        assert bad[0]["error"] == "INVALID_CONFIG" and SECRET not in json.dumps(bad)
        assert "Cannot update these configs dynamically" in bad[0]["error_message"]
    legacy = post_ok(
        api,
        ALTER,
        {"resources": [alter_resource("BROKER", "", **{"delegation.token.secret.key": SECRET})]},
        tokens["admin"],
    )
    assert legacy[0]["error"] == "INVALID_CONFIG" and SECRET not in json.dumps(legacy)
    assert log_end() == before
    assert ("BROKER", "", "delegation.token.secret.key") not in stored()
    result = describe(api, tokens["admin"], "BROKER", "1", include_synonyms=True)
    secret = by_name(result)["delegation.token.secret.key"]
    assert secret["value"] is None and secret["is_sensitive"] is True
    assert (secret["config_source"], secret["read_only"]) == ("STATIC_BROKER_CONFIG", True)
    assert secret["config_type"] == "PASSWORD"
    assert [(s["value"], s["source"]) for s in secret["synonyms"]] == [
        (None, "STATIC_BROKER_CONFIG")
    ]
    assert SECRET not in json.dumps(result)
    default = describe(api, tokens["admin"], "BROKER", "")
    assert "delegation.token.secret.key" not in by_name(default)
    assert SECRET not in caplog.text


# --- effects ------------------------------------------------------------------------------


def test_cluster_default_disables_rebalance(api, tokens, topic):
    from controlplane.controller.env import ControllerEnv
    from controlplane.controller.image import MetadataDelta

    post_ok(
        api,
        INCREMENTAL,
        {"resources": [inc("BROKER", "", op("auto.leader.rebalance.enable", "SET", "false"))]},
        tokens["admin"],
    )
    runtime = get_runtime()
    runtime.ensure_active()
    image = runtime.image
    env = ControllerEnv(now_ms=0, activated_ms=0, sessions={})
    assert env.configs(MetadataDelta(image)).broker_value("auto.leader.rebalance.enable") is False


def test_topic_unclean_election_config_reaches_the_controller(api, tokens, topic):
    from controlplane.controller.env import ControllerEnv
    from controlplane.controller.image import MetadataDelta

    post_ok(
        api,
        INCREMENTAL,
        {"resources": [inc("TOPIC", topic, op("unclean.leader.election.enable", "SET", "true"))]},
        tokens["admin"],
    )
    runtime = get_runtime()
    runtime.ensure_active()
    env = ControllerEnv(now_ms=0, activated_ms=0, sessions={})
    assert env.configs(MetadataDelta(runtime.image)).unclean_election_enabled(topic) is True


# --- authorization ------------------------------------------------------------------------


def test_authorization_failures(api, tokens, topic):
    end = log_end()
    answers = post_ok(
        api,
        INCREMENTAL,
        {
            "resources": [
                inc("TOPIC", topic, op("retention.ms", "SET", "1")),
                inc("BROKER", "", op("log.retention.ms", "SET", "1")),
                inc("BROKER_LOGGER", "1", op("kafka.log", "SET", "INFO")),
            ]
        },
        tokens["alice"],
    )
    assert [a["error"] for a in answers] == [
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
    ]
    assert log_end() == end
    result = describe(api, tokens["alice"], "TOPIC", topic)
    assert result["error"] == "TOPIC_AUTHORIZATION_FAILED" and result["configs"] == []
    # Unauthorized describers do not learn whether a topic exists.
    assert describe(api, tokens["alice"], "TOPIC", "missing")["error"] == (
        "TOPIC_AUTHORIZATION_FAILED"
    )
    assert describe(api, tokens["alice"], "BROKER", "1")["error"] == (
        "CLUSTER_AUTHORIZATION_FAILED"
    )
    status, body = api.post(
        ALTER, {"resources": [alter_resource("TOPIC", topic)]}, token=tokens["broker"]
    )
    assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    status, body = api.post(ALTER, {"resources": []}, token=None)
    assert status == 401


def test_acl_grants_per_resource(api, tokens, topic):
    create_acls(acl("TOPIC", topic, "ALTER_CONFIGS"))
    answers = post_ok(
        api,
        ALTER,
        {
            "resources": [
                alter_resource("TOPIC", topic, **{"retention.ms": "5"}),
                alter_resource("BROKER", "", **{"log.retention.ms": "5"}),
            ]
        },
        tokens["alice"],
    )
    assert [a["error"] for a in answers] == ["NONE", "CLUSTER_AUTHORIZATION_FAILED"]
    assert stored() == {("TOPIC", topic, "retention.ms"): "5"}
    # ALTER_CONFIGS implies DESCRIBE_CONFIGS.
    result = describe(api, tokens["alice"], "TOPIC", topic)
    assert result["error_code"] == 0
    assert by_name(result)["retention.ms"]["value"] == "5"
