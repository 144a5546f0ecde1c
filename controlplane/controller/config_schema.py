"""The config keys the control plane knows: types, ranges, defaults, documentation, synonyms;
which are sensitive; and `ConfigView`, the effective value of a key. Topics' and brokers' keys
are here, client metrics subscriptions' and groups' in `client_configs`; a key's definition and
parsing are `config_types`'.

Values travel and are stored as strings, as in Kafka; `ConfigDef.parse` checks one and answers
Kafka's INVALID_CONFIG with Kafka's ConfigException wording. A topic config falls back to its
broker synonym (dynamic cluster default, then static, then the default), as Kafka's LogConfig does.

Every domain reads configs (placement, elections, tokens), so the schema sits below them all, as
Kafka's KafkaConfigSchema sits below its controller; the configs domain (`configs/`) owns the
RPCs that change and describe them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.client_configs import (
    CLIENT_METRICS,
    CLIENT_METRICS_CONFIGS,
    GROUP,
    GROUP_CONFIGS,
)
from controlplane.controller.config_types import ConfigDef, ConfigType
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.scram_records import SECRET_FIELDS, USER_SCRAM_CREDENTIAL_RECORD

TOPIC = "TOPIC"
BROKER = "BROKER"
BROKER_LOGGER = "BROKER_LOGGER"
CLUSTER_DEFAULT = ""  # the BROKER resource with an empty name: every broker's default
# ConfigDef and ConfigType are config_types', read through here by every domain.
__all__ = ["ConfigDef", "ConfigType"]


T = ConfigType
COMPRESSION = frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})
LONG_MAX = str(2**63 - 1)  # Kafka's QUOTA_BYTES_PER_SECOND_DEFAULT: no throttle
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(name: str) -> Callable[[Any], str | None]:
    """Kafka's ThrottledReplicaListValidator: the literal `*`, or `partition:broker` items."""

    def check(items: list[str]) -> str | None:
        if "".join(items) == "*" or all(_THROTTLED_REPLICA.fullmatch(i) for i in items):
            return None
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return check


def _replication_throttle(name: str, what: str) -> ConfigDef:
    """A broker's replication or log-dir move throttle (bytes/s), dynamic only, as Kafka's
    QuotaConfig.brokerQuotaConfigs; Kafka's reassignment tool sets it per broker."""
    return ConfigDef(
        name,
        T.LONG,
        LONG_MAX,
        f"The upper bound (bytes/s) on {what}; the default is no throttle.",
        minimum=0,
    )


TOPIC_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef(
            "cleanup.policy",
            T.LIST,
            "delete",
            "The retention policy of old log segments: delete, compact, or both.",
            choices=frozenset({"delete", "compact"}),
            synonym="log.cleanup.policy",
        ),
        ConfigDef(
            "compression.type",
            T.STRING,
            "producer",
            "The final compression type of the topic's data.",
            choices=COMPRESSION,
            synonym="compression.type",
        ),
        ConfigDef(
            "retention.ms",
            T.LONG,
            "604800000",
            "How long a log segment is kept before it is deleted; -1 keeps it forever.",
            minimum=-1,
            synonym="log.retention.ms",
        ),
        ConfigDef(
            "retention.bytes",
            T.LONG,
            "-1",
            "The largest a partition may grow before old segments are deleted; -1: no limit.",
            synonym="log.retention.bytes",
        ),
        ConfigDef(
            "segment.bytes",
            T.INT,
            "1073741824",
            "The size of one log segment file.",
            minimum=14,
            synonym="log.segment.bytes",
        ),
        ConfigDef(
            "segment.ms",
            T.LONG,
            "604800000",
            "How long before a segment is rolled even if it is not full.",
            minimum=1,
            synonym="log.roll.ms",
        ),
        ConfigDef(
            "max.message.bytes",
            T.INT,
            "1048588",
            "The largest record batch size allowed.",
            minimum=0,
            synonym="message.max.bytes",
        ),
        ConfigDef(
            "min.insync.replicas",
            T.INT,
            "1",
            "The fewest in-sync replicas an acks=all write needs.",
            minimum=1,
            synonym="min.insync.replicas",
        ),
        ConfigDef(
            "unclean.leader.election.enable",
            T.BOOLEAN,
            "false",
            "Whether a replica outside the ISR may become leader as a last resort (data loss).",
            synonym="unclean.leader.election.enable",
        ),
        ConfigDef(
            "delete.retention.ms",
            T.LONG,
            "86400000",
            "How long delete tombstones are kept in compacted topics.",
            minimum=0,
            synonym="log.cleaner.delete.retention.ms",
        ),
        ConfigDef(
            "min.cleanable.dirty.ratio",
            T.DOUBLE,
            "0.5",
            "How dirty a log must be before the cleaner compacts it.",
            minimum=0,
            maximum=1,
            synonym="log.cleaner.min.cleanable.ratio",
        ),
        ConfigDef(
            "percent.canary.partition",
            T.DOUBLE,
            "0.0",
            "The percentage of the topic's partitions that are canary partitions (KIP-1095).",
            minimum=0,
            maximum=100,
            synonym="percent.canary.partition",
        ),
        # The replicas a reassignment throttles (KIP-73), as Kafka's reassignment tool sets
        # and removes them: `*` or partition:broker items.
        ConfigDef(
            "leader.replication.throttled.replicas",
            T.LIST,
            "",
            "The replicas whose replication the leader throttles (partition:broker items, "
            "or * for all of the topic's).",
            validator=_throttled_replicas("leader.replication.throttled.replicas"),
        ),
        ConfigDef(
            "follower.replication.throttled.replicas",
            T.LIST,
            "",
            "The replicas whose replication the follower throttles (partition:broker items, "
            "or * for all of the topic's).",
            validator=_throttled_replicas("follower.replication.throttled.replicas"),
        ),
    )
}

