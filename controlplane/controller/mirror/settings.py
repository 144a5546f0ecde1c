"""Typed MirrorMaker settings: the checks a value must pass, and the settings each connector and
worker reads from its (resolved) config, with Kafka's defaults (MirrorSourceConfig,
MirrorHeartbeatConfig, MirrorCheckpointConfig, DistributedConfig).

The control plane checks every value that holds no config provider reference when the text is
stored; a node checks the rest once it resolved them, and a connector whose settings do not
parse fails with the reason in its status trace.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Callable, Mapping

Check = Callable[[str], "str | None"]

# Kafka's defaults.
TOPICS_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_DEFAULT = ".*"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, "
    r"leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, "
    r"message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, "
    r"min\.insync\.replicas"
)
SEPARATOR_DEFAULT = "."
INTERVAL_DEFAULT_S = 600  # refresh.topics, sync.topic.configs, sync.topic.acls
HEARTBEATS_INTERVAL_DEFAULT_S = 1
REPLICATION_FACTOR_DEFAULT = 2
TASKS_MAX_DEFAULT = 1
SESSION_TIMEOUT_MS_DEFAULT = 10_000  # Connect's session.timeout.ms
HEARTBEAT_INTERVAL_MS_DEFAULT = 3_000  # Connect's heartbeat.interval.ms
PROTOCOLS = ("http", "https")
PEM = "PEM"
CLIENT_AUTH = ("none", "requested", "required")
DEFAULT_CLASSES = {
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter",
}


class SettingsError(ValueError):
    """A setting's value does not parse (named in the message)."""


def patterns(value: str) -> tuple[str, ...]:
    """A comma-separated regex list, as Kafka's LIST type reads it."""
    return tuple(item.strip() for item in value.split(",") if item.strip())


def regex_problem(value: str) -> str | None:
    try:
        re.compile(value)
    except re.error as error:
        return f"invalid regular expression {value!r}: {error}"
    return None


def _regex_list(value: str) -> str | None:
    for pattern in patterns(value):
        problem = regex_problem(pattern)
        if problem:
            return problem
    return None


def _boolean(value: str) -> str | None:
    return None if value.strip().lower() in ("true", "false") else f"{value!r} is not true/false"


def _integer(minimum: int, *, also: tuple[int, ...] = ()) -> Check:
    def check(value: str) -> str | None:
        try:
            number = int(value.strip())
        except ValueError:
            return f"{value!r} is not a whole number"
        if number < minimum and number not in also:
            allowed = " or ".join(str(a) for a in also)
            return f"{number} is below {minimum}" + (f" (or {allowed})" if allowed else "")
        return None

    return check


def _one_of(*allowed: str, case: bool = False) -> Check:
    def check(value: str) -> str | None:
        given = value.strip() if case else value.strip().lower()
        wanted = allowed if case else tuple(a.lower() for a in allowed)
        return None if given in wanted else f"{value!r} is not one of {', '.join(allowed)}"

    return check


def _url(value: str) -> str | None:
    for item in patterns(value):
        parts = urllib.parse.urlsplit(item)
        if parts.scheme not in PROTOCOLS or not parts.hostname:
            return f"{item!r} is not an http(s) URL of a control plane"
    return None


def _listeners(value: str) -> str | None:
    items = patterns(value)
    if not items:
        return "no listener given"
    for item in items:
        try:
            listener_parts(item)
        except SettingsError as error:
            return str(error)
    return None


def listener_parts(listener: str) -> tuple[str, str, int]:
    """(protocol, host, port) of `protocol://host:port` (host may be empty: every interface)."""
    match = re.fullmatch(
        r"(?P<protocol>[A-Za-z]+)://(?P<host>\[[^\]]*\]|[^:/]*):(?P<port>\d+)", listener
    )
    if match is None:
        raise SettingsError(f"{listener!r} is not a listener (protocol://host:port)")
    protocol = match.group("protocol").lower()
    if protocol not in PROTOCOLS:
        raise SettingsError(f"{listener!r}: the REST server speaks http or https")
    port = int(match.group("port"))
    if port > 65535:
        raise SettingsError(f"{listener!r}: port {port} is out of range")
    return protocol, match.group("host").strip("[]"), port


def _separator(value: str) -> str | None:
    return None if value else "the separator cannot be empty"


def _default_class(name: str) -> Check:
    def check(value: str) -> str | None:
        wanted = DEFAULT_CLASSES[name]
        if value.strip() in (wanted, wanted.rsplit(".", 1)[-1]):
            return None
        return f"only Kafka's {wanted} is supported here"

    return check


_SECONDS = _integer(1)
CHECKS: dict[str, Check] = {
    **dict.fromkeys(
        (
            "enabled",
            "emit.heartbeats.enabled",
            "emit.checkpoints.enabled",
            "sync.topic.configs.enabled",
            "sync.topic.acls.enabled",
            "refresh.topics.enabled",
            "refresh.groups.enabled",
            "heartbeats.replication.enabled",
        ),
        _boolean,
    ),
    **dict.fromkeys(
        (
            "refresh.topics.interval.seconds",
            "refresh.groups.interval.seconds",
            "sync.topic.configs.interval.seconds",
            "sync.topic.acls.interval.seconds",
            "emit.heartbeats.interval.seconds",
            "emit.checkpoints.interval.seconds",
        ),
        _SECONDS,
    ),
    **dict.fromkeys(
        ("topics", "topics.exclude", "groups", "groups.exclude", "config.properties.exclude"),
        _regex_list,
    ),
    "tasks.max": _integer(1),
    "replication.factor": _integer(1, also=(-1,)),
    "heartbeats.topic.replication.factor": _integer(1, also=(-1,)),
    "session.timeout.ms": _integer(1000),
    "heartbeat.interval.ms": _integer(100),
    "replication.policy.separator": _separator,
    "use.defaults.from": _one_of("target", "source"),
    "bootstrap.servers": _url,
    "listeners": _listeners,
    "mm.rest.protocol": _one_of(*PROTOCOLS),
    "listeners.https.ssl.keystore.type": _one_of(PEM, case=True),
    "listeners.https.ssl.truststore.type": _one_of(PEM, case=True),
    "listeners.https.ssl.client.auth": _one_of(*CLIENT_AUTH),
    **{name: _default_class(name) for name in DEFAULT_CLASSES},
}


