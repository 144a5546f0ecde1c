"""The balancer's planner (balancer/planner.py), pure: its goals in their order on examples, and
as properties over any cluster hypothesis makes: a move never breaks rack spread or the canary
pools where they could hold, never touches an unhealthy or moving partition, keeps each
partition's replica count; a drain empties its broker, a fill gives its broker its share, a
rebalance never leaves the replicas more skewed than it found them; the same cluster gives the
same plan; a cluster that cannot be improved gets no moves and says so."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from balancer.planner import (
    BrokerInfo,
    PartitionInfo,
    PlanRefused,
    plan_drain,
    plan_fill,
    plan_rebalance,
)


def brokers(n: int, *, racks: int = 0, canary: tuple[int, ...] = ()) -> list[BrokerInfo]:
    return [
        BrokerInfo(b, rack=f"r{b % racks}" if racks else None, canary=b in canary) for b in range(n)
    ]


def partition(topic: str, index: int, replicas: tuple[int, ...], **fields: object) -> PartitionInfo:
    values = {"isr": replicas, "leader": replicas[0], "min_isr": 1, **fields}
    return PartitionInfo(topic, index, replicas, **values)  # type: ignore[arg-type]


def counts(assignment: dict[tuple[str, int], tuple[int, ...]]) -> Counter[int]:
    return Counter(b for replicas in assignment.values() for b in replicas)


def applied(partitions: list[PartitionInfo], plan_moves: tuple) -> dict:
    assignment = {p.tp: p.replicas for p in partitions}
    for move in plan_moves:
        assert assignment[(move.topic, move.partition)] == move.before
        assignment[(move.topic, move.partition)] = move.after
    return assignment


def test_fill_gives_a_new_broker_its_share_without_leadership_moves() -> None:
    cluster = brokers(4)
    parts = [partition("t", i, (i % 3, (i + 1) % 3)) for i in range(12)]
    plan = plan_fill(cluster, parts, 3)
    after = counts(applied(parts, plan.moves))
    assert after[3] == 24 // 4
    assert max(after.values()) - min(after.values()) <= 1
    assert plan.skew_before["replica_spread"] == 8 and plan.skew_after["replica_spread"] <= 1
    # Replicas that led stay first: the fill moves followers, leadership stays where it was.
    assert all(m.after[0] == m.before[0] for m in plan.moves if m.before[0] != 3)


def test_drain_empties_the_broker_keeping_racks_and_refuses_when_it_cannot() -> None:
    cluster = brokers(6, racks=3)
    parts = [partition("t", i, (i % 6, (i + 1) % 6, (i + 2) % 6)) for i in range(18)]
    plan = plan_drain(cluster, parts, 2)
    after = applied(parts, plan.moves)
    assert counts(after)[2] == 0
    for replicas in after.values():
        assert len({f"r{b % 3}" for b in replicas}) == 3  # still one replica per rack
    with pytest.raises(PlanRefused, match="nowhere to go"):
        plan_drain(brokers(3), [partition("t", 0, (0, 1, 2))], 0)
    with pytest.raises(PlanRefused) as unknown:
        plan_drain(brokers(3), [], 9)
    assert unknown.value.unknown_broker


def test_rebalance_fixes_rack_and_canary_goals_first() -> None:
    cluster = [
        BrokerInfo(0, rack="a"),
        BrokerInfo(1, rack="a"),
        BrokerInfo(2, rack="b"),
        BrokerInfo(3, rack="b"),
        BrokerInfo(4, rack="a", canary=True),
        BrokerInfo(5, rack="b", canary=True),
    ]
    parts = [
        partition("t", 0, (0, 1)),  # both on rack a
        partition("c", 0, (0, 2), is_canary=True),  # a canary partition off the canary pods
        partition("t", 1, (4, 2)),  # a regular partition on a canary broker
    ]
    plan = plan_rebalance(cluster, parts)
    after = applied(parts, plan.moves)
    assert plan.skew_before["rack_violations"] == 1 and plan.skew_before["canary_violations"] == 2
    assert plan.skew_after["rack_violations"] == 0 and plan.skew_after["canary_violations"] == 0
    assert set(after[("c", 0)]) == {4, 5}
    assert not {4, 5} & set(after[("t", 1)])


def test_leaders_spread_by_reordering_replicas() -> None:
    cluster = brokers(3)
    parts = [partition("t", i, (0, 1, 2)) for i in range(6)]  # broker 0 first everywhere
    plan = plan_rebalance(cluster, parts)
    after = applied(parts, plan.moves)
    assert all(m.reorder_only for m in plan.moves)
    firsts = Counter(replicas[0] for replicas in after.values())
    assert max(firsts.values()) - min(firsts.values()) <= 1
    assert plan.skew_after["leader_spread"] <= 1 < plan.skew_before["leader_spread"]


def test_unhealthy_or_moving_partitions_stay_put_but_a_drain_takes_them() -> None:
    cluster = brokers(4)
    parts = [
        partition("t", 0, (0, 1), isr=(0,), min_isr=2),  # below min ISR
        partition("t", 1, (0, 1), leader=-1),  # leaderless
        partition("t", 2, (0, 1), reassigning=True),  # moving already
    ]
    plan = plan_fill(cluster, parts, 3)
    assert plan.moves == ()
    assert "nothing to move" in plan.message
    drained = plan_drain(cluster, parts, 0)  # the execution waits for each to be healthy
    assert len(drained.moves) == 3


def test_a_balanced_cluster_gets_no_moves_and_says_so() -> None:
    cluster = brokers(3)
    parts = [partition("t", i, (i % 3, (i + 1) % 3, (i + 2) % 3)) for i in range(6)]
    plan = plan_rebalance(cluster, parts)
    assert plan.moves == () and plan.message.startswith("The cluster cannot be improved")
    assert plan.skew_before == plan.skew_after


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[BrokerInfo], list[PartitionInfo]]:
    n = draw(st.integers(3, 8))
    racks = draw(st.integers(0, 3))
    canary = tuple(draw(st.sets(st.integers(0, n - 1), max_size=n - 2)))
    fenced = draw(st.sets(st.integers(0, n - 1), max_size=1))
    cluster = [
        BrokerInfo(
            b,
            rack=f"r{b % racks}" if racks else None,
            canary=b in canary,
            log_dirs=draw(st.integers(1, 3)),
            usable=b not in fenced,
        )
        for b in range(n)
    ]
    parts = []
    for index in range(draw(st.integers(0, 30))):
        rf = draw(st.integers(1, min(3, n)))
        replicas = tuple(draw(st.permutations(range(n)))[:rf])
        isr = replicas[: draw(st.integers(1, rf))]
        parts.append(
            PartitionInfo(
                "t",
                index,
                replicas,
                isr=isr,
                leader=isr[0] if draw(st.integers(0, 9)) else -1,
                is_canary=draw(st.booleans()),
                min_isr=draw(st.integers(1, 2)),
                reassigning=draw(st.integers(0, 9)) == 0,
            )
        )
    return cluster, parts


def check_moves(
    cluster: list[BrokerInfo], parts: list[PartitionInfo], plan_moves: tuple, *, drain: bool = False
) -> None:
    """Every move keeps the replica count and adds usable brokers only; outside a drain (which
    must move everything, its execution waiting for each partition's health) it moves only
    healthy partitions (goal 6)."""
    by_tp = {p.tp: p for p in parts}
    usable = {b.broker_id for b in cluster if b.usable}
    for move in plan_moves:
        partition = by_tp[(move.topic, move.partition)]
        assert drain or partition.movable, move
        assert len(move.after) == len(move.before) == len(set(move.after))
        assert set(move.after) - set(move.before) <= usable, move  # only usable brokers join


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_rebalance_never_breaks_a_goal_and_never_skews_more(
    cluster_and_parts: tuple[list[BrokerInfo], list[PartitionInfo]],
) -> None:
    cluster, parts = cluster_and_parts
    plan = plan_rebalance(cluster, parts)
    check_moves(cluster, parts, plan.moves)
    assert plan.skew_after["rack_violations"] <= plan.skew_before["rack_violations"]
    assert plan.skew_after["canary_violations"] <= plan.skew_before["canary_violations"]
    if not plan.skew_before["rack_violations"] and not plan.skew_before["canary_violations"]:
        # Fixing an earlier goal may cost this one; otherwise it never gets worse.
        assert plan.skew_after["replica_spread"] <= plan.skew_before["replica_spread"]
    assert plan_rebalance(cluster, parts) == plan  # the same cluster, the same plan


@settings(max_examples=300, deadline=None)
@given(clusters(), st.integers(0, 7))
def test_drain_and_fill_keep_every_goal(
    cluster_and_parts: tuple[list[BrokerInfo], list[PartitionInfo]], pick: int
) -> None:
    cluster, parts = cluster_and_parts
    broker_id = cluster[pick % len(cluster)].broker_id
    try:
        drained = plan_drain(cluster, parts, broker_id)
    except PlanRefused:
        pass
    else:
        check_moves(cluster, parts, drained.moves, drain=True)
        assert counts(applied(parts, drained.moves))[broker_id] == 0
    if cluster[pick % len(cluster)].usable:
        filled = plan_fill(cluster, parts, broker_id)
        check_moves(cluster, parts, filled.moves)
        assert filled.skew_after["rack_violations"] <= filled.skew_before["rack_violations"]
        assert filled.skew_after["canary_violations"] <= filled.skew_before["canary_violations"]
        assert (
            counts(applied(parts, filled.moves))[broker_id]
            >= counts({p.tp: p.replicas for p in parts})[broker_id]
        )
