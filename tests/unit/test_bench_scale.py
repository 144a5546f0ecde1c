"""The scale benchmark's pure parts: the cluster's layout, /proc and log parsing, the image
comparison and the growth table (no stack here)."""

from __future__ import annotations

import collections

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.scale.common import (
    BROKERS,
    HEAVY_BROKER,
    Layout,
    activations,
    assignments,
    goal,
    growth,
    growth_table,
    image_differences,
    memory_of,
    process_group_of,
    replica_set,
    shape_comparison,
    spread,
)
from bench.scale.failover import _log_time_ms


@pytest.mark.parametrize(
    ("partitions", "per_topic", "topics", "last"),
    [
        (10_000, 10_000, 1, 10_000),
        (10_000, 100, 100, 100),
        (1_000_000, 10_000, 100, 10_000),
        (1_000_000, 100, 10_000, 100),
        (2_500, 1_000, 3, 500),
    ],
)
def test_a_layout_is_its_topics(partitions: int, per_topic: int, topics: int, last: int) -> None:
    layout = Layout(partitions, per_topic)
    made = layout.topics()
    assert len(made) == topics and made[-1][1] == last
    assert sum(n for _, n in made) == partitions
    assert len({name for name, _ in made}) == topics


def test_the_change_in_flight_is_a_tenth_in_topics_of_the_shape() -> None:
    assert Layout(1_000_000, 10_000).in_flight() == [
        (f"inflight-{i:05d}", 10_000) for i in range(10)
    ]
    in_flight = Layout(1_000_000, 100).in_flight()
    assert len(in_flight) == 1_000 and {n for _, n in in_flight} == {100}
    assert Layout(10_000, 10_000).in_flight() == [("inflight-00000", 1_000)]


@given(
    st.integers(min_value=0, max_value=10**7),
    st.integers(min_value=HEAVY_BROKER + 1, max_value=200),
)
def test_a_replica_set_is_three_distinct_brokers(index: int, brokers: int) -> None:
    replicas = replica_set(index, brokers)
    assert len(replicas) == 3 == len(set(replicas))
    assert all(0 <= b < brokers for b in replicas)


@pytest.mark.parametrize("partitions", [10_000, 100_000])
def test_the_heavy_broker_leads_two_percent_and_the_rest_share_evenly(partitions: int) -> None:
    layout = Layout(partitions, 10_000)
    leaders: collections.Counter[int] = collections.Counter()
    replicas: collections.Counter[int] = collections.Counter()
    start = 0
    for _, count in layout.topics():
        for assignment in assignments(start, count):
            leaders[assignment["broker_ids"][0]] += 1
            replicas.update(assignment["broker_ids"])
        start += count
    assert leaders[HEAVY_BROKER] == layout.heavy_leaderships() == partitions // 50
    others = [leaders[b] for b in range(BROKERS) if b != HEAVY_BROKER]
    assert len(others) == BROKERS - 1 and max(others) - min(others) <= 1
    # every broker holds about its share of replicas (none is left out, none doubles up)
    share = 3 * partitions / BROKERS
    assert all(0.5 * share <= replicas[b] <= 1.5 * share for b in range(BROKERS))


def test_assignments_number_the_topics_partitions_from_zero() -> None:
    made = assignments(120, 3)
    assert [a["partition_index"] for a in made] == [0, 1, 2]
    assert [a["broker_ids"] for a in made] == [replica_set(i) for i in (120, 121, 122)]


def test_memory_and_process_group_come_from_proc() -> None:
    status = "Name:\tpython\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3\n"
    assert memory_of(status) == {"VmHWM": 2048 * 1024, "VmRSS": 1024 * 1024}
    assert memory_of("Name:\tkthreadd\n") == {}
    stat = "4242 (gunicorn: worker [a) b]) S 4200 4200 4200 0 -1 4194560 1 0"
    assert process_group_of(stat) == 4200


