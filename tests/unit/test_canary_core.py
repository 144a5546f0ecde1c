"""Canary isolation (KIP-1095) in the pure core: the stride rule, placement on canary brokers,
canary-first elections and the records that keep it all.

Every event goes through `run_event`, as the controller runs it (the `Cluster` of
test_replication_core), and each scenario's log replays into the same image.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from controlplane.controller.canary.rules import (
    canary_partitions,
    canary_stride,
    is_canary_partition,
    leader_order,
)
from controlplane.controller.dispatch import run_event
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta, PartitionRegistration
from controlplane.controller.records import PartitionChangeRecord, PartitionRecord, TopicRecord
from tests.unit.test_replication_core import Cluster

CANARY = "canary-broker"


def set_cluster_percent(cluster: Cluster, value: str) -> dict[str, Any]:
    return cluster.run(
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {
                            "name": "percent.canary.partition",
                            "config_operation": "SET",
                            "value": value,
                        }
                    ],
                }
            ]
        },
    )


def canary_cluster(regular: int, canary: int, *, racks: int = 0) -> Cluster:
    """Regular brokers 0.., canary brokers 100.., all unfenced, racks round robin."""
    cluster = Cluster()
    for i in range(regular):
        cluster.register(i, rack=f"r{i % racks}" if racks else None)
    for i in range(canary):
        cluster.register(100 + i, rack=f"r{i % racks}" if racks else None, pod=CANARY)
    return cluster


def topic_partitions(cluster: Cluster, name: str) -> list[PartitionRegistration]:
    topic_id = cluster.image.topic_ids[name]
    count = cluster.image.topics[topic_id].partition_count
    return [cluster.image.partitions[(topic_id, i)] for i in range(count)]


def canary_indexes(cluster: Cluster, name: str) -> list[int]:
    return [i for i, p in enumerate(topic_partitions(cluster, name)) if p.is_canary]


def create(cluster: Cluster, name: str, partitions: int, rf: int, **configs: str) -> dict[str, Any]:
    (answer,) = cluster.create_topics(
        {
            "name": name,
            "num_partitions": partitions,
            "replication_factor": rf,
            "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
        }
    )
    return dict(answer)


# --- the stride rule -------------------------------------------------------------------------


def test_the_seeds_example_128_partitions_at_3_125_percent():
    assert canary_stride(3.125) == 32
    assert canary_partitions(0, 128, 3.125) == [0, 32, 64, 96]
    cluster = canary_cluster(6, 3)
    answer = create(cluster, "orders", 128, 3, percent_canary_partition="3.125")
    assert answer["error_code"] == 0
    assert answer["canary_partitions"] == [0, 32, 64, 96]
    assert answer["canary_isolated"] is True
    assert canary_indexes(cluster, "orders") == [0, 32, 64, 96]
    cluster.assert_replays()


@pytest.mark.parametrize(
    ("percent", "stride"),
    [(0.0, None), (100.0, 1), (50.0, 2), (30.0, 3), (3.125, 32), (1e-300, 10**302)],
)
def test_stride_is_floor_of_100_over_p(percent, stride):
    got = canary_stride(percent)
    if stride is None or stride < 10**300:
        assert got == stride
    else:
        assert got is not None and math.isclose(got, stride, rel_tol=1e-9)


@pytest.mark.parametrize("percent", [float("nan"), -1.0, 0.0, 5e-324])
def test_no_stride_for_nothing_or_nonsense(percent):
    assert canary_stride(percent) is None
    assert canary_partitions(0, 10**6, percent) == []
    assert not is_canary_partition(0, 10**6, percent)


def test_below_the_stride_a_topic_has_no_canary_partition():
    cluster = canary_cluster(3, 3)
    answer = create(cluster, "small", 31, 3, percent_canary_partition="3.125")
    assert answer["error_code"] == 0
    assert "canary_partitions" not in answer and "canary_isolated" not in answer
    assert canary_indexes(cluster, "small") == []
    assert create(cluster, "exact", 32, 3, percent_canary_partition="3.125")[
        "canary_partitions"
    ] == [0]


def test_the_cluster_default_applies_and_a_topic_override_wins():
    cluster = canary_cluster(4, 2)
    assert set_cluster_percent(cluster, "25")["responses"][0]["error_code"] == 0
    create(cluster, "by-default", 8, 2)
    assert canary_indexes(cluster, "by-default") == [0, 4]
    create(cluster, "overridden", 8, 2, percent_canary_partition="50")
    assert canary_indexes(cluster, "overridden") == [0, 2, 4, 6]
    create(cluster, "opted-out", 8, 2, percent_canary_partition="0")
    assert canary_indexes(cluster, "opted-out") == []
    cluster.assert_replays()


def test_expansion_classifies_only_the_new_partitions_across_the_threshold():
    cluster = canary_cluster(3, 3)
    create(cluster, "growing", 16, 3, percent_canary_partition="3.125")
    assert canary_indexes(cluster, "growing") == []  # 16 < 32: none yet
    before = topic_partitions(cluster, "growing")
    response = cluster.run("CreatePartitions", {"topics": [{"name": "growing", "count": 64}]})
    (result,) = response["results"]
    assert result["error_code"] == 0
    # 64 >= 32 now: of the new partitions 16..63, 32 is canary; 0 keeps what it was.
    assert result["canary_partitions"] == [32] and result["canary_isolated"] is True
    assert canary_indexes(cluster, "growing") == [32]
    assert topic_partitions(cluster, "growing")[:16] == before
    response = cluster.run("CreatePartitions", {"topics": [{"name": "growing", "count": 70}]})
    assert response["results"][0]["canary_partitions"] == [64]  # 64..69: 64 is
    response = cluster.run("CreatePartitions", {"topics": [{"name": "growing", "count": 90}]})
    assert "canary_partitions" not in response["results"][0]  # 70..89: none of them
    assert canary_indexes(cluster, "growing") == [32, 64]
    cluster.assert_replays()


# --- placement -------------------------------------------------------------------------------


def test_exactly_rf_canary_brokers_isolate_every_canary_partition():
    cluster = canary_cluster(6, 3)
    answer = create(cluster, "t", 64, 3, percent_canary_partition="12.5")  # stride 8
    assert answer["canary_isolated"] is True
    canary_brokers = {100, 101, 102}
    for index, p in enumerate(topic_partitions(cluster, "t")):
        if index % 8 == 0:
            assert p.is_canary and p.canary_isolated, (index, p)
            assert set(p.replicas) == canary_brokers and p.leader in canary_brokers
        else:
            assert not p.is_canary and not p.canary_isolated
            assert not set(p.replicas) & canary_brokers, (index, p)  # they stay off
    cluster.assert_replays()


def test_one_canary_broker_too_few_places_canary_partitions_like_any_and_says_so():
    cluster = canary_cluster(6, 2)
    answer = create(cluster, "t", 16, 3, percent_canary_partition="25")
    # Availability over isolation: created, and the answer says the canary ones are not isolated.
    assert answer["error_code"] == 0
    assert answer["canary_partitions"] == [0, 4, 8, 12]
    assert answer["canary_isolated"] is False
    for p in topic_partitions(cluster, "t"):
        assert not p.canary_isolated
        assert not set(p.replicas) & {100, 101}  # placed like any partition: regular brokers
    assert all(p.is_canary for i, p in enumerate(topic_partitions(cluster, "t")) if i % 4 == 0)


def test_fenced_canary_brokers_do_not_count():
    cluster = canary_cluster(6, 3)
    cluster.fence(102)
    answer = create(cluster, "t", 8, 3, percent_canary_partition="50")
    assert answer["canary_isolated"] is False
    cluster.unfence(102)
    answer = create(cluster, "u", 8, 3, percent_canary_partition="50")
    assert answer["canary_isolated"] is True


def test_racks_still_spread_inside_the_canary_set():
    cluster = canary_cluster(6, 4, racks=2)  # canary brokers 100, 102 on r0; 101, 103 on r1
    rack = {b.broker_id: b.rack for b in cluster.image.all_brokers()}
    create(cluster, "t", 40, 2, percent_canary_partition="10")  # canary: 0, 10, 20, 30
    canary = [p for p in topic_partitions(cluster, "t") if p.is_canary]
    assert len(canary) == 4
    for p in canary:
        assert p.canary_isolated and {rack[r] for r in p.replicas} == {"r0", "r1"}, p
    # Leaders spread over the canary brokers rather than piling on one.
    assert len({p.leader for p in canary}) == 4


def test_regular_partitions_use_canary_brokers_only_when_too_few_others():
    cluster = canary_cluster(2, 3)
    create(cluster, "t", 6, 3)
    assert any(set(p.replicas) & {100, 101, 102} for p in topic_partitions(cluster, "t"))
    roomy = canary_cluster(3, 3)
    create(roomy, "t", 6, 3)
    assert not any(set(p.replicas) & {100, 101, 102} for p in topic_partitions(roomy, "t"))


def test_manual_assignments_are_kept_and_isolation_is_computed_from_them():
    cluster = canary_cluster(3, 3)
    assignments = [[100, 101], [0, 1], [0, 101], [1, 2]]
    (answer,) = cluster.create_topics(
        {
            "name": "manual",
            "assignments": [
                {"partition_index": i, "broker_ids": ids} for i, ids in enumerate(assignments)
            ],
            "configs": [{"name": "percent.canary.partition", "value": "50"}],
        }
    )
    assert answer["canary_partitions"] == [0, 2] and answer["canary_isolated"] is False
    parts = topic_partitions(cluster, "manual")
    assert [p.replicas for p in parts] == [tuple(a) for a in assignments]
    assert parts[0].canary_isolated and not parts[2].canary_isolated
    assert parts[2].leader == 101  # a canary partition's leader: its canary replica first
    assert parts[1].leader == 0
    # An expansion with a manual assignment on canary brokers is isolated.
    response = cluster.run(
        "CreatePartitions",
        {"topics": [{"name": "manual", "count": 5, "assignments": [{"broker_ids": [102, 100]}]}]},
    )
    assert response["results"][0]["canary_partitions"] == [4]
    assert response["results"][0]["canary_isolated"] is True
    assert topic_partitions(cluster, "manual")[4].canary_isolated
    cluster.assert_replays()


def test_validate_only_answers_the_canary_partitions_and_writes_nothing():
    cluster = canary_cluster(3, 3)
    offset = cluster.offset
    (answer,) = cluster.create_topics(
        {
            "name": "dry",
            "num_partitions": 4,
            "replication_factor": 3,
            "configs": [{"name": "percent.canary.partition", "value": "50"}],
        },
        validate_only=True,
    )
    assert answer["canary_partitions"] == [0, 2] and answer["canary_isolated"] is True
    assert cluster.offset == offset


@pytest.mark.parametrize("value", ["abc", "nan", "NaN", "inf", "101", "-0.5", ""])
def test_a_bad_percentage_is_invalid_config_and_writes_nothing(value):
    cluster = canary_cluster(3, 3)
    offset = cluster.offset
    answer = create(cluster, "bad", 4, 3, percent_canary_partition=value)
    assert answer["error_code"] == Errors.INVALID_CONFIG, answer
    assert "percent.canary.partition" in answer["error_message"]
    response = set_cluster_percent(cluster, value)
    assert response["responses"][0]["error_code"] == Errors.INVALID_CONFIG
    assert cluster.offset == offset


# --- elections -------------------------------------------------------------------------------


def mixed_canary_topic(cluster: Cluster) -> str:
    """A canary partition on [0, 100, 101]: not isolated, two canary replicas."""
    cluster.create_topics(
        {
            "name": "mixed",
            "assignments": [{"partition_index": 0, "broker_ids": [0, 100, 101]}],
            "configs": [{"name": "percent.canary.partition", "value": "100"}],
        }
    )
    return "mixed"


def test_a_canary_partition_is_led_by_a_canary_broker_while_its_isr_allows():
    cluster = canary_cluster(2, 2)
    mixed_canary_topic(cluster)
    p = cluster.partition("mixed", 0)
    assert p.is_canary and not p.canary_isolated and p.leader == 100
    cluster.fence(100)
    assert cluster.partition("mixed", 0).leader == 101  # not 0, the first in replica order
    cluster.heartbeat(101, want_shut_down=True)  # controlled shutdown
    assert cluster.partition("mixed", 0).leader == 0  # no canary left in the ISR
    cluster.assert_replays()


def test_alter_replica_state_moves_canary_leadership_to_a_canary_replica():
    cluster = canary_cluster(2, 2)
    mixed_canary_topic(cluster)
    cluster.replicas_offline(100, {"mixed": [0]})
    p = cluster.partition("mixed", 0)
    assert p.leader == 101 and 100 in p.offline_replicas


@pytest.mark.parametrize("applied", [True, False], ids=["in-the-image", "in-the-same-delta"])
def test_the_rebalance_finds_a_canary_partition_led_by_its_first_replica(applied: bool):
    """A canary partition led by its first replica, a regular broker, while a canary replica
    is in sync (a log may hold it): the first replica leads, yet it is not the preferred leader
    (its first canary replica is), and the rebalance, which reads its candidates from the
    image's groups instead of every partition, still moves leadership there."""
    cluster = canary_cluster(2, 2)
    delta = MetadataDelta(cluster.image)
    topic_id = "00000000-0000-0000-0000-0000000000aa"
    delta.replay(TopicRecord(name="first-regular", topic_id=topic_id))
    delta.replay(
        PartitionRecord(
            partition_id=0, topic_id=topic_id, replicas=(0, 100), isr=(0, 100), leader=0,
            is_canary=True,
        )
    )  # fmt: skip
    if applied:
        cluster.image.apply(delta)
        response = cluster.run("RebalanceLeaders", {})
        leader = cluster.partition("first-regular", 0).leader
    else:
        response = run_event(delta, "RebalanceLeaders", {}, cluster.env())
        partition = delta.partition((topic_id, 0))
        assert partition is not None
        leader = partition.leader
    assert response["elections"] == 1 and leader == 100


