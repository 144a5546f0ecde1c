"""The partition tables as their columns: the partitions (of the cluster, or of a topic with an
elect link per row) and a broker's replicas (all of them, or the offline ones)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.urls import get_script_prefix, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from frontend.tables.columns import Column, Table, badge, dash_if_empty, joined, link, muted
from frontend.tables.topics import BrokerReplicaRow, PartitionRow, ReplicaCell


# --- the cells partitions are shown with -----------------------------------------------------
def replica_cells(replicas: Sequence[ReplicaCell]) -> SafeString:
    """A partition's replicas, each a link to its broker, styled by how it stands."""
    if not replicas:
        return mark_safe('<span class="muted">—</span>')
    return format_html_join(
        "",
        '<a href="{}" class="{}" title="broker {}: {}" data-replica="{}">{}</a>',
        (
            (broker_url(c.broker_id), c.css, c.broker_id, c.status, c.broker_id, c.broker_id)
            for c in replicas
        ),
    )


def partition_leader(partition: PartitionRow) -> SafeString:
    if partition.leaderless:
        return mark_safe(
            '<span class="badge badge-danger no-leader" data-testid="leader">no leader</span>'
        )
    return format_html(
        '<a href="{}" data-testid="leader">{}</a>', broker_url(partition.leader), partition.leader
    )


def broker_url(broker_id: int) -> str:
    return _broker_url_under(get_script_prefix(), broker_id)


@functools.lru_cache(maxsize=4096)
def _broker_url_under(prefix: str, broker_id: int) -> str:
    """Brokers are few and their links many (every replica of every row): reversed once."""
    return reverse("frontend:broker-detail", args=[broker_id])


def _topic_url(topic: str) -> str:
    return reverse("frontend:topic-detail", args=[topic])


def _partition_link(p: PartitionRow) -> SafeString:
    return link(_topic_url(p.topic), f"{p.topic}-{p.partition_index}")


def _isr(p: PartitionRow) -> Any:
    return dash_if_empty(joined(p.isr))


# --- the partitions' table -------------------------------------------------------------------
def _leader(p: PartitionRow) -> SafeString:
    if p.leaderless or p.on_preferred_leader:
        return partition_leader(p)
    title = f"its preferred leader is broker {p.preferred_leader}"
    hint = format_html('<span class="muted small" title="{}">not preferred</span>', title)
    return format_html("{} {}", partition_leader(p), hint)


def _isr_health(p: PartitionRow) -> Any:
    if p.under_min_isr:
        title = f"ISR smaller than min.insync.replicas {p.min_isr}: acks=all producers fail"
        flag = format_html(
            '<span class="badge badge-danger" title="{}">under min ISR</span>', title
        )
    elif p.under_replicated and not p.leaderless:
        flag = badge("warn", "under-replicated")
    else:
        return _isr(p)
    return format_html("{} {}", _isr(p), flag)


def _offline(p: PartitionRow) -> Any:
    if not p.offline_replicas:
        return "—"
    return badge("danger", joined(p.offline_replicas), css="offline")


def _canary(p: PartitionRow) -> SafeString:
    if not p.is_canary:
        return muted("no")
    if p.canary_isolated:
        return badge("canary", "canary")
    warning = format_html(
        '<a class="badge badge-danger" href="{}" title="{}">not isolated</a>',
        reverse("frontend:canary"),
        "A replica is on a non-canary broker (KIP-1095)",
    )
    return format_html("{} {}", badge("canary", "canary"), warning)


def _moving(p: PartitionRow) -> Any:
    """A reassignment in progress (KIP-455): the replicas it adds, the ones it removes."""
    if not p.adding and not p.removing:
        return muted("—")
    adding = badge("info", f"+{joined(p.adding)}", testid="adding") if p.adding else ""
    removing = badge("warn", f"-{joined(p.removing)}", testid="removing") if p.removing else ""
    return format_html("{} {}", adding, removing)


def _in_order(*fields: str) -> tuple[str, ...]:
    """Sorted by `fields`, then by partition."""
    return (*fields, "topic__name", "partition_index")


def _partition_columns(*, with_topic_name: bool) -> tuple[Column, ...]:
    def partition(p: PartitionRow) -> Any:
        return _partition_link(p) if with_topic_name else p.partition_index

    return (
        Column(
            "partition",
            "Partition",
            partition,
            sort=_in_order(),
            num=True,
            css="mono" if with_topic_name else "",
        ),
        Column("leader", "Leader", _leader, sort=_in_order("leader")),
        Column(
            "leader_epoch",
            "Leader epoch",
            sort=_in_order("leader_epoch"),
            num=True,
            testid="leader-epoch",
        ),
        Column("partition_epoch", "Partition epoch", num=True, testid="partition-epoch"),
        Column(
            "replicas",
            "Replicas",
            lambda p: replica_cells(p.replicas),
            css="replicas",
            testid="replicas",
        ),
        Column("isr", "ISR", _isr_health, sort=_in_order("isr_count"), css="mono", testid="isr"),
        Column(
            "offline",
            "Offline replicas",
            _offline,
            sort=_in_order("offline_replica_count"),
            css="mono",
            testid="offline",
        ),
        Column("canary", "Canary", _canary, testid="canary"),
        Column("moving", "Moving", _moving, sort=_in_order("reassigning"), testid="moving"),
    )