BROKER_POD_CONFIG = "broker.pod"

BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef(
            "log.cleanup.policy",
            T.LIST,
            "delete",
            "Default cleanup.policy.",
            choices=frozenset({"delete", "compact"}),
        ),
        ConfigDef(
            "compression.type",
            T.STRING,
            "producer",
            "Default compression.type.",
            choices=COMPRESSION,
        ),
        ConfigDef("log.retention.ms", T.LONG, "604800000", "Default retention.ms.", minimum=-1),
        ConfigDef("log.retention.bytes", T.LONG, "-1", "Default retention.bytes."),
        ConfigDef("log.segment.bytes", T.INT, "1073741824", "Default segment.bytes.", minimum=14),
        ConfigDef("log.roll.ms", T.LONG, "604800000", "Default segment.ms.", minimum=1),
        ConfigDef("message.max.bytes", T.INT, "1048588", "Default max.message.bytes.", minimum=0),
        ConfigDef("min.insync.replicas", T.INT, "1", "Default min.insync.replicas.", minimum=1),
        ConfigDef(
            "unclean.leader.election.enable",
            T.BOOLEAN,
            "false",
            "Default unclean.leader.election.enable.",
        ),
        ConfigDef(
            "log.cleaner.delete.retention.ms",
            T.LONG,
            "86400000",
            "Default delete.retention.ms.",
            minimum=0,
        ),
        ConfigDef(
            "log.cleaner.min.cleanable.ratio",
            T.DOUBLE,
            "0.5",
            "Default min.cleanable.dirty.ratio.",
            minimum=0,
            maximum=1,
        ),
        ConfigDef(
            "percent.canary.partition",
            T.DOUBLE,
            "0.0",
            "The percentage of partitions that are canary partitions (KIP-1095).",
            minimum=0,
            maximum=100,
        ),
        # KIP-1095's broker pod for brokers that send none (stock Kafka brokers): read when
        # the broker registers; a dynamic per-broker config wins over what it sends, as
        # Kafka's dynamic per-broker configs win over server.properties.
        ConfigDef(
            BROKER_POD_CONFIG,
            T.STRING,
            "broker",
            "The broker's pod (KIP-1095): canary-broker makes it a canary broker from its next "
            "registration on.",
            choices=frozenset({"broker", "canary-broker"}),
            per_broker=True,
        ),
        _replication_throttle(
            "leader.replication.throttled.rate",
            "replication traffic a leader sends for its throttled replicas",
        ),
        _replication_throttle(
            "follower.replication.throttled.rate",
            "replication traffic a follower fetches for its throttled replicas",
        ),
        _replication_throttle(
            "replica.alter.log.dirs.io.max.bytes.per.second",
            "the disk traffic of moving replicas between a broker's log dirs",
        ),
        ConfigDef(
            "canary.bake.time.ms",
            T.LONG,
            "3600000",
            "How long a new software version must run on the canary brokers before the "
            "rollout guard answers PROCEED (KIP-1095).",
            minimum=0,
        ),
        ConfigDef(
            "num.partitions",
            T.INT,
            "1",
            "Partitions of a topic created without a partition count.",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "default.replication.factor",
            T.INT,
            "1",
            "Replication factor of a topic created without one.",
            minimum=1,
            read_only=True,
        ),
        ConfigDef(
            "auto.leader.rebalance.enable",
            T.BOOLEAN,
            "true",
            "Whether the controller moves leadership back to preferred replicas.",
        ),
        ConfigDef(
            "leader.imbalance.check.interval.seconds",
            T.LONG,
            "300",
            "How often the controller checks for partitions off their preferred leader.",
            minimum=1,
        ),
        # The metadata log's snapshots and retention (controlplane.runtime.snapshots), as
        # Kafka's KRaft controller: a snapshot after this many bytes of records or this long
        # with new records (0: never by time); snapshots and the log before them deleted past
        # these bounds (-1: no bound), the latest snapshot always kept.
        ConfigDef(
            "metadata.log.max.record.bytes.between.snapshots",
            T.LONG,
            "20971520",
            "The most bytes of records the log holds after its latest snapshot before the "
            "controller writes a new one.",
            minimum=1,
        ),
        ConfigDef(
            "metadata.log.max.snapshot.interval.ms",
            T.LONG,
            "3600000",
            "The longest the controller waits to write a snapshot when the log has records "
            "after the latest one; 0 disables snapshots by time.",
            minimum=0,
        ),
        ConfigDef(
            "metadata.max.retention.bytes",
            T.LONG,
            "104857600",
            "The most bytes of the metadata log and its snapshots kept before old snapshots "
            "and the log before them are deleted (a soft bound: the latest snapshot stays); "
            "-1: no bound.",
        ),
        ConfigDef(
            "metadata.max.retention.ms",
            T.LONG,
            "604800000",
            "How long a metadata snapshot (and the log before it) is kept once a newer one "
            "exists; -1: no bound.",
        ),
        ConfigDef(
            "delegation.token.secret.key",
            T.PASSWORD,
            None,
            "The secret that signs delegation tokens, the same on every node; unset disables "
            "them. A node setting (CP_DELEGATION_TOKEN_SECRET_KEY), never a record of the log.",
            read_only=True,
        ),
        ConfigDef(
            "delegation.token.max.lifetime.ms",
            T.LONG,
            "604800000",
            "The longest a delegation token may be renewed for.",
            minimum=1,
        ),
        ConfigDef(
            "delegation.token.expiry.time.ms",
            T.LONG,
            "86400000",
            "How long a delegation token lives before it must be renewed.",
            minimum=1,
        ),
    )
}