def test_preferred_elections_and_the_rebalance_prefer_canary_replicas():
    cluster = canary_cluster(2, 2)
    mixed_canary_topic(cluster)
    cluster.fence(100, 101)
    assert cluster.partition("mixed", 0).leader == 0
    cluster.unfence(100)
    p = cluster.partition("mixed", 0)
    cluster.run("RebalanceLeaders", {})
    assert cluster.partition("mixed", 0).leader == 0  # 100 is not back in the ISR yet
    # The leader takes 100 back into the ISR: leadership goes back to the canary replica.
    answer = cluster.alter_partition("mixed", 0, [*p.isr, 100])
    assert answer["error_code"] == Errors.NEW_LEADER_ELECTED and answer["leader_id"] == 100
    assert cluster.partition("mixed", 0).leader == 100
    cluster.unfence(101)
    cluster.alter_partition("mixed", 0, [0, 100, 101])
    cluster.fence(100)
    assert cluster.partition("mixed", 0).leader == 101
    cluster.unfence(100)
    cluster.alter_partition("mixed", 0, [0, 101, 100])
    assert cluster.partition("mixed", 0).leader == 101  # a canary leader stays
    cluster.run("RebalanceLeaders", {})
    assert cluster.partition("mixed", 0).leader == 100  # the preferred canary replica
    response = cluster.elect("PREFERRED", {"mixed": [0]})
    assert response["replica_election_results"][0]["partition_result"][0]["error_code"] == (
        Errors.ELECTION_NOT_NEEDED
    )


