"""Task configs are what a flow's connector derives from the stored configuration.

A connector's task configs are its own config (`MirrorMakerConfig.connector_config`: cluster
URLs, token references, filters, all from the stored text, references unresolved) plus the keys
that only a task has: `task.index` and, for MirrorSourceConnector, `task.assigned.partitions`
(the topic-partitions the connector found on the source, dealt round-robin as
`source_task_configs` deals them). A follower posts them to the leader's REST server signed with
the flow's session key, and the key once reached a non-node (a consumer's principal): so neither
the leader nor the control plane trusts a posted config, as Kafka's leader does. Both compare
each config with what the connector derives (`task_config_problems`) and refuse any other; and
a node runs a task with the connector config it derives itself and only the task's own keys
from what was persisted (`task_config_to_run`).

Pure: no value is ever named in a problem (a posted value may be anything, a secret too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controlplane.controller.mirror import settings as typed
from controlplane.controller.mirror.assignment import (
    ASSIGNED_PARTITIONS,
    TASK_INDEX,
    assigned_partition_counts,
    source_task_configs,
)
from controlplane.controller.mirror.config import (
    CHECKPOINT_CONNECTOR,
    HEARTBEAT_CONNECTOR,
    SOURCE_CONNECTOR,
    Flow,
    MirrorMakerConfig,
)
from controlplane.controller.mirror.policy import TopicSelection
from controlplane.controller.mirror.references import has_reference

# The keys a task's config has beyond its connector's, by connector.
TASK_KEYS: Mapping[str, frozenset[str]] = {
    SOURCE_CONNECTOR: frozenset({ASSIGNED_PARTITIONS, TASK_INDEX}),
    HEARTBEAT_CONNECTOR: frozenset({TASK_INDEX}),
    CHECKPOINT_CONNECTOR: frozenset(),
}
# The settings MirrorSourceConnector's topic filter reads (checked when none is a reference:
# a reference is resolved on each node, so only the node knows what it selects).
FILTER_SETTINGS = (
    "topics",
    "topics.exclude",
    "replication.policy.separator",
    "heartbeats.replication.enabled",
)
MAX_PROBLEMS = 5


def task_config_to_run(
    connector_config: Mapping[str, str], connector: str, persisted: Mapping[str, str]
) -> dict[str, str]:
    """The config a node runs a task with: its connector's config as this node derives it from
    the stored text, and only the task's own keys from the persisted config (a config persisted
    before these checks existed can point nowhere the text does not)."""
    own = TASK_KEYS.get(connector, frozenset())
    return {**connector_config, **{k: v for k, v in persisted.items() if k in own}}


def task_config_problems(
    config: MirrorMakerConfig,
    flow: Flow,
    connector: str,
    task_configs: Sequence[Mapping[str, str]],
) -> list[str]:
    """Why `task_configs` are not what `connector` derives for `flow` from `config` (none: they
    are). Each problem names a task and a key, never a value."""
    base = config.connector_config(flow, connector)
    problems = _shape_problems(base, connector, task_configs)
    if problems or not task_configs:
        return problems[:MAX_PROBLEMS]
    if connector == SOURCE_CONNECTOR:
        problems = _source_problems(base, flow, task_configs)
    return problems[:MAX_PROBLEMS]


def _shape_problems(
    base: Mapping[str, str], connector: str, task_configs: Sequence[Mapping[str, str]]
) -> list[str]:
    """Every task's keys and values but its own are its connector's; its index is its place."""
    if connector == CHECKPOINT_CONNECTOR and task_configs:
        return [f"{connector} has no task (a control plane keeps no consumer group offsets)"]
    if connector == HEARTBEAT_CONNECTOR and task_configs:
        if len(task_configs) > 1:
            return [f"{connector} has one task at most"]
        if _literal_flag(base.get("emit.heartbeats.enabled", "true")) is False:
            return [f"emit.heartbeats.enabled is false: {connector} has no task"]
    own = TASK_KEYS.get(connector, frozenset())
    problems: list[str] = []
    for index, task in enumerate(task_configs):
        where = f"task {index}"
        for key in sorted(set(task) - set(base) - own):
            problems.append(f"{where}: {key} is not in the stored configuration")
        for key in sorted(set(base) - set(task)):
            problems.append(f"{where}: {key} of the stored configuration is missing")
        for key in sorted(k for k in set(base) & set(task) if k not in own):
            if task[key] != base[key]:
                problems.append(f"{where}: {key} differs from the stored configuration")
        if task.get(TASK_INDEX) != str(index):
            problems.append(f"{where}: {TASK_INDEX} must be {index}")
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems


def _source_problems(
    base: Mapping[str, str], flow: Flow, task_configs: Sequence[Mapping[str, str]]
) -> list[str]:
    """MirrorSourceConnector's tasks: the topic-partitions it found, dealt as it deals them,
    each topic one its filter selects."""
    if _literal_flag(base.get("enabled", "false")) is False:
        return [f"{flow.name} is not enabled: {SOURCE_CONNECTOR} has no task"]
    counts: dict[str, int] = {}
    for index, task in enumerate(task_configs):
        try:
            for topic, count in assigned_partition_counts(task).items():
                counts[topic] = max(counts.get(topic, 0), count)
        except ValueError:
            return [f"task {index}: {ASSIGNED_PARTITIONS} is not a list of topic-partitions"]
    partitions = sum(counts.values())
    tasks_max = _literal_int(base.get("tasks.max", str(typed.TASKS_MAX_DEFAULT)))
    if tasks_max is not None and len(task_configs) != min(tasks_max, partitions):
        return [f"{len(task_configs)} task(s) where tasks.max and the partitions make another"]
    if [dict(t) for t in task_configs] != source_task_configs(base, counts, len(task_configs)):
        return [f"{ASSIGNED_PARTITIONS} are not every topic-partition dealt round-robin"]
    unselected = _unselected(base, flow, counts)
    if unselected:
        return [f"topic {t} is not one the flow's filter selects" for t in unselected]
    return []


def _literal_flag(value: str) -> bool | None:
    """A boolean setting's value when the text gives it literally (a reference: each node's)."""
    if has_reference(value):
        return None
    return value.strip().lower() == "true"


def _literal_int(value: str) -> int | None:
    """An integer setting's value when the text gives it literally (a reference: each node's)."""
    if has_reference(value):
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def _unselected(base: Mapping[str, str], flow: Flow, counts: Mapping[str, int]) -> list[str]:
    if any(has_reference(base.get(name, "")) for name in FILTER_SETTINGS):
        return []  # resolved on each node: the node's own connector applied it
    try:
        settings = typed.SourceSettings.parse({k: base[k] for k in FILTER_SETTINGS if k in base})
    except typed.SettingsError:
        return []  # the text was validated when stored; a node reports a bad setting itself
    selection = TopicSelection.of(flow.source, flow.target, settings)
    return sorted(t for t in counts if selection.matched_filter(t) is None)