def test_the_activation_line_says_how_the_image_was_loaded() -> None:
    text = (
        "2026-11-26 11:42:12,502 INFO controlplane.controller [-] controller controller-b "
        "active with epoch 2 at offset 10595 (image from its standby image, caught up in 208 ms)\n"
        "2026-11-26 11:43:00,000 INFO controlplane.controller [-] controller c active with "
        "epoch 3 at offset -1 (image from the state tables in 12 ms)\n"
    )
    assert activations(text) == [
        {
            "node": "controller-b",
            "epoch": 2,
            "offset": 10595,
            "image_from": "its standby image, caught up",
            "image_ms": 208,
        },
        {"node": "c", "epoch": 3, "offset": -1, "image_from": "the state tables", "image_ms": 12},
    ]
    plain = _log_time_ms("2026-11-26 11:42:12,502 INFO x")
    celery = _log_time_ms("[2026-11-26 11:42:12,502: INFO/MainProcess] x")
    assert plain is not None and plain == celery and plain % 1000 == 502
    assert _log_time_ms("controller c active") is None


def test_an_image_equal_to_the_tables_has_no_difference() -> None:
    row = (1, 0, 0, (1, 2, 3), (1, 2, 3), ())
    tables = {("t", 0): row, ("t", 1): row}
    assert image_differences(dict(tables), tables)["equal"]
    moved = (2, 1, 1, (1, 2, 3), (2, 3), ())
    found = image_differences({("t", 0): moved, ("u", 0): row}, tables)
    assert (found["missing"], found["extra"], found["different"], found["equal"]) == (
        1,
        1,
        1,
        False,
    )
    assert len(found["examples"]) == 3


def test_goals_are_met_only_when_measured_within_them() -> None:
    assert goal(1.5, 2.0)["met"] and not goal(2.5, 2.0)["met"] and not goal(None, 2.0)["met"]
    assert goal(2.0, 2.0)["met"]


def test_spread_keeps_first_and_last_in_the_order_taken() -> None:
    figures = spread([0.3, 0.1, 0.2, 0.5])
    assert figures is not None
    assert (figures["first"], figures["last"], figures["max"], figures["median"]) == (
        0.3,
        0.5,
        0.5,
        0.3,
    )
    assert spread([]) is None


def test_growth_per_size_and_per_partition() -> None:
    grown = growth({10_000: 1.0, 100_000: 12.0, 1_000_000: None})
    assert grown["10000->100000"] == {"x": 12.0, "per_partition_x": 1.2}
    assert grown["100000->1000000"] == {"x": None, "per_partition_x": None}


def test_the_growth_table_is_per_shape_and_figure() -> None:
    runs = [
        {"partitions": 10_000, "per_topic": 100, "create": {"total_s": 2.0}},
        {"partitions": 100_000, "per_topic": 100, "create": {"total_s": 30.0}},
        {"partitions": 10_000, "per_topic": 10_000, "create": {"total_s": 1.0}},
    ]
    table = growth_table(runs)
    assert list(table) == ["topics_of_10000", "topics_of_100"]
    created = table["topics_of_100"]["create_s"]
    assert created["by_size"] == {"10000": 2.0, "100000": 30.0}
    assert created["growth"]["10000->100000"] == {"x": 15.0, "per_partition_x": 1.5}
    assert table["topics_of_10000"]["failover_s"]["by_size"] == {"10000": None}


def test_many_topics_are_compared_with_many_partitions_at_each_size() -> None:
    def run(size: int, shape: int, create_s: float, rate: float) -> dict[str, object]:
        return {
            "partitions": size,
            "per_topic": shape,
            "create": {"total_s": create_s, "partitions_per_s": rate},
        }

    runs = [
        run(10_000, 10_000, 1.0, 10_000.0),
        run(10_000, 100, 1.1, 9_000.0),
        run(100_000, 10_000, 10.0, 10_000.0),
        run(100_000, 100, 50.0, 2_000.0),
        run(1_000_000, 10_000, 100.0, 10_000.0),  # one shape only: not compared
    ]
    compared = shape_comparison(runs)
    assert list(compared) == [
        "10000: topics of 100 vs of 10000",
        "100000: topics of 100 vs of 10000",
    ]
    small, big = compared.values()
    assert small["create_s"] == {"ratio": 1.1, "goal": 1.2, "met": True}
    assert small["create_partitions_per_s"]["ratio"] == 1.111  # a rate: inverted
    assert big["create_s"]["met"] is False and big["create_partitions_per_s"]["ratio"] == 5.0
    assert small["failover_s"] == {"ratio": None, "goal": 1.2, "met": None}
