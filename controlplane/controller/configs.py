"""The config keys the control plane knows: types, ranges, defaults, documentation, synonyms.

Values travel and are stored as strings, as in Kafka; `ConfigDef.parse` checks one and answers
Kafka's INVALID_CONFIG with Kafka's ConfigException wording. A topic config falls back to its
broker synonym (dynamic cluster default, then static, then the default), as Kafka's LogConfig does.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.errors import ApiError, Errors

TOPIC = "TOPIC"
BROKER = "BROKER"
BROKER_LOGGER = "BROKER_LOGGER"
CLUSTER_DEFAULT = ""  # the BROKER resource with an empty name: every broker's default


class ConfigType(enum.StrEnum):
    BOOLEAN = "BOOLEAN"
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    STRING = "STRING"
    LIST = "LIST"
    PASSWORD = "PASSWORD"


INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: frozenset[str] | None = None
    read_only: bool = False
    synonym: str | None = None  # a topic key's broker-level fallback

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    @property
    def is_list(self) -> bool:
        return self.type is ConfigType.LIST

    def parse(self, value: str) -> Any:
        """The typed value of `value`; INVALID_CONFIG when it does not fit the definition."""
        parser = _PARSERS[self.type]
        try:
            parsed = parser(value)
        except ValueError:
            raise self._invalid(value, f"Not a number of type {self.type.value}") from None
        if self.type is ConfigType.BOOLEAN and parsed is None:
            raise self._invalid(value, "Expected value to be either true or false")
        self._check_range(value, parsed)
        self._check_choices(value, parsed)
        return parsed

    def _check_range(self, value: str, parsed: Any) -> None:
        if self.type in (ConfigType.INT, ConfigType.LONG):
            low, high = INT_RANGE if self.type is ConfigType.INT else LONG_RANGE
            if not low <= parsed <= high:
                raise self._invalid(value, f"Not a number of type {self.type.value}")
        if self.minimum is not None and parsed < self.minimum:
            raise self._invalid(value, f"Value must be at least {_number(self.minimum)}")
        if self.maximum is not None and parsed > self.maximum:
            raise self._invalid(value, f"Value must be no more than {_number(self.maximum)}")

    def _check_choices(self, value: str, parsed: Any) -> None:
        if self.choices is None:
            return
        items = parsed if isinstance(parsed, list) else [parsed]
        for item in items:
            if item not in self.choices:
                kind = "List" if self.is_list else "String"
                raise self._invalid(
                    value, f"{kind} must be one of: {', '.join(sorted(self.choices))}"
                )

    def _invalid(self, value: str, why: str) -> ApiError:
        shown = "[hidden]" if self.sensitive else value
        return ApiError(
            Errors.INVALID_CONFIG, f"Invalid value {shown} for configuration {self.name}: {why}"
        )


def _boolean(value: str) -> bool | None:
    lowered = value.strip().lower()
    return {"true": True, "false": False}.get(lowered)


def _integer(value: str) -> int:
    return int(value.strip())


def _double(value: str) -> float:
    parsed = float(value.strip())
    if parsed != parsed or parsed in (float("inf"), float("-inf")):
        raise ValueError(value)
    return parsed


def _list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


_PARSERS: Mapping[ConfigType, Callable[[str], Any]] = {
    ConfigType.BOOLEAN: _boolean,
    ConfigType.INT: _integer,
    ConfigType.LONG: _integer,
    ConfigType.DOUBLE: _double,
    ConfigType.STRING: str,
    ConfigType.LIST: _list,
    ConfigType.PASSWORD: str,
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


T = ConfigType
COMPRESSION = frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})

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
    )
}

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
        ConfigDef(
            "delegation.token.secret.key",
            T.PASSWORD,
            None,
            "The secret that signs delegation tokens; unset disables them.",
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
        definition = BROKER_CONFIGS[name]
        raw = self._lookup(BROKER, CLUSTER_DEFAULT, name)
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


# --- resources, sensitivity and redaction ---------------------------------------------------

# Kafka's ConfigResource.Type names; the control plane serves TOPIC, BROKER and BROKER_LOGGER and
# answers INVALID_REQUEST for the others (as Kafka's controller does for types it does not own).
KAFKA_RESOURCE_TYPES = ("UNKNOWN", "TOPIC", "BROKER", "BROKER_LOGGER", "CLIENT_METRICS", "GROUP")
SUPPORTED_RESOURCE_TYPES = frozenset({TOPIC, BROKER, BROKER_LOGGER})

# Log4j levels a BROKER_LOGGER entry may take (Kafka's LogLevelConfig.VALID_LOG_LEVELS).
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
ROOT_LOGGER = "root"
ROOT_LOGGER_LEVEL = "INFO"

REDACTED = "(redacted)"  # Kafka's RecordRedactor writes sensitive values this way


def registry_of(resource_type: str) -> Mapping[str, ConfigDef] | None:
    """The typed keys of a resource type; None for BROKER_LOGGER (any logger name)."""
    if resource_type == TOPIC:
        return TOPIC_CONFIGS
    if resource_type == BROKER:
        return BROKER_CONFIGS
    return None


def is_sensitive(resource_type: str, name: str) -> bool:
    """PASSWORD keys are sensitive; so is an unknown TOPIC or BROKER key (Kafka's
    KafkaConfigSchema.isSensitive is conservative the same way). Logger levels are not."""
    registry = registry_of(resource_type)
    if registry is None:
        return resource_type != BROKER_LOGGER
    definition = registry.get(name)
    return definition is None or definition.sensitive


def redact_record_data(record_type: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A record's data fit to show or export: a ConfigRecord of a sensitive key carries
    "(redacted)" instead of its value (a deletion, value None, stays None).

    The metadata log keeps the real value (the controller needs it on replay); every reader
    that shows records to people or tools (GET /api/v1/metadata-log, record exports, the UI)
    must pass each record's data through this function.
    """
    if (
        record_type != "ConfigRecord"
        or data.get("value") is None
        or not is_sensitive(str(data.get("resource_type")), str(data.get("name")))
    ):
        return dict(data)
    return {**data, "value": REDACTED}