def setting_problem(name: str, value: str) -> str | None:
    check = CHECKS.get(name)
    return None if check is None else check(value)


def _get(config: Mapping[str, str], name: str, default: str) -> str:
    """A setting of a node's configuration, its references resolved: a problem names the key,
    never the value (it may be a secret a reference resolved to)."""
    value = config.get(name, default)
    problem = setting_problem(name, value)
    if problem:
        raise SettingsError(f"{name}: {without_value(problem, value)}")
    return value


def without_value(problem: str, value: str) -> str:
    """`problem` with `value` taken out of it."""
    if not value:
        return problem
    return problem.replace(repr(value), "its value").replace(value, "its value")


def _flag(config: Mapping[str, str], name: str, default: bool) -> bool:
    return _get(config, name, str(default).lower()).strip().lower() == "true"


def _int(config: Mapping[str, str], name: str, default: int) -> int:
    return int(_get(config, name, str(default)).strip())


@dataclasses.dataclass(frozen=True, slots=True)
class SourceSettings:
    """What MirrorSourceConnector reads from its config (MirrorSourceConfig)."""

    enabled: bool
    topics: tuple[str, ...]
    topics_exclude: tuple[str, ...]
    config_properties_exclude: tuple[str, ...]
    separator: str
    refresh_topics_enabled: bool
    refresh_topics_interval_s: int
    sync_topic_configs_enabled: bool
    sync_topic_configs_interval_s: int
    sync_topic_acls_enabled: bool
    sync_topic_acls_interval_s: int
    heartbeats_replication_enabled: bool
    replication_factor: int
    tasks_max: int

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> SourceSettings:
        return cls(
            enabled=_flag(config, "enabled", False),
            topics=patterns(_get(config, "topics", TOPICS_DEFAULT)),
            topics_exclude=patterns(_get(config, "topics.exclude", TOPICS_EXCLUDE_DEFAULT)),
            config_properties_exclude=patterns(
                _get(config, "config.properties.exclude", CONFIG_PROPERTIES_EXCLUDE_DEFAULT)
            ),
            separator=_get(config, "replication.policy.separator", SEPARATOR_DEFAULT),
            refresh_topics_enabled=_flag(config, "refresh.topics.enabled", True),
            refresh_topics_interval_s=_int(
                config, "refresh.topics.interval.seconds", INTERVAL_DEFAULT_S
            ),
            sync_topic_configs_enabled=_flag(config, "sync.topic.configs.enabled", True),
            sync_topic_configs_interval_s=_int(
                config, "sync.topic.configs.interval.seconds", INTERVAL_DEFAULT_S
            ),
            sync_topic_acls_enabled=_flag(config, "sync.topic.acls.enabled", True),
            sync_topic_acls_interval_s=_int(
                config, "sync.topic.acls.interval.seconds", INTERVAL_DEFAULT_S
            ),
            heartbeats_replication_enabled=_flag(config, "heartbeats.replication.enabled", True),
            replication_factor=_int(config, "replication.factor", REPLICATION_FACTOR_DEFAULT),
            tasks_max=_int(config, "tasks.max", TASKS_MAX_DEFAULT),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatSettings:
    emit_enabled: bool
    interval_s: int

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> HeartbeatSettings:
        return cls(
            emit_enabled=_flag(config, "emit.heartbeats.enabled", True),
            interval_s=_int(
                config, "emit.heartbeats.interval.seconds", HEARTBEATS_INTERVAL_DEFAULT_S
            ),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class CheckpointSettings:
    enabled: bool
    emit_enabled: bool
    groups: tuple[str, ...]

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> CheckpointSettings:
        return cls(
            enabled=_flag(config, "enabled", False),
            emit_enabled=_flag(config, "emit.checkpoints.enabled", True),
            groups=patterns(_get(config, "groups", GROUPS_DEFAULT)),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerSettings:
    """A flow's worker on one node: where its REST server binds (KIP-710) and its group
    timings (Connect's session.timeout.ms and heartbeat.interval.ms)."""

    protocol: str
    host: str
    port: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    tls: Mapping[str, str]  # listeners.https.* without the prefix

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> WorkerSettings:
        listeners = config.get("listeners", "").strip()
        if listeners:
            protocol, host, port = listener_parts(patterns(_get(config, "listeners", ""))[0])
        else:
            protocol = _get(config, "mm.rest.protocol", "http").strip().lower()
            host, port = config.get("mm.rest.host.name", "").strip(), 0
        prefix = "listeners.https."
        tls = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
        for name in ("ssl.keystore.type", "ssl.truststore.type", "ssl.client.auth"):
            if name in tls:
                _get(config, prefix + name, "")
        return cls(
            protocol=protocol,
            host=host,
            port=port,
            session_timeout_ms=_int(config, "session.timeout.ms", SESSION_TIMEOUT_MS_DEFAULT),
            heartbeat_interval_ms=_int(
                config, "heartbeat.interval.ms", HEARTBEAT_INTERVAL_MS_DEFAULT
            ),
            tls=tls,
        )
