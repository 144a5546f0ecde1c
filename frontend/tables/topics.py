"""Rows of the topic pages: topics (the list's table as its columns), partitions and their
replicas."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

from controlplane.controller.records import NO_LEADER
from frontend.tables.columns import Column, Table, badge, count, dash_if_none, link
from replicas.models import Partition, Topic


@dataclasses.dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    topic_id: str
    partition_count: int
    leaderless_count: int
    offline_replica_total: int
    under_replicated_count: int = 0
    under_min_isr_count: int = 0
    at_min_isr_count: int = 0
    imbalanced_count: int = 0
    min_isr: int | None = None
    replication_factor: int | None = None  # partition 0's replica count, as TopicCommand

    @property
    def leaderless(self) -> bool:
        return self.leaderless_count > 0


def topic_row(topic: Topic, replication_factor: int | None = None) -> TopicRow:
    """A topic from `replicas.selectors.topic_list()` (with its health figures)."""

    def figure(name: str) -> int:
        return int(getattr(topic, name, 0) or 0)

    min_isr = getattr(topic, "min_isr", None)
    return TopicRow(
        name=topic.name,
        topic_id=topic.topic_id,
        partition_count=topic.partition_count,
        leaderless_count=figure("leaderless_count"),
        offline_replica_total=figure("offline_replica_total"),
        under_replicated_count=figure("under_replicated_count"),
        under_min_isr_count=figure("under_min_isr_count"),
        at_min_isr_count=figure("at_min_isr_count"),
        imbalanced_count=figure("imbalanced_count"),
        min_isr=None if min_isr is None else int(min_isr),
        replication_factor=replication_factor,
    )


def topic_rows(
    topics: Iterable[Topic], replication_factors: Mapping[str, int] | None = None
) -> list[TopicRow]:
    factors = replication_factors or {}
    return [topic_row(topic, factors.get(topic.topic_id)) for topic in topics]


def topic_url(name: str, **filters: str) -> str:
    """A topic's page, its partitions filtered (`under_replicated="true"`)."""
    url = reverse("frontend:topic-detail", args=[name])
    return f"{url}?{urlencode(filters)}" if filters else url


def _figure(
    key: str,
    label: str,
    figure: str,
    filters: dict[str, str],
    *,
    badge_kind: str = "",
    testid: str,
) -> Column:
    """A health figure of the topic (its row's `figure`), sorted by `key`'s field of the topic's
    health row: 0, or a link to the partitions it counts (a badge when it is trouble)."""

    def cell(topic: TopicRow) -> Any:
        def shown(n: int) -> Any:
            return link(topic_url(topic.name, **filters), badge(badge_kind, n) if badge_kind else n)

        return count(getattr(topic, figure), shown)

    sort = (f"health__{HEALTH_FIELDS[key]}",)
    return Column(key, label, cell, sort=sort, num=True, testid=testid)


SEPARATORS = re.compile(r"(?<=[-._])")


def breakable(name: str) -> SafeString:
    """A name that may wrap only after its `-`, `.` and `_` (a <wbr> after each), never
    mid-word: "payments-events" never shows as "paymen / ts-events"."""
    return mark_safe("<wbr>".join(conditional_escape(part) for part in SEPARATORS.split(name)))


def _name(topic: TopicRow) -> Any:
    name = breakable(topic.name)
    if not topic.leaderless:
        return link(topic_url(topic.name), name)
    flag = badge("danger", "leaderless", css="no-leader")
    return format_html("{} {}", link(topic_url(topic.name), name), flag)