# --- DescribeConfigs ------------------------------------------------------------------------

DEFAULT_CONFIG = "DEFAULT_CONFIG"
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DYNAMIC_BROKER_LOGGER_CONFIG = "DYNAMIC_BROKER_LOGGER_CONFIG"


def _entry(
    definition: ConfigDef,
    synonyms: list[tuple[str, str | None, str]],
    *,
    read_only: bool,
    include_synonyms: bool,
    include_documentation: bool,
) -> dict[str, Any]:
    """One DescribeConfigs entry; `synonyms` in precedence order, the first is the answer."""
    sensitive = definition.sensitive
    _, value, source = synonyms[0] if synonyms else (definition.name, None, DEFAULT_CONFIG)
    return {
        "name": definition.name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": sensitive,
        "synonyms": [
            {"name": n, "value": None if sensitive else v, "source": s} for n, v, s in synonyms
        ]
        if include_synonyms
        else [],
        "config_type": definition.type.value,
        "documentation": definition.doc if include_documentation else None,
    }


def _broker_synonyms(
    name: str,
    broker_name: str,
    dynamic: Callable[[str, str, str], str | None],
    static: Mapping[str, str],
) -> list[tuple[str, str | None, str]]:
    """A broker key's values from every level that has one, strongest first (Kafka's
    DynamicBrokerConfig: per broker, cluster default, static, default)."""
    found: list[tuple[str, str | None, str]] = []
    if broker_name != CLUSTER_DEFAULT:
        value = dynamic(BROKER, broker_name, name)
        if value is not None:
            found.append((name, value, DYNAMIC_BROKER_CONFIG))
    value = dynamic(BROKER, CLUSTER_DEFAULT, name)
    if value is not None:
        found.append((name, value, DYNAMIC_DEFAULT_BROKER_CONFIG))
    if name in static:
        found.append((name, static[name], STATIC_BROKER_CONFIG))
    definition = BROKER_CONFIGS.get(name)
    if definition is not None and definition.default is not None:
        found.append((name, definition.default, DEFAULT_CONFIG))
    return found


def describe_configs(
    resource_type: str,
    resource_name: str,
    *,
    dynamic: Callable[[str, str, str], str | None],
    static: Mapping[str, str],
    keys: list[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> list[dict[str, Any]]:
    """The configs of one existing resource as Kafka's DescribeConfigs answers them.

    `dynamic(type, name, key)` reads a stored dynamic config; `keys` None means every key.
    A TOPIC key is its topic value, else its broker synonym's cluster default, static or default
    value; a BROKER id's key its own, else the cluster default, static or default value; the
    cluster default resource (BROKER "") answers only its dynamic entries, as Kafka does.
    """
    flags = {"include_synonyms": include_synonyms, "include_documentation": include_documentation}
    wanted = None if keys is None else set(keys)
    entries = []
    if resource_type == TOPIC:
        for name, definition in sorted(TOPIC_CONFIGS.items()):
            if wanted is not None and name not in wanted:
                continue
            synonyms: list[tuple[str, str | None, str]] = []
            value = dynamic(TOPIC, resource_name, name)
            if value is not None:
                synonyms.append((name, value, DYNAMIC_TOPIC_CONFIG))
            if definition.synonym is not None and definition.synonym in BROKER_CONFIGS:
                synonyms += _broker_synonyms(definition.synonym, CLUSTER_DEFAULT, dynamic, static)
            elif definition.default is not None:
                synonyms.append((name, definition.default, DEFAULT_CONFIG))
            entries.append(_entry(definition, synonyms, read_only=False, **flags))
        return entries
    if resource_type == BROKER:
        for name, definition in sorted(BROKER_CONFIGS.items()):
            if wanted is not None and name not in wanted:
                continue
            synonyms = _broker_synonyms(name, resource_name, dynamic, static)
            if resource_name == CLUSTER_DEFAULT and (
                not synonyms or synonyms[0][2] != DYNAMIC_DEFAULT_BROKER_CONFIG
            ):
                continue
            entries.append(_entry(definition, synonyms, read_only=definition.read_only, **flags))
        return entries
    raise ValueError(f"describe_configs: {resource_type} is described by describe_loggers")


def describe_loggers(
    levels: Mapping[str, str],
    *,
    keys: list[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> list[dict[str, Any]]:
    """A broker's logger levels (BROKER_LOGGER): the root logger and every logger set."""
    all_levels = {ROOT_LOGGER: ROOT_LOGGER_LEVEL, **levels}
    entries = []
    for name, level in sorted(all_levels.items()):
        if keys is not None and name not in keys:
            continue
        source = DYNAMIC_BROKER_LOGGER_CONFIG if name in levels else DEFAULT_CONFIG
        entries.append(
            {
                "name": name,
                "value": level,
                "read_only": False,
                "config_source": source,
                "is_sensitive": False,
                "synonyms": [{"name": name, "value": level, "source": source}]
                if include_synonyms
                else [],
                "config_type": ConfigType.STRING.value,
                "documentation": "The log level of this logger." if include_documentation else None,
            }
        )
    return entries
