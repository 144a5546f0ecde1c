"""Task configs and assignments, as Kafka Connect computes them.

`source_task_configs` is MirrorSourceConnector.taskConfigs: the known topic-partitions dealt
round-robin to at most `tasks.max` tasks, each task's config being the connector's config plus
`task.assigned.partitions` and `task.index`. `eager_assignment` is Connect's EagerAssignor:
connectors, then tasks, in order, dealt round-robin over the members sorted by worker id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from controlplane.controller.mirror_records import WorkerAssignment

ASSIGNED_PARTITIONS = "task.assigned.partitions"
TASK_INDEX = "task.index"
TOPIC_PARTITION_SEPARATOR = "-"


def task_id(connector: str, index: int) -> str:
    """Connect's ConnectorTaskId as text: `<connector>-<task>`."""
    return f"{connector}-{index}"


def task_index(task: str) -> int:
    return int(task.rsplit("-", 1)[1])


def topic_partition(topic: str, partition: int) -> str:
    return f"{topic}{TOPIC_PARTITION_SEPARATOR}{partition}"


def split_topic_partition(text: str) -> tuple[str, int]:
    topic, _, partition = text.rpartition(TOPIC_PARTITION_SEPARATOR)
    return topic, int(partition)


def source_task_configs(
    connector_config: Mapping[str, str],
    partition_counts: Mapping[str, int],
    tasks_max: int,
) -> list[dict[str, str]]:
    """Round-robin the topic-partitions (topics in name order) over min(tasks.max, count)
    tasks; no topic-partition, no task."""
    partitions = [
        topic_partition(topic, p)
        for topic, count in sorted(partition_counts.items())
        for p in range(count)
    ]
    if not partitions:
        return []
    tasks = min(max(1, tasks_max), len(partitions))
    dealt: list[list[str]] = [[] for _ in range(tasks)]
    for index, item in enumerate(partitions):
        dealt[index % tasks].append(item)
    return [
        {**connector_config, ASSIGNED_PARTITIONS: ",".join(items), TASK_INDEX: str(i)}
        for i, items in enumerate(dealt)
    ]


def assigned_partition_counts(task_config: Mapping[str, str]) -> dict[str, int]:
    """Per topic, how many partitions the source has (one more than the highest partition a
    task config lists, over all of the connector's tasks when merged)."""
    counts: dict[str, int] = {}
    for item in filter(None, task_config.get(ASSIGNED_PARTITIONS, "").split(",")):
        topic, partition = split_topic_partition(item)
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    return counts


def eager_assignment(
    members: Sequence[tuple[str, str]],
    connectors: Iterable[str],
    task_counts: Mapping[str, int],
) -> tuple[WorkerAssignment, ...]:
    """Connect's EagerAssignor over the (member id, worker id) pairs sorted by worker id
    (stable across nodes)."""
    ordered = [member_id for member_id, _ in sorted(members, key=lambda m: (m[1], m[0]))]
    if not ordered:
        return ()
    names = sorted(connectors)
    given_connectors: dict[str, list[str]] = {m: [] for m in ordered}
    given_tasks: dict[str, list[str]] = {m: [] for m in ordered}
    turn = 0
    for connector in names:
        given_connectors[ordered[turn % len(ordered)]].append(connector)
        turn += 1
    for connector in names:
        for index in range(task_counts.get(connector, 0)):
            given_tasks[ordered[turn % len(ordered)]].append(task_id(connector, index))
            turn += 1
    return tuple(
        WorkerAssignment(m, tuple(given_connectors[m]), tuple(given_tasks[m])) for m in ordered
    )
