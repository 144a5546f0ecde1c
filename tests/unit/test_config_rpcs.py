"""AlterConfigs and IncrementalAlterConfigs in the pure core (Kafka's ConfigurationControlManager
semantics), DescribeConfigs' value precedence, and record redaction."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.controller.config_schema import REDACTED, redact_record_data
from controlplane.controller.configs.describe import describe_configs, describe_loggers
from controlplane.controller.errors import Errors
from controlplane.controller.records import ConfigRecord
from controlplane.controller.replication.elections import rebalance_leaders
from tests.unit.test_replication_core import Cluster

ALTER = "AlterConfigs"
INCREMENTAL = "IncrementalAlterConfigs"


def resource(rtype: str, name: str, **configs: Any) -> dict[str, Any]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
    }


def op(name: str, operation: str, value: str | None = None) -> dict[str, Any]:
    return {"name": name, "config_operation": operation, "value": value}


def inc(rtype: str, name: str, *ops: dict[str, Any]) -> dict[str, Any]:
    return {"resource_type": rtype, "resource_name": name, "configs": list(ops)}


def errors(response: dict[str, Any]) -> list[str]:
    return [r["error"] for r in response["responses"]]


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.register(0, 1, 2)
    c.create_topic("orders", [[0, 1, 2]])
    return c


def run(cluster: Cluster, api: str, *resources: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return cluster.run(api, {"resources": list(resources), **extra})


def configs(cluster: Cluster, rtype: str, name: str) -> dict[str, str]:
    return dict(cluster.image.configs.get((rtype, name), {}))


# --- AlterConfigs (full replace) ----------------------------------------------------------


def test_alter_configs_replaces_every_dynamic_config(cluster: Cluster) -> None:
    response = run(cluster, ALTER, resource("TOPIC", "orders", retention_ms="1000"))
    assert errors(response) == ["NONE"]
    assert response["responses"][0]["resource_name"] == "orders"
    assert configs(cluster, "TOPIC", "orders") == {"retention.ms": "1000"}
    run(cluster, ALTER, resource("TOPIC", "orders", **{"cleanup_policy": "compact"}))
    assert configs(cluster, "TOPIC", "orders") == {"cleanup.policy": "compact"}
    run(cluster, ALTER, resource("TOPIC", "orders"))
    assert configs(cluster, "TOPIC", "orders") == {}


def test_unchanged_value_writes_no_record(cluster: Cluster) -> None:
    run(cluster, ALTER, resource("TOPIC", "orders", retention_ms="1000"))
    before = len(cluster.records)
    assert errors(run(cluster, ALTER, resource("TOPIC", "orders", retention_ms="1000"))) == ["NONE"]
    assert errors(
        run(cluster, INCREMENTAL, inc("TOPIC", "orders", op("retention.ms", "SET", "1000")))
    ) == ["NONE"]
    assert errors(
        run(cluster, INCREMENTAL, inc("TOPIC", "orders", op("segment.ms", "DELETE")))
    ) == ["NONE"]
    assert len(cluster.records) == before


def test_validate_only_writes_nothing(cluster: Cluster) -> None:
    response = run(
        cluster, ALTER, resource("TOPIC", "orders", retention_ms="1000"), validate_only=True
    )
    assert errors(response) == ["NONE"]
    response = run(
        cluster,
        INCREMENTAL,
        inc("TOPIC", "orders", op("retention.ms", "SET", "x")),
        validate_only=True,
    )
    assert errors(response) == ["INVALID_CONFIG"]
    assert configs(cluster, "TOPIC", "orders") == {}


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("x", "1", "INVALID_CONFIG", "Unknown topic config name: x"),
        ("retention.ms", "soon", "INVALID_CONFIG", "Not a number of type LONG"),
        ("retention.ms", "-2", "INVALID_CONFIG", "Value must be at least -1"),
        ("segment.bytes", str(2**31), "INVALID_CONFIG", "Not a number of type INT"),
        ("min.cleanable.dirty.ratio", "1.5", "INVALID_CONFIG", "no more than 1"),
        ("unclean.leader.election.enable", "yes", "INVALID_CONFIG", "either true or false"),
        ("cleanup.policy", "delete,forever", "INVALID_CONFIG", "List must be one of"),
        ("retention.ms", None, "INVALID_REQUEST", "Null value not supported"),
    ],
)
def test_alter_configs_invalid_values(
    cluster: Cluster, name: str, value: str | None, error: str, message: str
) -> None:
    answer = run(
        cluster,
        ALTER,
        {
            "resource_type": "TOPIC",
            "resource_name": "orders",
            "configs": [{"name": "segment.ms", "value": "5"}, {"name": name, "value": value}],
        },
    )["responses"][0]
    assert answer["error"] == error
    assert message in answer["error_message"]
    assert configs(cluster, "TOPIC", "orders") == {}  # all or nothing per resource


def test_per_resource_errors_and_partial_success(cluster: Cluster) -> None:
    response = run(
        cluster,
        ALTER,
        resource("TOPIC", "missing", retention_ms="1"),
        resource("TOPIC", "", retention_ms="1"),
        resource("BROKER", "7", min_insync_replicas="2"),
        resource("BROKER", "one", min_insync_replicas="2"),
        resource("GROUP", ""),  # Kafka: "Default group resources are not allowed."
        resource("BROKER", "1", min_insync_replicas="2"),
        resource("BROKER", "", num_partitions="3"),
        resource("BROKER_LOGGER", "1"),
    )
    assert errors(response) == [
        "UNKNOWN_TOPIC_OR_PARTITION",
        "INVALID_REQUEST",
        "BROKER_ID_NOT_REGISTERED",
        "INVALID_REQUEST",
        "INVALID_REQUEST",
        "NONE",
        "INVALID_CONFIG",  # read-only
        "INVALID_REQUEST",  # AlterConfigs does not serve BROKER_LOGGER (as Kafka)
    ]
    assert configs(cluster, "BROKER", "1") == {"min.insync.replicas": "2"}
    assert (
        "Cannot update these configs dynamically: num.partitions"
        in (response["responses"][6]["error_message"])
    )


def test_duplicate_resources_and_keys_are_invalid_requests(cluster: Cluster) -> None:
    response = run(
        cluster,
        ALTER,
        resource("TOPIC", "orders", retention_ms="1"),
        resource("TOPIC", "orders", retention_ms="2"),
        resource("BROKER", "", log_retention_ms="5"),
    )
    assert errors(response) == ["INVALID_REQUEST", "INVALID_REQUEST", "NONE"]
    response = run(
        cluster,
        INCREMENTAL,
        inc("TOPIC", "orders", op("retention.ms", "SET", "1"), op("retention.ms", "DELETE")),
    )
    assert errors(response) == ["INVALID_REQUEST"]
    assert response["responses"][0]["error_message"] == "Error due to duplicate config keys"
    assert configs(cluster, "TOPIC", "orders") == {}


# --- IncrementalAlterConfigs --------------------------------------------------------------


def test_incremental_set_and_delete(cluster: Cluster) -> None:
    run(cluster, ALTER, resource("TOPIC", "orders", retention_ms="1000", segment_ms="50"))
    response = run(
        cluster,
        INCREMENTAL,
        inc("TOPIC", "orders", op("retention.ms", "DELETE"), op("max.message.bytes", "SET", "9")),
    )
    assert errors(response) == ["NONE"]
    assert configs(cluster, "TOPIC", "orders") == {"segment.ms": "50", "max.message.bytes": "9"}


def test_append_and_subtract_on_list_configs(cluster: Cluster) -> None:
    # No dynamic value yet: APPEND starts from the default ("delete"), as Kafka's getParts.
    response = run(
        cluster, INCREMENTAL, inc("TOPIC", "orders", op("cleanup.policy", "APPEND", "compact"))
    )
    assert errors(response) == ["NONE"]
    assert configs(cluster, "TOPIC", "orders") == {"cleanup.policy": "delete,compact"}
    run(cluster, INCREMENTAL, inc("TOPIC", "orders", op("cleanup.policy", "APPEND", "compact")))
    assert configs(cluster, "TOPIC", "orders") == {"cleanup.policy": "delete,compact"}
    run(cluster, INCREMENTAL, inc("TOPIC", "orders", op("cleanup.policy", "SUBTRACT", "delete")))
    assert configs(cluster, "TOPIC", "orders") == {"cleanup.policy": "compact"}
    bad = run(cluster, INCREMENTAL, inc("TOPIC", "orders", op("cleanup.policy", "APPEND", "x")))
    assert errors(bad) == ["INVALID_CONFIG"]


@pytest.mark.parametrize("operation", ["APPEND", "SUBTRACT"])
def test_append_subtract_on_non_list_is_invalid_config(cluster: Cluster, operation: str) -> None:
    response = run(cluster, INCREMENTAL, inc("TOPIC", "orders", op("retention.ms", operation, "1")))
    assert errors(response) == ["INVALID_CONFIG"]
    assert "because its type is not LIST" in response["responses"][0]["error_message"]


def test_incremental_unknown_key_and_null_set(cluster: Cluster) -> None:
    response = run(
        cluster,
        INCREMENTAL,
        inc("TOPIC", "orders", op("nope", "DELETE")),
        inc("BROKER", "", op("log.retention.ms", "SET", None)),
        inc("BROKER", "1", op("listeners", "SET", "x")),
    )
    assert errors(response) == ["INVALID_CONFIG", "INVALID_REQUEST", "INVALID_CONFIG"]
    assert response["responses"][0]["error_message"] == "Unknown topic config name: nope"
    assert response["responses"][2]["error_message"] == "Unknown broker config name: listeners"


def test_broker_logger_levels(cluster: Cluster) -> None:
    response = run(
        cluster,
        INCREMENTAL,
        inc("BROKER_LOGGER", "1", op("kafka.controller", "SET", "DEBUG")),
    )
    assert errors(response) == ["NONE"]
    assert configs(cluster, "BROKER_LOGGER", "1") == {"kafka.controller": "DEBUG"}
    assert isinstance(cluster.records[-1], ConfigRecord)
    response = run(
        cluster,
        INCREMENTAL,
        inc("BROKER_LOGGER", "1", op("kafka.log", "SET", "LOUD")),
        inc("BROKER_LOGGER", "2", op("kafka.log", "APPEND", "INFO")),
        inc("BROKER_LOGGER", "2", op("root", "DELETE")),
        inc("BROKER_LOGGER", "", op("kafka.log", "SET", "INFO")),
        inc("BROKER_LOGGER", "9", op("kafka.log", "SET", "INFO")),
    )
    assert errors(response) == [
        "INVALID_CONFIG",
        "INVALID_REQUEST",
        "INVALID_REQUEST",
        "INVALID_REQUEST",
        "BROKER_ID_NOT_REGISTERED",
    ]
    assert "not a supported log level" in response["responses"][0]["error_message"]
    run(cluster, INCREMENTAL, inc("BROKER_LOGGER", "1", op("kafka.controller", "DELETE")))
    assert configs(cluster, "BROKER_LOGGER", "1") == {}


def test_sensitive_value_is_never_in_an_error_message(cluster: Cluster) -> None:
    """The token key is static alone (a node setting, as Kafka's server.properties): every
    change of it is INVALID_CONFIG, the value never in the answer, nothing written."""
    for operation in ("APPEND", "SET", "DELETE"):
        response = run(
            cluster,
            INCREMENTAL,
            inc("BROKER", "", op("delegation.token.secret.key", operation, "s3cret")),
        )
        assert errors(response) == ["INVALID_CONFIG"]
        assert "s3cret" not in str(response)
    assert "Cannot update these configs dynamically" in str(response)
    legacy = run(cluster, ALTER, resource("BROKER", "", delegation_token_secret_key="s3cret"))
    assert errors(legacy) == ["INVALID_CONFIG"] and "s3cret" not in str(legacy)
    assert configs(cluster, "BROKER", "") == {}


def test_a_read_only_key_is_never_read_from_the_dynamic_configs() -> None:
    """An older log may hold the token key as a record: neither the controller's view nor
    DescribeConfigs reads it; the static value (a node setting) is the one, shown as Kafka
    shows a static password (STATIC_BROKER_CONFIG, no value)."""
    from controlplane.controller.config_schema import ConfigView

    stored = {("BROKER", ""): {"delegation.token.secret.key": "from-the-log"}}

    def dynamic(t: str, n: str, k: str) -> str | None:
        return stored.get((t, n), {}).get(k)

    assert ConfigView(dynamic, {}).broker_value("delegation.token.secret.key") is None
    static = {"delegation.token.secret.key": "from-the-node"}
    assert ConfigView(dynamic, static).broker_value("delegation.token.secret.key") == (
        "from-the-node"
    )
    (entry,) = describe_configs(
        "BROKER",
        "1",
        dynamic=dynamic,
        static=static,
        keys=["delegation.token.secret.key"],
        include_synonyms=True,
    )
    assert entry["config_source"] == "STATIC_BROKER_CONFIG" and entry["read_only"] is True
    assert entry["value"] is None and entry["is_sensitive"] is True
    assert entry["synonyms"] == [
        {"name": "delegation.token.secret.key", "value": None, "source": "STATIC_BROKER_CONFIG"}
    ]
    assert describe_configs("BROKER", "", dynamic=dynamic, static=static) == []


# --- effects on the controller -----------------------------------------------------------


def test_topic_unclean_election_enabled_through_incremental_alter(cluster: Cluster) -> None:
    from controlplane.controller.config_schema import ConfigView

    view = ConfigView(lambda t, n, k: cluster.image.configs.get((t, n), {}).get(k), {})
    assert view.unclean_election_enabled("orders") is False
    response = run(
        cluster,
        INCREMENTAL,
        inc("TOPIC", "orders", op("unclean.leader.election.enable", "SET", "true")),
    )
    assert errors(response) == ["NONE"]
    assert view.unclean_election_enabled("orders") is True


def test_unclean_election_happens_after_config_change() -> None:
    c = Cluster()
    c.register(0, 1)
    c.create_topic("t", [[0, 1]])
    c.fence(1)  # ISR [0], leader 0
    c.fence(0)  # leader -1, ISR [0] kept
    c.unfence(1)
    assert c.image.partitions[(c.image.topic_ids["t"], 0)].leader == -1
    run(c, INCREMENTAL, inc("TOPIC", "t", op("unclean.leader.election.enable", "SET", "true")))
    response = c.run("ElectLeaders", {"election_type": "UNCLEAN", "topic_partitions": None})
    assert c.image.partitions[(c.image.topic_ids["t"], 0)].leader == 1, response


def test_cluster_default_disables_rebalance() -> None:
    from controlplane.controller.image import MetadataDelta

    c = Cluster()
    c.register(0, 1)
    c.create_topic("t", [[0, 1]])
    c.fence(0)
    c.unfence(0)
    assert c.alter_partition("t", 0, [1, 0])["error_code"] == 0
    # Broker 1 leads, broker 0 (preferred) is back in the ISR: a rebalance would move it.

    def rebalance_records() -> int:
        delta = MetadataDelta(c.image)
        changes, _ = rebalance_leaders(delta, configs=c.env().configs(delta))
        return len(list(changes.records))

    assert rebalance_records() == 1
    response = run(
        c, INCREMENTAL, inc("BROKER", "", op("auto.leader.rebalance.enable", "SET", "false"))
    )
    assert errors(response) == ["NONE"]
    assert rebalance_records() == 0
    run(c, INCREMENTAL, inc("BROKER", "", op("auto.leader.rebalance.enable", "DELETE")))
    assert rebalance_records() == 1


# --- describe and redaction ---------------------------------------------------------------


def test_describe_precedence_and_sources() -> None:
    stored = {
        ("TOPIC", "t"): {"retention.ms": "1"},
        ("BROKER", ""): {"log.segment.bytes": "2000", "min.insync.replicas": "2"},
        ("BROKER", "1"): {"min.insync.replicas": "3"},
    }
    static = {"num.partitions": "4", "min.insync.replicas": "5", "delegation.token.secret.key": "k"}

    def dynamic(t: str, n: str, k: str) -> str | None:
        return stored.get((t, n), {}).get(k)

    topic = {
        e["name"]: e
        for e in describe_configs(
            "TOPIC", "t", dynamic=dynamic, static=static, include_synonyms=True
        )
    }
    assert (topic["retention.ms"]["value"], topic["retention.ms"]["config_source"]) == (
        "1",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert topic["segment.bytes"]["config_source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert topic["segment.bytes"]["value"] == "2000"
    assert [s["source"] for s in topic["min.insync.replicas"]["synonyms"]] == [
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
    ]
    assert topic["compression.type"]["config_source"] == "DEFAULT_CONFIG"
    broker = {
        e["name"]: e
        for e in describe_configs(
            "BROKER", "1", dynamic=dynamic, static=static, include_documentation=True
        )
    }
    assert broker["min.insync.replicas"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
    assert broker["min.insync.replicas"]["value"] == "3"
    assert broker["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert broker["num.partitions"]["read_only"] is True
    assert broker["num.partitions"]["documentation"]
    secret = broker["delegation.token.secret.key"]
    assert secret["value"] is None and secret["is_sensitive"] is True
    assert secret["config_source"] == "STATIC_BROKER_CONFIG" and secret["read_only"] is True
    default = describe_configs("BROKER", "", dynamic=dynamic, static=static, keys=None)
    assert {e["name"] for e in default} == {"log.segment.bytes", "min.insync.replicas"}
    only = describe_configs("TOPIC", "t", dynamic=dynamic, static=static, keys=["retention.ms"])
    assert [e["name"] for e in only] == ["retention.ms"]
    loggers = describe_loggers({"kafka.controller": "DEBUG"})
    assert [(e["name"], e["value"]) for e in loggers] == [
        ("kafka.controller", "DEBUG"),
        ("root", "INFO"),
    ]


def test_redact_record_data() -> None:
    secret = {
        "resource_type": "BROKER",
        "resource_name": "",
        "name": "delegation.token.secret.key",
        "value": "k",
    }
    assert redact_record_data("ConfigRecord", secret)["value"] == REDACTED
    assert redact_record_data("ConfigRecord", {**secret, "value": None})["value"] is None
    plain = {**secret, "name": "log.retention.ms", "value": "5"}
    assert redact_record_data("ConfigRecord", plain) == plain
    assert redact_record_data("TopicRecord", {"value": "x"}) == {"value": "x"}
    logger = {"resource_type": "BROKER_LOGGER", "resource_name": "1", "name": "a", "value": "INFO"}
    assert redact_record_data("ConfigRecord", logger) == logger


def test_errors_enum_names_match() -> None:
    assert Errors.BROKER_ID_NOT_REGISTERED == 102
