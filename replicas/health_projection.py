"""Cluster health tables as a projection of the controller's health index.

The active controller keeps a `HealthIndex` beside its image (built once when it takes over,
then advanced by each delta: `controlplane.controller.health`). Each commit writes what the
delta changed: the topics and brokers whose figures moved, the cluster's totals and this
minute's sample for the trends. The first commit of a controller writes every row afresh, so
tables left by an older version or another controller are made whole again. Pages and metrics
read these rows: a health figure never costs a scan of the partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import connection

from controlplane.controller.health import (
    CONTRACT_FIELDS,
    INDEX_NAME,
    BrokerLoad,
    ClusterHealth,
    HealthChanges,
    HealthIndex,
    TopicHealth,
)
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.runtime.bulk import Column, Write, prepared_delete, prepared_upsert
from controlplane.runtime.projections import AppliedWrites

MINUTE_MS = 60_000
SAMPLE_RETENTION_MS = 7 * 24 * 3600 * 1000

COUNT_COLUMNS = [
    "partitions",
    "under_replicated_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
    "leaderless_partitions",
    "preferred_replica_imbalance",
    "offline_replicas",
    "offline_partitions",
    "canary_not_isolated",
]
TOPIC_COLUMNS = [
    Column("topic_id", "text"),
    Column("min_insync_replicas", "int"),
    *(Column(name, "int") for name in COUNT_COLUMNS),
]
BROKER_COLUMNS = [
    Column("broker_id", "int"),
    Column("leaders", "int"),
    Column("replicas", "int"),
    Column("in_sync_replicas", "int"),
    Column("offline_replicas", "int"),
    Column("preferred_leaders", "int"),
    Column("under_replicated_partitions", "int"),
    Column("under_min_isr_partitions", "int"),
    Column("offline_log_dirs", "int"),
]
CLUSTER_COLUMNS = [
    Column("id", "int"),
    *(Column(name, "int") for name in COUNT_COLUMNS),
    Column("offline_log_dirs", "int"),
    Column("updated_ms", "bigint"),
]
SAMPLE_GAUGES = list(CONTRACT_FIELDS)
SAMPLE_COUNTERS = ["leader_elections", "unclean_leader_elections"]


def _topic_row(topic: TopicHealth) -> tuple[object, ...]:
    return (topic.topic_id, topic.min_insync_replicas, *topic.counts.values())


def _broker_row(load: BrokerLoad) -> tuple[object, ...]:
    return (
        load.broker_id,
        load.leaders,
        load.replicas,
        load.in_sync_replicas,
        load.offline_replicas,
        load.preferred_leaders,
        load.under_replicated_partitions,
        load.under_min_isr_partitions,
        load.offline_log_dirs,
    )


def _keys(columns: list[Column]) -> tuple[list[str], list[str]]:
    return [columns[0].name], [c.name for c in columns[1:]]


def _upsert(table: str, columns: list[Column], rows: Sequence[tuple[object, ...]]) -> Write:
    conflict, update = _keys(columns)
    return prepared_upsert(
        table=table, columns=columns, rows=rows, conflict=conflict, update=update
    )


def _changed_rows(
    table: str,
    columns: list[Column],
    key_type: str,
    changed: Mapping[Any, Any],
    row_of: Callable[[Any], tuple[object, ...]],
) -> list[Write]:
    """Upsert the rows that changed, delete those gone (None), keyed on the first column."""
    return [
        _upsert(table, columns, [row_of(v) for v in changed.values() if v is not None]),
        prepared_delete(
            table=table,
            column=columns[0].name,
            pg_type=key_type,
            values=[key for key, v in changed.items() if v is None],
        ),
    ]


def _run(sql: str, params: Sequence[Any] = ()) -> Write:
    def write() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    return write


class HealthProjection:
    name = "health"
    tables: tuple[str, ...] = (
        "cp_topic_health",
        "cp_broker_load",
        "cp_cluster_health",
        "cp_health_sample",
    )

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        index = _index_of(delta.base)
        changes = index.changes(delta)
        if index.unwritten:
            whole = _whole(index, changes, timestamp_ms)
            return [*whole, *self._sample(index, changes, delta, timestamp_ms)]
        if not changes.changed and not delta.leader_elections:
            return []
        return [
            *_changed_rows("cp_topic_health", TOPIC_COLUMNS, "text", changes.topics, _topic_row),
            *_changed_rows("cp_broker_load", BROKER_COLUMNS, "int", changes.brokers, _broker_row),
            _cluster_write(changes.totals, timestamp_ms),
            *self._sample(index, changes, delta, timestamp_ms),
        ]

    def _sample(
        self, index: HealthIndex, changes: HealthChanges, delta: MetadataDelta, timestamp_ms: int
    ) -> list[Write]:
        """This minute's row of the trends: the figures after the commit, and the elections
        added to those the minute already counted."""
        minute = timestamp_ms - timestamp_ms % MINUTE_MS
        gauges = changes.totals.as_dict()
        values = [minute, *(gauges[name] for name in SAMPLE_GAUGES)]
        values += [delta.leader_elections, delta.unclean_leader_elections]
        names = ["minute_ms", *SAMPLE_GAUGES, *SAMPLE_COUNTERS]
        sets = [f"{name} = EXCLUDED.{name}" for name in SAMPLE_GAUGES]
        sets += [f"{name} = cp_health_sample.{name} + EXCLUDED.{name}" for name in SAMPLE_COUNTERS]
        upsert = _run(
            f"INSERT INTO cp_health_sample ({', '.join(names)})"
            f" VALUES ({', '.join('%s' for _ in names)})"
            f" ON CONFLICT (minute_ms) DO UPDATE SET {', '.join(sets)}",
            values,
        )
        if index.last_sample_minute == minute:
            return [upsert]
        index.last_sample_minute = minute  # a cache: at worst one more pruning
        prune = _run(
            "DELETE FROM cp_health_sample WHERE minute_ms < %s", [minute - SAMPLE_RETENTION_MS]
        )
        return [upsert, prune]

    def load(self, image: MetadataImage) -> None:
        """Nothing to load: the index is counted from the image at the first commit."""


def _index_of(image: MetadataImage) -> HealthIndex:
    index = image.derived.get(INDEX_NAME)
    if not isinstance(index, HealthIndex):
        index = HealthIndex.build(image, settings.CP_STATIC_BROKER_CONFIGS)
        image.derived[INDEX_NAME] = index
    return index


def _cluster_write(totals: ClusterHealth, timestamp_ms: int) -> Write:
    row = (1, *totals.counts.values(), totals.offline_log_dirs, timestamp_ms)
    return _upsert("cp_cluster_health", CLUSTER_COLUMNS, [row])


def _whole(index: HealthIndex, changes: HealthChanges, timestamp_ms: int) -> list[Write]:
    """Every row afresh: the index as the delta leaves it."""
    topics = {**index.topics, **changes.topics}
    brokers = {**index.brokers, **changes.brokers}
    return [
        _run("DELETE FROM cp_topic_health"),
        _run("DELETE FROM cp_broker_load"),
        _upsert(
            "cp_topic_health",
            TOPIC_COLUMNS,
            [_topic_row(t) for t in topics.values() if t is not None],
        ),
        _upsert(
            "cp_broker_load",
            BROKER_COLUMNS,
            [_broker_row(b) for b in brokers.values() if b is not None],
        ),
        _cluster_write(changes.totals, timestamp_ms),
    ]
