"""The config resources of Kafka 4.x's clients: CLIENT_METRICS subscriptions (KIP-714) and GROUP
configs (KIP-848), their keys and how Kafka's controller validates a resource's whole set.

CLIENT_METRICS (Kafka's ClientMetricsConfigs): `metrics` (the metric name prefixes asked for,
`*` every metric), `interval.ms` (how often matching clients push, 100..3,600,000), `match`
(`selector=regex` pairs choosing the clients). A key Kafka does not know and an interval out of
range are INVALID_REQUEST, a value of the wrong type or a bad match pattern INVALID_CONFIG, as
Kafka answers them.

GROUP (Kafka's GroupConfig): the consumer, share and streams groups' session timeouts and
heartbeat intervals, the share groups' record lock duration, offset reset and isolation level,
and the streams groups' standby replicas. Every invalid value is INVALID_CONFIG: the key's own
type and minimum, then the broker-level bounds (`group.consumer.min.session.timeout.ms` and the
others, at Kafka's defaults: the control plane has no broker configs of its own for them), then
each session timeout above its heartbeat interval, checked over the resource's whole resulting
set (its stored keys and the request's changes, defaults for the rest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from controlplane.controller.config_types import ConfigDef, ConfigType
from controlplane.controller.errors import ApiError, Errors

CLIENT_METRICS = "CLIENT_METRICS"
GROUP = "GROUP"
T = ConfigType

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
MATCH_SELECTORS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)

CLIENT_METRICS_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef(
            METRICS,
            T.LIST,
            "",
            "The telemetry metric name prefixes the subscription asks for; * asks for every "
            "metric.",
        ),
        ConfigDef(
            INTERVAL_MS,
            T.INT,
            "300000",
            "How often matching clients push their metrics, in milliseconds (100 to 3600000).",
        ),
        ConfigDef(
            MATCH,
            T.LIST,
            "",
            "Which clients the subscription covers: selector=regex pairs over client_id, "
            "client_instance_id, client_software_name, client_software_version, "
            "client_source_address and client_source_port; empty: every client.",
        ),
    )
}


def _int(name: str, default: int, minimum: int, doc: str) -> ConfigDef:
    return ConfigDef(name, T.INT, str(default), doc, minimum=minimum)


SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
GROUP_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _int("consumer.session.timeout.ms", 45000, 1, "A consumer group member's session."),
        _int("consumer.heartbeat.interval.ms", 5000, 1, "A consumer group member's heartbeat."),
        _int("share.session.timeout.ms", 45000, 1, "A share group member's session."),
        _int("share.heartbeat.interval.ms", 5000, 1, "A share group member's heartbeat."),
        _int(
            "share.record.lock.duration.ms",
            30000,
            1000,
            "How long a share group member holds a record it acquired.",
        ),
        ConfigDef(
            SHARE_AUTO_OFFSET_RESET,
            T.STRING,
            "latest",
            "Where a share partition starts: earliest, latest, or by_duration:<ISO 8601 "
            "duration> before now.",
        ),
        ConfigDef(
            "share.isolation.level",
            T.STRING,
            "read_uncommitted",
            "Whether a share group delivers only committed transactional records.",
            choices=frozenset({"read_committed", "read_uncommitted"}),
        ),
        _int("streams.session.timeout.ms", 45000, 1, "A streams group member's session."),
        _int("streams.heartbeat.interval.ms", 5000, 1, "A streams group member's heartbeat."),
        _int("streams.num.standby.replicas", 0, 0, "Standby replicas of each streams task."),
    )
}

# Kafka's broker-level bounds of the group keys (GroupCoordinatorConfig, ShareGroupConfig) at
# their defaults: key -> ((lower bound's name, value), (upper bound's name, value) or None).
_Bound = tuple[str, int]
GROUP_BOUNDS: dict[str, tuple[_Bound | None, _Bound]] = {
    "consumer.heartbeat.interval.ms": (
        ("group.consumer.min.heartbeat.interval.ms", 5000),
        ("group.consumer.max.heartbeat.interval.ms", 15000),
    ),
    "consumer.session.timeout.ms": (
        ("group.consumer.min.session.timeout.ms", 45000),
        ("group.consumer.max.session.timeout.ms", 60000),
    ),
    "share.heartbeat.interval.ms": (
        ("group.share.min.heartbeat.interval.ms", 5000),
        ("group.share.max.heartbeat.interval.ms", 15000),
    ),
    "share.session.timeout.ms": (
        ("group.share.min.session.timeout.ms", 45000),
        ("group.share.max.session.timeout.ms", 60000),
    ),
    "share.record.lock.duration.ms": (
        ("group.share.min.record.lock.duration.ms", 15000),
        ("group.share.max.record.lock.duration.ms", 60000),
    ),
    "streams.heartbeat.interval.ms": (
        ("group.streams.min.heartbeat.interval.ms", 5000),
        ("group.streams.max.heartbeat.interval.ms", 15000),
    ),
    "streams.session.timeout.ms": (
        ("group.streams.min.session.timeout.ms", 45000),
        ("group.streams.max.session.timeout.ms", 60000),
    ),
    "streams.num.standby.replicas": (None, ("group.streams.max.standby.replicas", 2)),
}
SESSIONS = ("consumer", "share", "streams")  # each kind's session timeout > its heartbeat

# Java's Duration.parse (ISO 8601 PnDTnHnMn.nS, signs allowed on each part), for by_duration.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def _invalid(message: str, error: Errors = Errors.INVALID_CONFIG) -> ApiError:
    return ApiError(error, message)


def validate(resource_type: str, configs: Mapping[str, str]) -> None:
    """A CLIENT_METRICS or GROUP resource's whole resulting set, as Kafka's controller checks it
    (ControllerConfigurationValidator); nothing for other resource types. Each key was checked
    on its own already (known, of its type, within its minimum)."""
    if resource_type == CLIENT_METRICS:
        _validate_client_metrics(configs)
    elif resource_type == GROUP:
        _validate_group(configs)


def _validate_client_metrics(configs: Mapping[str, str]) -> None:
    if INTERVAL_MS in configs:
        interval = int(configs[INTERVAL_MS].strip())
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise _invalid(
                f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 and "
                "3600000 (1 hour)",
                Errors.INVALID_REQUEST,
            )
    if MATCH in configs:
        for pattern in (p.strip() for p in configs[MATCH].split(",") if p.strip()):
            check_match_pattern(pattern)


def check_match_pattern(pattern: str) -> None:
    """Kafka's ClientMetricsConfigs.parseMatchingPatterns, for one `selector=regex`."""
    parts = pattern.split("=")
    while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
        parts.pop()
    illegal = _invalid(f"Illegal client matching pattern: {pattern}")
    if len(parts) != 2 or parts[0].strip() not in MATCH_SELECTORS:
        raise illegal
    try:
        re.compile(parts[1].strip())
    except re.error:
        raise illegal from None


