"""The effective diff of config changes and what applying them does: per change, the value the
resource uses now and the one it will use (`effective_diff`), and the consequences beyond the
value, such as deleted data or refused producers (`config_consequences`), as the confirmation
page shows them before anything changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Count, Q, QuerySet

from controlplane.controller.config_schema import REDACTED, TOPIC, TOPIC_CONFIGS
from controlplane.controller.configs.describe import (
    CLIENT_METRICS_CONFIG,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    GROUP_CONFIG,
    STATIC_BROKER_CONFIG,
)
from controlplane.controller.errors import ApiError
from controlplane.selectors import configs_stored
from frontend.tables.configs import NOT_SET, ConfigChange, ConfigRow
from frontend.tables.units import bytes_text, duration_text
from frontend.views.config_target import BROKER_KIND, TOPIC_KIND, ConfigTarget
from replicas.models import Partition
from replicas.selectors import partition_list, partitions_on_broker, topic_get

SOURCE_LABELS = {
    DEFAULT_CONFIG: "default",
    STATIC_BROKER_CONFIG: "static broker config",
    DYNAMIC_DEFAULT_BROKER_CONFIG: "cluster default",
    DYNAMIC_BROKER_CONFIG: "broker",
    DYNAMIC_TOPIC_CONFIG: "topic",
    CLIENT_METRICS_CONFIG: "subscription",
    GROUP_CONFIG: "group",
}
DANGER, WARN, INFO = "danger", "warn", "info"
UNLIMITED = -1  # retention.ms / retention.bytes: keep everything


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveValue:
    """A key's value as a client of the resource sees it, and where it comes from."""

    value: str
    source: str

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)


@dataclasses.dataclass(frozen=True, slots=True)
class Consequence:
    """What applying a change does beyond the value: deleted data, refused producers..."""

    name: str
    severity: str  # danger, warn or info
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveChange:
    """One row of the diff: the effective value before → after, and the operation asked."""

    name: str
    operation: str
    before: EffectiveValue
    after: EffectiveValue
    sensitive: bool

    @property
    def deletes(self) -> bool:
        return self.operation == "DELETE"


def effective_diff(
    target: ConfigTarget, changes: Sequence[ConfigChange], rows: Mapping[str, ConfigRow]
) -> list[EffectiveChange]:
    """Per change, what the resource uses now (its own value, else the cluster default's, the
    static broker config's or the default, as DescribeConfigs resolves it) and what it will use
    (the value set, or for a DELETE what the key then falls back to). Secrets stay hidden."""
    diff = []
    for change in changes:
        row = rows.get(change.name)
        if row is None:  # a key the registry does not know: the API will say so
            before = EffectiveValue(NOT_SET, "")
            fallback = EffectiveValue(NOT_SET, "")
            sensitive = False
        else:
            sensitive = row.sensitive
            before = EffectiveValue(row.value, row.source)
            fallback = EffectiveValue(row.inherited, row.inherited_source)
        if change.operation == "DELETE":
            after = fallback
        else:
            shown = REDACTED if sensitive else str(change.value)
            after = EffectiveValue(shown, target.own_source)
        diff.append(EffectiveChange(change.name, change.operation, before, after, sensitive))
    return diff


def _parsed(target: ConfigTarget, name: str, value: str) -> Any:
    """The typed value, or None when there is none to compare (not set, redacted, invalid)."""
    definition = target.definitions.get(name)
    if definition is None or value in (NOT_SET, REDACTED):
        return None
    try:
        return definition.parse(value)
    except ApiError:
        return None


def _policies(value: Any) -> set[str]:
    items = value if isinstance(value, list | tuple | set | frozenset) else str(value).split(",")
    return {str(item).strip() for item in items if str(item).strip()}


def _topic_key(target: ConfigTarget, name: str) -> str:
    """The topic config a key is (a broker's `log.retention.ms` is the topics' `retention.ms`)."""
    if target.kind == TOPIC_KIND:
        return name
    for topic_name, definition in TOPIC_CONFIGS.items():
        if definition.synonym == name:
            return topic_name
    return name


def _scope(target: ConfigTarget, topic_key: str) -> str:
    """Which data a value at the target's level governs, in words."""
    if target.kind == TOPIC_KIND:
        return f"every partition of topic {target.resource_name}"
    if target.kind == BROKER_KIND:
        return (
            f"broker {target.resource_name}'s replicas of every topic without its own {topic_key}"
        )
    return f"every topic without its own {topic_key}"


def _partition_scope(target: ConfigTarget, topic_key: str) -> str:
    """Which partitions a value at the target's level governs, after "partitions"."""
    if target.kind == TOPIC_KIND:
        return f"of topic {target.resource_name}"
    if target.kind == BROKER_KIND:
        return f"led by broker {target.resource_name} (topics without their own {topic_key})"
    return f"of the topics without their own {topic_key}"


def _governed_partitions(target: ConfigTarget) -> QuerySet[Partition]:
    """The partitions whose leader applies the target's value (a topic's own partitions; for a
    broker, those it leads; for the cluster default, all), before topic overrides."""
    if target.kind == TOPIC_KIND:
        topic = topic_get(name=target.resource_name)
        if topic is None:
            return partition_list().none()
        return partition_list(topic_id=topic.topic_id)
    if target.kind == BROKER_KIND:
        broker_id = int(target.resource_name)
        return partitions_on_broker(broker_id=broker_id).filter(leader=broker_id)
    return partition_list()


