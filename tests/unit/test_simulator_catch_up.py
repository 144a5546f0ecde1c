"""Simulated moves take time (simulator/catch_up.py): a replica a reassignment adds copies the
partition at a rate, slower under Kafka's throttle configs, before its leader takes it into the
ISR; other replicas rejoin at once as before. The plan is pure: a view replayed from the core's
records, a clock of the test's own."""

from __future__ import annotations

import pytest

from controlplane.controller.records import ConfigRecord, PartitionRecord, Record, TopicRecord
from simulator.catch_up import CatchUp
from simulator.isr import plan_expansions
from tests.unit.test_simulator_isr import (
    TOPIC_ID,
    fleet,
    one_dir,
    planned,
    registration,
    unfence,
    view_of,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def moving_cluster(*extra: Record) -> list[Record]:
    """Brokers 0..2; `orders`-0 moving from [0, 1] to [1, 2] (2 being added, 0 leaving), led by
    0; `orders`-1 with 2 out of its ISR after a restart (no move)."""
    return [
        *(registration(b, 10 + b) for b in range(3)),
        *(unfence(b, 10 + b) for b in range(3)),
        TopicRecord(name="orders", topic_id=TOPIC_ID),
        PartitionRecord(
            partition_id=0,
            topic_id=TOPIC_ID,
            replicas=(1, 2, 0),
            isr=(0, 1),
            leader=0,
            adding_replicas=(2,),
            removing_replicas=(0,),
        ),
        PartitionRecord(partition_id=1, topic_id=TOPIC_ID, replicas=(1, 2), isr=(1,), leader=1),
        *extra,
    ]


def throttled(rate: str) -> list[Record]:
    return [
        ConfigRecord("TOPIC", "orders", "follower.replication.throttled.replicas", "0:2"),
        ConfigRecord("BROKER", "2", "follower.replication.throttled.rate", rate),
    ]


def test_a_new_replica_joins_once_it_copied_the_partition() -> None:
    view = view_of(moving_cluster())
    brokers = fleet({0: 10, 1: 11, 2: 12})
    clock = Clock()
    catch_up = CatchUp(partition_bytes=1000, bytes_per_s=100, clock=clock)

    def plan() -> dict[int, dict[int, tuple[int, ...]]]:
        found = plan_expansions(view, brokers, one_dir, lambda p, r: catch_up.caught_up(view, p, r))
        catch_up.round_done()
        return planned(found)

    # The restarted follower of partition 1 rejoins at once; the new replica starts copying.
    assert plan() == {1: {1: (2,)}}
    assert catch_up.in_progress == 1
    clock.now += 9
    assert plan() == {1: {1: (2,)}}  # 900 of 1000 bytes
    clock.now += 1
    assert plan() == {0: {0: (2,)}, 1: {1: (2,)}}
    assert catch_up.in_progress == 0


def test_a_throttle_slows_the_copy_and_counts_from_when_it_is_set() -> None:
    clock = Clock()
    catch_up = CatchUp(partition_bytes=1000, bytes_per_s=100, clock=clock)
    slow = view_of(moving_cluster(*throttled("10")))
    partition = slow.partition("orders", 0)
    assert partition is not None
    assert slow.replication_throttle("follower", partition, 2) == 10.0
    assert slow.replication_throttle("follower", partition, 1) is None  # not listed
    assert catch_up.rate(slow, partition, 2) == 10
    assert not catch_up.caught_up(slow, partition, 2)
    clock.now += 50
    assert not catch_up.caught_up(slow, partition, 2)  # 500 bytes at 10 B/s
    fast = view_of(moving_cluster())  # the throttle removed (Kafka's --verify)
    moving = fast.partition("orders", 0)
    assert moving is not None
    clock.now += 5
    assert catch_up.caught_up(fast, moving, 2)  # 500 + 5 s at 100 B/s


def test_a_cancelled_move_is_forgotten() -> None:
    view = view_of(moving_cluster())
    clock = Clock()
    catch_up = CatchUp(partition_bytes=1000, bytes_per_s=100, clock=clock)
    partition = view.partition("orders", 0)
    assert partition is not None
    catch_up.caught_up(view, partition, 2)
    catch_up.round_done()
    assert catch_up.in_progress == 1
    catch_up.round_done()  # the next round did not see it: cancelled
    assert catch_up.in_progress == 0


def test_nonsense_rates_are_refused() -> None:
    with pytest.raises(ValueError):
        CatchUp(bytes_per_s=0)
    with pytest.raises(ValueError):
        CatchUp(partition_bytes=-1)
