"""Reads of the balancer: the cluster as the planner sees it (a few bulk queries, however many
partitions), the plans, and the state of the partitions a running plan moves."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Q, QuerySet

from balancer.models import RUNNING_STATES, BalancePlan
from balancer.planner import BrokerInfo, PartitionInfo
from brokers.models import Broker
from replicas.models import Partition, TopicHealth

CANARY_POD = "canary-broker"
CHUNK = 5000
TOPICS_PER_QUERY = 100  # OR terms of one query (SQLite's expression depth stays far off)


def planning_brokers() -> list[BrokerInfo]:
    """Every registered broker: its rack, pod, online log dirs and whether it can take
    replicas (unfenced, not shutting down)."""
    rows = Broker.objects.order_by("broker_id").values_list(
        "broker_id",
        "rack",
        "pod",
        "log_dirs",
        "offline_log_dirs",
        "fenced",
        "in_controlled_shutdown",
    )
    return [
        BrokerInfo(
            broker_id=broker_id,
            rack=rack or None,
            canary=pod == CANARY_POD,
            log_dirs=max(1, len(set(dirs or []) - set(offline or []))),
            usable=not fenced and not shutting_down,
        )
        for broker_id, rack, pod, dirs, offline, fenced, shutting_down in rows
    ]


def planning_partitions() -> Iterator[PartitionInfo]:
    """Every partition with its topic's effective min.insync.replicas (the controller's health
    rows keep it), streamed in chunks."""
    min_isr = dict(TopicHealth.objects.values_list("topic_id", "min_insync_replicas"))
    rows = (
        Partition.objects.order_by("topic__name", "partition_index")
        .values_list(
            "topic__name",
            "topic_id",
            "partition_index",
            "replicas",
            "isr",
            "leader",
            "is_canary",
            "reassigning",
        )
        .iterator(chunk_size=CHUNK)
    )
    for name, topic_id, index, replicas, isr, leader, canary, reassigning in rows:
        yield PartitionInfo(
            topic=name,
            partition=index,
            replicas=tuple(replicas),
            isr=tuple(isr),
            leader=leader,
            is_canary=canary,
            min_isr=min_isr.get(topic_id, 1),
            reassigning=reassigning,
        )


PLAN_ID_MAX = 2**63 - 1  # a bigint key: a larger id names no plan


def plan_get(*, plan_id: int) -> BalancePlan | None:
    if not 0 <= plan_id <= PLAN_ID_MAX:
        return None
    return BalancePlan.objects.filter(pk=plan_id).first()


def plan_list() -> QuerySet[BalancePlan]:
    """The plans, newest first, without their moves (a page lists many)."""
    return BalancePlan.objects.defer("moves").order_by("-id")


def plan_running() -> BalancePlan | None:
    return BalancePlan.objects.filter(state__in=RUNNING_STATES).first()


def partition_states(tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The named partitions as they are now: replicas, ISR, leader, whether they move. One
    query per TOPICS_PER_QUERY topics named, each reading its named partitions alone (by the
    (topic, partition) unique index)."""
    wanted: dict[str, set[int]] = {}
    for topic, index in tps:
        wanted.setdefault(topic, set()).add(index)
    found: dict[tuple[str, int], dict[str, Any]] = {}
    names = sorted(wanted)
    for start in range(0, len(names), TOPICS_PER_QUERY):
        query = Q(pk__in=[])
        for name in names[start : start + TOPICS_PER_QUERY]:
            query |= Q(topic__name=name, partition_index__in=sorted(wanted[name]))
        rows = Partition.objects.filter(query).values_list(
            "topic__name", "partition_index", "replicas", "isr", "leader", "reassigning"
        )
        for name, index, replicas, isr, leader, reassigning in rows:
            found[(name, index)] = {
                "replicas": tuple(replicas),
                "isr": tuple(isr),
                "leader": leader,
                "reassigning": reassigning,
            }
    return found


def broker_replica_count(*, broker_id: int) -> int:
    """How many partitions hold a replica on the broker (its row of the health counts)."""
    from replicas.models import BrokerLoad

    load = BrokerLoad.objects.filter(broker_id=broker_id).values_list("replicas", flat=True)
    return int(load.first() or 0)


def broker_alive(*, broker_id: int) -> bool | None:
    """None: not registered; else whether it is unfenced."""
    row = Broker.objects.filter(broker_id=broker_id).values_list("fenced", flat=True).first()
    return None if row is None else not row