def partitions_below(target: ConfigTarget, topic_key: str, minimum: int) -> tuple[int, int]:
    """(partitions whose ISR is smaller than `minimum`, partitions with fewer replicas than
    `minimum`) among those the target's value governs: one query, then one for the overrides
    of the few topics concerned (a topic's own value is not the target's to change)."""
    partitions = _governed_partitions(target)
    short = partitions.filter(Q(isr_count__lt=minimum) | Q(replica_count__lt=minimum))
    if target.kind == TOPIC_KIND:
        counts = short.aggregate(
            isr=Count("id", filter=Q(isr_count__lt=minimum)),
            rf=Count("id", filter=Q(replica_count__lt=minimum)),
        )
        return int(counts["isr"]), int(counts["rf"])
    rows = list(short.values_list("topic__name", "isr_count", "replica_count"))
    names = sorted({name for name, _, _ in rows})
    stored = configs_stored(resources=[(TOPIC, name) for name in names]) if names else {}
    governed = [
        (isr, rf) for name, isr, rf in rows if topic_key not in stored.get((TOPIC, name), {})
    ]
    return (
        sum(1 for isr, _ in governed if isr < minimum),
        sum(1 for _, rf in governed if rf < minimum),
    )


def _retention_text(name: str, value: Any) -> str:
    return duration_text(int(value)) if name.endswith(".ms") else bytes_text(int(value))


def config_consequences(target: ConfigTarget, diff: Sequence[EffectiveChange]) -> list[Consequence]:
    """What each change does to data and clients, beyond its value: shortened retention
    deletes data, a raised min.insync.replicas refuses acks=all producers where the ISR (or the
    replication factor) is smaller, a cleanup policy change alters what is kept, unclean leader
    election can lose acknowledged records."""
    found: list[Consequence] = []
    for change in diff:
        if change.sensitive:
            continue
        key = _topic_key(target, change.name)
        old = _parsed(target, change.name, change.before.value)
        new = _parsed(target, change.name, change.after.value)
        if old is None or new is None or old == new:
            continue
        if key in ("retention.ms", "retention.bytes"):
            shorter = new != UNLIMITED and (old == UNLIMITED or new < old)
            if shorter:
                bound = _retention_text(key, new)
                before = "unlimited" if old == UNLIMITED else _retention_text(key, old)
                what = (
                    f"data older than {bound}"
                    if key == "retention.ms"
                    else f"the oldest data beyond {bound} per partition"
                )
                found.append(
                    Consequence(
                        change.name,
                        DANGER,
                        f"Shortening {change.name} from {before} to {bound} permanently deletes "
                        f"{what} in {_scope(target, key)}, at the next retention check. It "
                        "cannot be undone.",
                    )
                )
        elif key == "min.insync.replicas" and new > old:
            below_isr, below_rf = partitions_below(target, key, int(new))
            if below_isr or below_rf:
                scope = _partition_scope(target, key)
                plural = below_isr != 1
                parts = [
                    f"{below_isr} partition{'s' if plural else ''} {scope} "
                    f"ha{'ve' if plural else 's'} fewer than {new} in-sync replicas now"
                ]
                if below_rf:
                    parts.append(
                        f"{below_rf} ha{'ve' if below_rf != 1 else 's'} fewer than {new} "
                        "replicas at all (replication factor), so never will"
                    )
                found.append(
                    Consequence(
                        change.name,
                        WARN,
                        f"Raising {change.name} from {old} to {new}: {'; '.join(parts)}. "
                        "Producers with acks=all are refused there (NOT_ENOUGH_REPLICAS).",
                    )
                )
            else:
                found.append(
                    Consequence(
                        change.name,
                        INFO,
                        f"Every partition {_partition_scope(target, key)} has at least {new} "
                        "in-sync replicas now; producers with acks=all are refused on a partition "
                        f"whose ISR later shrinks below {new}.",
                    )
                )
        elif key == "cleanup.policy":
            found.append(Consequence(change.name, WARN, _policy_text(change.name, old, new)))
        elif key == "unclean.leader.election.enable" and new is True:
            found.append(
                Consequence(
                    change.name,
                    DANGER,
                    f"With {change.name}=true, a replica outside the ISR may become leader when "
                    f"no in-sync replica is left, in {_scope(target, key)}: the acknowledged "
                    "records it lacks are lost.",
                )
            )
    return found


def _policy_text(name: str, old: Any, new: Any) -> str:
    before, after = _policies(old), _policies(new)
    said = [f"{name} changes from {','.join(sorted(before))} to {','.join(sorted(after))}:"]
    if "compact" in after and "compact" not in before:
        said.append(
            "compaction keeps only the latest record of each key (older values are removed) "
            "and records without a key are refused;"
        )
    if "compact" in before and "compact" not in after:
        said.append("keys are no longer compacted;")
    if "delete" in after and "delete" not in before:
        said.append(
            "segments beyond retention.ms and retention.bytes are deleted, latest values "
            "of keys included;"
        )
    if "delete" in before and "delete" not in after:
        said.append("retention.ms and retention.bytes no longer delete anything: the log grows;")
    return " ".join(said).rstrip(";") + "."