# What each figure's column sorts by: its field of the topic's health row (TopicHealth).
HEALTH_FIELDS = {
    "under_replicated": "under_replicated_partitions",
    "under_min_isr": "under_min_isr_partitions",
    "at_min_isr": "at_min_isr_partitions",
    "leaderless": "leaderless_partitions",
    "imbalanced": "preferred_replica_imbalance",
    "offline": "offline_replicas",
}
TOPIC_COLUMNS = (
    Column("name", "Name", _name, sort=("name",), css="mono"),
    Column(
        "partitions",
        "Partitions",
        lambda t: t.partition_count,
        sort=("partition_count",),
        num=True,
        testid="partition-count",
    ),
    Column(
        "replication_factor",
        "RF",
        lambda t: dash_if_none(t.replication_factor),
        num=True,
        testid="replication-factor",
        header_title="Replication factor: partition 0's replicas, as kafka-topics.sh reports it",
    ),
    _figure(
        "under_replicated",
        "Under-replicated",
        "under_replicated_count",
        {"under_replicated": "true"},
        badge_kind="warn",
        testid="under-replicated-count",
    ),
    _figure(
        "under_min_isr",
        "Under min ISR",
        "under_min_isr_count",
        {"under_min_isr": "true"},
        badge_kind="danger",
        testid="under-min-isr-count",
    ),
    _figure(
        "at_min_isr",
        "At min ISR",
        "at_min_isr_count",
        {"at_min_isr": "true"},
        testid="at-min-isr-count",
    ),
    _figure(
        "leaderless",
        "Leaderless partitions",
        "leaderless_count",
        {"leaderless": "true"},
        badge_kind="danger",
        testid="leaderless-count",
    ),
    _figure(
        "imbalanced",
        "Off preferred leader",
        "imbalanced_count",
        {"preferred_leader": "false"},
        testid="imbalanced-count",
    ),
    _figure(
        "offline",
        "Offline replicas",
        "offline_replica_total",
        {"offline": "true"},
        badge_kind="warn",
        testid="offline-count",
    ),
    Column(
        "min_isr",
        "min.insync.replicas",
        lambda t: dash_if_none(t.min_isr),
        sort=("health__min_insync_replicas",),
        num=True,
    ),
)