def test_leader_order_puts_canary_replicas_first_for_canary_partitions_only():
    canary = frozenset({5, 7})
    p = PartitionRegistration(replicas=(1, 5, 2, 7), isr=(1, 5, 2, 7), leader=1, is_canary=True)
    assert leader_order(p, canary) == (5, 7, 1, 2)
    regular = PartitionRegistration(replicas=(1, 5, 2, 7), isr=(1,), leader=1)
    assert leader_order(regular, canary) == (1, 5, 2, 7)


# --- records ---------------------------------------------------------------------------------


def test_a_broker_back_in_another_pod_changes_isolation_in_the_log():
    cluster = canary_cluster(3, 3)
    create(cluster, "t", 4, 3, percent_canary_partition="50")
    assert cluster.partition("t", 0).canary_isolated
    mark = len(cluster.records)
    cluster.sessions.pop(102)  # the old process is gone
    cluster.register(102)  # a new incarnation, now in pod "broker"
    changes = [
        r
        for r in cluster.records[mark:]
        if isinstance(r, PartitionChangeRecord) and r.canary_isolated is not None
    ]
    assert {(r.partition_id, r.canary_isolated) for r in changes} == {(0, False), (2, False)}
    assert not cluster.partition("t", 0).canary_isolated
    assert not cluster.partition("t", 2).canary_isolated
    cluster.sessions.pop(102)
    cluster.register(102, pod=CANARY)  # and back
    assert cluster.partition("t", 0).canary_isolated
    cluster.run("UnregisterBroker", {"broker_id": 101})  # gone: not a canary broker any more
    assert not cluster.partition("t", 0).canary_isolated
    cluster.assert_replays()