def _validate_group(configs: Mapping[str, str]) -> None:
    values = {name: configs.get(name, d.default) for name, d in GROUP_CONFIGS.items()}
    _check_offset_reset(str(values[SHARE_AUTO_OFFSET_RESET]))
    numbers = {
        name: int(str(value).strip())
        for name, value in values.items()
        if GROUP_CONFIGS[name].type is T.INT
    }
    for name, (lower, upper) in GROUP_BOUNDS.items():
        if lower is not None and numbers[name] < lower[1]:
            raise _invalid(f"{name} must be greater than or equal to {lower[0]}")
        if numbers[name] > upper[1]:
            raise _invalid(f"{name} must be less than or equal to {upper[0]}")
    for kind in SESSIONS:
        session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        if numbers[session] <= numbers[heartbeat]:
            raise _invalid(f"{session} must be greater than {heartbeat}")


def _check_offset_reset(value: str) -> None:
    """earliest, latest or by_duration:<a non-negative ISO 8601 duration> (Kafka's
    ShareGroupAutoOffsetResetStrategy, case-insensitive as its parser)."""
    text = value.strip().lower()
    if text in ("earliest", "latest"):
        return
    duration = text.removeprefix("by_duration:") if text.startswith("by_duration:") else None
    if duration is not None and _non_negative_duration(duration.strip()):
        return
    raise _invalid(
        f"Invalid value {value} for configuration {SHARE_AUTO_OFFSET_RESET}: the value must be "
        "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
    )


def _non_negative_duration(text: str) -> bool:
    match = _DURATION.fullmatch(text)
    if match is None or (match[3] is not None and match[3].upper() == "T"):
        return False  # not a duration, or a "T" with nothing after it (Java refuses it too)
    if not any(match[i] for i in (2, 4, 5, 6)):
        return False
    seconds = sum(int(match[i] or 0) * unit for i, unit in ((2, 86400), (4, 3600), (5, 60), (6, 1)))
    fraction = int((match[7] or "0").ljust(9, "0")) / 1e9
    total = seconds + (-fraction if (match[6] or "").startswith("-") else fraction)
    return (-total if match[1] == "-" else total) >= 0