def topic_table(rows: Sequence[TopicRow]) -> Table:
    return Table(
        TOPIC_COLUMNS,
        rows,
        testid="topic-table",
        row_attributes=lambda t: {
            "class": "topic leaderless" if t.leaderless else "topic",
            "data-topic": t.name,
        },
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaCell:
    """One replica of a partition: its broker and how it stands."""

    broker_id: int
    is_leader: bool
    in_isr: bool
    offline: bool

    @property
    def css(self) -> str:
        classes = ["replica"]
        if self.is_leader:
            classes.append("replica-leader")
        if self.offline:
            classes.append("replica-offline")
        elif not self.in_isr:
            classes.append("replica-out-of-sync")
        return " ".join(classes)

    @property
    def status(self) -> str:
        if self.offline:
            return "offline"
        parts = ["leader" if self.is_leader else "follower"]
        parts.append("in ISR" if self.in_isr else "not in ISR")
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRow:
    topic: str
    partition_index: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[ReplicaCell]
    isr: list[int]
    offline_replicas: list[int]
    is_canary: bool
    canary_isolated: bool = False
    min_isr: int | None = None  # the topic's effective min.insync.replicas
    # A reassignment in progress (KIP-455): the replicas it adds and removes.
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def leaderless(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def under_min_isr(self) -> bool:
        """Producers with acks=all fail on it."""
        return self.min_isr is not None and len(self.isr) < self.min_isr

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0].broker_id if self.replicas else NO_LEADER

    @property
    def on_preferred_leader(self) -> bool:
        return self.leader == self.preferred_leader


def partition_row(partition: Partition, *, topic_name: str | None = None) -> PartitionRow:
    isr = [int(b) for b in partition.isr or []]
    offline = [int(b) for b in partition.offline_replicas or []]
    return PartitionRow(
        topic=topic_name if topic_name is not None else partition.topic.name,
        partition_index=partition.partition_index,
        leader=partition.leader,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
        replicas=[
            ReplicaCell(
                broker_id=int(b),
                is_leader=int(b) == partition.leader,
                in_isr=int(b) in isr,
                offline=int(b) in offline,
            )
            for b in partition.replicas or []
        ],
        isr=isr,
        offline_replicas=offline,
        is_canary=partition.is_canary,
        canary_isolated=partition.canary_isolated,
        min_isr=_min_isr(partition),
        adding=tuple(int(b) for b in partition.adding_replicas or ()),
        removing=tuple(int(b) for b in partition.removing_replicas or ()),
    )


def _min_isr(partition: Partition) -> int | None:
    """The topic's min.insync.replicas, from its health row (`partition_list()` selects it with
    the partition); None before the controller counted the topic."""
    try:
        return int(partition.topic.health.min_insync_replicas)
    except ObjectDoesNotExist:
        return None


def partition_rows(
    partitions: Iterable[Partition], *, topic_name: str | None = None
) -> list[PartitionRow]:
    return [partition_row(p, topic_name=topic_name) for p in partitions]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerReplicaRow:
    """A partition seen from one of its replicas' broker."""

    partition: PartitionRow
    replica: ReplicaCell

    @property
    def role(self) -> str:
        return "leader" if self.replica.is_leader else "follower"


def broker_replica_rows(partitions: Iterable[Partition], broker_id: int) -> list[BrokerReplicaRow]:
    rows = []
    for partition in partitions:
        row = partition_row(partition)
        cell = next((c for c in row.replicas if c.broker_id == broker_id), None)
        if cell is None:  # an offline replica no longer in the assignment
            cell = ReplicaCell(
                broker_id=broker_id,
                is_leader=False,
                in_isr=broker_id in row.isr,
                offline=broker_id in row.offline_replicas,
            )
        rows.append(BrokerReplicaRow(partition=row, replica=cell))
    return rows


# --- the heatmap: partitions x brokers ----------------------------------------------------
HEAT_ROLES = {
    "leader": ("L", "leader"),
    "in-sync": ("F", "follower in the ISR"),
    "out-of-sync": ("O", "follower out of the ISR"),
    "offline": ("X", "offline replica"),
}


@dataclasses.dataclass(frozen=True, slots=True)
class HeatCell:
    broker_id: int
    role: str  # a HEAT_ROLES key, "" where the broker holds no replica

    @property
    def letter(self) -> str:
        return HEAT_ROLES[self.role][0] if self.role else ""

    @property
    def description(self) -> str:
        return HEAT_ROLES[self.role][1] if self.role else "no replica"


@dataclasses.dataclass(frozen=True, slots=True)
class HeatRow:
    partition_index: int
    leaderless: bool
    cells: list[HeatCell]


@dataclasses.dataclass(frozen=True, slots=True)
class Heatmap:
    brokers: list[int]
    rows: list[HeatRow]
    leaders_per_broker: list[int]
    replicas_per_broker: list[int]


def heatmap(partitions: list[PartitionRow]) -> Heatmap:
    """Which broker holds what of each partition (the page's partitions): leader, follower in
    or out of the ISR, offline."""
    brokers = sorted({c.broker_id for p in partitions for c in p.replicas})
    rows = []
    for p in partitions:
        by_broker = {c.broker_id: c for c in p.replicas}
        cells = []
        for broker_id in brokers:
            cell = by_broker.get(broker_id)
            if cell is None:
                role = ""
            elif cell.offline:
                role = "offline"
            elif cell.is_leader:
                role = "leader"
            else:
                role = "in-sync" if cell.in_isr else "out-of-sync"
            cells.append(HeatCell(broker_id, role))
        rows.append(HeatRow(p.partition_index, p.leaderless, cells))
    leaders = [sum(1 for r in rows if r.cells[i].role == "leader") for i in range(len(brokers))]
    replicas = [sum(1 for r in rows if r.cells[i].role) for i in range(len(brokers))]
    return Heatmap(brokers, rows, leaders, replicas)