PARTITION_COLUMNS = _partition_columns(with_topic_name=True)  # the cluster's partitions
TOPIC_PARTITION_COLUMNS = _partition_columns(with_topic_name=False)  # one topic's


def _elect_column(elect_url: str) -> Column:
    def cell(p: PartitionRow) -> SafeString:
        return format_html(
            '<a href="{}?type=PREFERRED&amp;partition={}" data-testid="elect-partition"'
            ' aria-label="Elect the preferred leader of {}-{}">Elect…</a>',
            elect_url,
            p.partition_index,
            p.topic,
            p.partition_index,
        )

    return Column(
        "actions", mark_safe('<span class="visually-hidden">Actions</span>'), cell, css="nowrap"
    )


def _partition_attributes(p: PartitionRow, *, with_topic_name: bool) -> dict[str, object]:
    css = "partition"
    if p.leaderless:
        css += " leaderless"
    if p.offline_replicas:
        css += " has-offline"
    if p.is_canary and not p.canary_isolated:
        css += " not-isolated"
    if p.adding or p.removing:
        css += " reassigning"
    key = f"{p.topic}-{p.partition_index}"
    return {
        "id": f"partition-{key if with_topic_name else p.partition_index}",
        "class": css,
        "data-canary": ("isolated" if p.canary_isolated else "not-isolated")
        if p.is_canary
        else None,
        "data-leader": p.leader,
        "data-partition": key,
    }


def partition_table(rows: Sequence[PartitionRow], *, elect_url: str | None = None) -> Table:
    """The cluster's partitions, or (given where to elect one's leader) one topic's."""
    with_topic_name = elect_url is None
    if with_topic_name:
        columns = PARTITION_COLUMNS
    else:
        columns = (*TOPIC_PARTITION_COLUMNS, _elect_column(str(elect_url)))
    return Table(
        columns,
        rows,
        testid="partition-table",
        row_attributes=lambda p: _partition_attributes(p, with_topic_name=with_topic_name),
    )


# --- a broker's replicas ----------------------------------------------------------------------
def _role(r: BrokerReplicaRow) -> Any:
    return badge("ok", "leader") if r.replica.is_leader else "follower"


REPLICA_COLUMNS = (
    Column("partition", "Partition", lambda r: _partition_link(r.partition), css="mono"),
    Column("role", "Role", _role, testid="role"),
    Column(
        "in_isr",
        "In ISR",
        lambda r: "yes" if r.replica.in_isr else badge("warn", "no"),
        testid="in-isr",
    ),
    Column(
        "state",
        "State",
        lambda r: badge("danger", "offline") if r.replica.offline else "online",
        testid="replica-state",
    ),
    Column("leader", "Leader", lambda r: partition_leader(r.partition)),
    Column("leader_epoch", "Leader epoch", lambda r: r.partition.leader_epoch, num=True),
    Column("replicas", "Replicas", lambda r: replica_cells(r.partition.replicas), css="replicas"),
)
OFFLINE_REPLICA_COLUMNS = (
    Column("partition", "Partition", lambda r: _partition_link(r.partition), css="mono"),
    Column("leader", "Leader", lambda r: partition_leader(r.partition)),
    Column("isr", "ISR", lambda r: _isr(r.partition), css="mono"),
    Column(
        "offline",
        "Offline replicas",
        lambda r: badge("danger", joined(r.partition.offline_replicas)),
        css="mono",
    ),
)


def _with_leaderless(css: str, r: BrokerReplicaRow) -> str:
    return f"{css} leaderless" if r.partition.leaderless else css


def replica_table(rows: Sequence[BrokerReplicaRow]) -> Table:
    def attributes(r: BrokerReplicaRow) -> dict[str, object]:
        css = _with_leaderless("replica-row", r)
        return {
            "class": f"{css} offline" if r.replica.offline else css,
            "data-partition": f"{r.partition.topic}-{r.partition.partition_index}",
        }

    return Table(REPLICA_COLUMNS, rows, testid="replica-table", row_attributes=attributes)


def offline_replica_table(rows: Sequence[BrokerReplicaRow]) -> Table:
    return Table(
        OFFLINE_REPLICA_COLUMNS,
        rows,
        testid="offline-table",
        row_attributes=lambda r: {
            "class": _with_leaderless("offline", r),
            "data-offline-partition": f"{r.partition.topic}-{r.partition.partition_index}",
        },
    )