def topic_config_def(name: str) -> ConfigDef:
    try:
        return TOPIC_CONFIGS[name]
    except KeyError:
        raise ApiError(Errors.INVALID_CONFIG, f"Unknown topic config name: {name}") from None


def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
    for name, value in configs.items():
        definition = topic_config_def(name)
        if value is not None:
            definition.parse(value)


class ConfigView:
    """Reads effective config values: dynamic (topic, cluster default) then static then default."""

    def __init__(
        self,
        lookup: Callable[[str, str, str], str | None],
        static: Mapping[str, str],
    ) -> None:
        self._lookup = lookup
        self._static = static

    def broker_value(self, name: str) -> Any:
        """A read-only key is static alone: a dynamic value (a record an older version wrote)
        is never read, as Kafka never reads a static-only key from its dynamic configs."""
        definition = BROKER_CONFIGS[name]
        raw = None if definition.read_only else self._lookup(BROKER, CLUSTER_DEFAULT, name)
        if raw is None:
            raw = self._static.get(name, definition.default)
        return None if raw is None else definition.parse(raw)

    def topic_value(self, topic_name: str, name: str) -> Any:
        definition = TOPIC_CONFIGS[name]
        raw = self._lookup(TOPIC, topic_name, name)
        if raw is not None:
            return definition.parse(raw)
        if definition.synonym in BROKER_CONFIGS:
            return self.broker_value(definition.synonym)
        return None if definition.default is None else definition.parse(definition.default)

    def unclean_election_enabled(self, topic_name: str) -> bool:
        return bool(self.topic_value(topic_name, "unclean.leader.election.enable"))


# --- sensitivity and redaction ------------------------------------------------------------

REDACTED = "(redacted)"  # Kafka's RecordRedactor writes sensitive values this way


REGISTRIES: dict[str, Mapping[str, ConfigDef]] = {
    TOPIC: TOPIC_CONFIGS,
    BROKER: BROKER_CONFIGS,
    CLIENT_METRICS: CLIENT_METRICS_CONFIGS,
    GROUP: GROUP_CONFIGS,
}


def registry_of(resource_type: str) -> Mapping[str, ConfigDef] | None:
    """The typed keys of a resource type; None for BROKER_LOGGER (any logger name)."""
    return REGISTRIES.get(resource_type)


def is_sensitive(resource_type: str, name: str) -> bool:
    """PASSWORD keys are sensitive; so is an unknown key of a typed resource (Kafka's
    KafkaConfigSchema.isSensitive is conservative the same way). Logger levels are not."""
    registry = registry_of(resource_type)
    if registry is None:
        return resource_type != BROKER_LOGGER
    definition = registry.get(name)
    return definition is None or definition.sensitive


def redact_record_data(record_type: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A record's data fit to show or export: a ConfigRecord of a sensitive key carries
    "(redacted)" instead of its value (a deletion, value None, stays None), a
    UserScramCredentialRecord instead of its salt and keys.

    The metadata log keeps the real value (the controller needs it on replay); every reader
    that shows records to people or tools (GET /api/v1/metadata-log, record exports, the UI)
    must pass each record's data through this function.
    """
    if record_type == USER_SCRAM_CREDENTIAL_RECORD:
        return {**data, **dict.fromkeys(SECRET_FIELDS, REDACTED)}
    if (
        record_type != "ConfigRecord"
        or data.get("value") is None
        or not is_sensitive(str(data.get("resource_type")), str(data.get("name")))
    ):
        return dict(data)
    return {**data, "value": REDACTED}