def test_partition_records_carry_is_canary_and_canary_isolated():
    cluster = canary_cluster(3, 3)
    create(cluster, "t", 2, 3, percent_canary_partition="50")
    made = [r for r in cluster.records if isinstance(r, PartitionRecord)]
    assert [(r.is_canary, r.canary_isolated) for r in made] == [(True, True), (False, False)]
    assert '"is_canary":true,"canary_isolated":true' in made[0].to_json()


# --- the pod of a broker that sends none (stock Kafka brokers) ---------------------------------


def set_broker_config(cluster: Cluster, resource_name: str, name: str, value: str) -> Any:
    (result,) = cluster.run(
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": resource_name,
                    "configs": [{"name": name, "config_operation": "SET", "value": value}],
                }
            ]
        },
    )["responses"]
    return result


def test_broker_pod_labels_a_broker_at_its_next_registration():
    """A stock broker sends no Pod: `broker.pod` on BROKER "<id>" names it, from its next
    registration on (a dynamic per-broker config wins over what a registration says), and the
    canary partitions go to it."""
    cluster = canary_cluster(3, 0)
    assert set_broker_config(cluster, "2", "broker.pod", CANARY)["error_code"] == 0
    assert cluster.image.brokers[2].pod == "broker"  # nothing moves until it registers
    cluster.sessions.pop(2)
    cluster.register(2)  # it says nothing of its pod (pod "broker" by default)
    assert cluster.image.brokers[2].pod == CANARY
    answer = create(cluster, "t", 4, 1, percent_canary_partition="50")
    assert answer["canary_partitions"] == [0, 2] and answer["canary_isolated"], answer
    placed = {i: cluster.partition("t", i).replicas for i in range(4)}
    assert placed[0] == placed[2] == (2,)
    assert 2 not in placed[1] + placed[3]
    cluster.assert_replays()


@pytest.mark.parametrize(
    ("resource_name", "value", "error"),
    [
        ("", CANARY, Errors.INVALID_CONFIG),  # per broker only
        ("1", "canary", Errors.INVALID_CONFIG),  # not a pod
        ("1", "broker", Errors.NONE),
    ],
)
def test_broker_pod_is_a_per_broker_pod_name(resource_name, value, error):
    cluster = canary_cluster(3, 0)
    result = set_broker_config(cluster, resource_name, "broker.pod", value)
    assert result["error_code"] == int(error), result
