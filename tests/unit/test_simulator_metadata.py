"""The broker simulator's view of the cluster: the controller's MetadataImage, fed by the log.

The view decodes fetched records with the core's `record_from_data` and replays them with
`MetadataDelta`, as the controller does; these tests feed it records as the metadata fetch
serves them (offset, type, stored JSON data) and read partitions back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from controlplane.controller.image import replay_log
from controlplane.controller.records import (
    NO_LEADER,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from simulator import MetadataView, PartitionView

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "cluster-sim"
ORDERS = "topic-orders"


def fetched(records: list[Record], first_offset: int = 0) -> list[dict[str, Any]]:
    """Records as `GET /internal/v1/metadata` serves them."""
    return [
        {"offset": first_offset + i, "type": r.TYPE, "data": json.loads(r.to_json())}
        for i, r in enumerate(records)
    ]


def registration(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=f"incarnation-{broker_id}",
        broker_epoch=epoch,
        listeners=(Listener("PLAINTEXT", "127.0.0.1", 9092 + broker_id, "PLAINTEXT"),),
        rack=None,
        pod="broker",
        log_dirs=("dir-a", "dir-b"),
    )


def a_log() -> list[Record]:
    """Three brokers, topic `orders` with two partitions, then leadership, ISR and offline
    changes: what a failed log dir and a leader election write."""
    return [
        registration(0, 0),
        registration(1, 1),
        registration(2, 2),
        TopicRecord(name="orders", topic_id=ORDERS),
        PartitionRecord(
            partition_id=0, topic_id=ORDERS, replicas=(0, 1, 2), isr=(0, 1, 2), leader=0
        ),
        PartitionRecord(
            partition_id=1, topic_id=ORDERS, replicas=(1, 2, 0), isr=(1, 2, 0), leader=1
        ),
        # Broker 1's log dir fails: offline and out of the ISR; partition 1 elects a new leader.
        PartitionChangeRecord(partition_id=0, topic_id=ORDERS, isr=(0, 2), offline_replicas=(1,)),
        PartitionChangeRecord(
            partition_id=1, topic_id=ORDERS, isr=(2, 0), leader=2, offline_replicas=(1,)
        ),
    ]


def test_the_view_replays_partitions_as_the_controller_does() -> None:
    view = MetadataView(CLUSTER)
    assert view.apply(fetched(a_log())) == 0

    assert view.last_offset == len(a_log()) - 1
    assert view.topics() == {"orders": ORDERS}
    assert view.partition("orders", 0) == PartitionView(
        topic="orders",
        partition=0,
        topic_id=ORDERS,
        replicas=(0, 1, 2),
        isr=(0, 2),
        leader=0,
        leader_epoch=0,  # no new leader: only the partition epoch moves
        partition_epoch=1,
        offline_replicas=(1,),
        is_canary=False,
    )
    moved = view.partition("orders", 1)
    assert moved is not None
    assert (moved.leader, moved.leader_epoch, moved.partition_epoch) == (2, 1, 1)
    assert (view.topic_count(), view.partition_count(), view.offline_replica_count()) == (1, 2, 2)
    # The very image the controller's own replay of the same log builds.
    assert view.image.as_comparable() == replay_log(CLUSTER, a_log()).as_comparable()


def test_records_fetched_in_batches_make_the_same_view() -> None:
    whole = MetadataView(CLUSTER)
    whole.apply(fetched(a_log()))
    batched = MetadataView(CLUSTER)
    records = fetched(a_log())
    for start in range(0, len(records), 3):
        batched.apply(records[start : start + 3])
    assert batched.image.as_comparable() == whole.image.as_comparable()


def test_partitions_filter_by_topic_and_broker_in_name_order() -> None:
    view = MetadataView(CLUSTER)
    view.apply(fetched(a_log()))
    view.apply(
        fetched(
            [
                TopicRecord(name="audit", topic_id="topic-audit"),
                PartitionRecord(
                    partition_id=0, topic_id="topic-audit", replicas=(2,), isr=(2,), leader=2
                ),
            ],
            first_offset=view.last_offset + 1,
        )
    )
    assert [p.name for p in view.partitions()] == ["audit-0", "orders-0", "orders-1"]
    assert [p.name for p in view.partitions("orders")] == ["orders-0", "orders-1"]
    assert [p.name for p in view.partitions(broker_id=2)] == ["audit-0", "orders-0", "orders-1"]
    assert [p.name for p in view.partitions("audit", broker_id=0)] == []
    assert view.partitions("missing") == []
    assert view.partition("missing", 0) is None


def test_a_removed_topic_leaves_the_view() -> None:
    view = MetadataView(CLUSTER)
    view.apply(fetched([*a_log(), RemoveTopicRecord(topic_id=ORDERS)]))
    assert view.topics() == {}
    assert view.partitions() == []
    assert (view.topic_count(), view.partition_count()) == (0, 0)


def test_a_malformed_record_is_counted_and_the_log_moves_on() -> None:
    records = fetched(a_log())
    records[-1]["data"] = {"topic_id": ORDERS}  # a PartitionChangeRecord without its fields
    view = MetadataView(CLUSTER)
    assert view.apply(records) == 1
    assert view.last_offset == len(records) - 1
    unchanged = view.partition("orders", 1)
    assert unchanged is not None and (unchanged.leader, unchanged.partition_epoch) == (1, 0)
    # The next record lands at its own offset and applies.
    change = PartitionChangeRecord(partition_id=1, topic_id=ORDERS, leader=2)
    assert view.apply(fetched([change], first_offset=len(records))) == 0
    assert view.last_offset == len(records)
    moved = view.partition("orders", 1)
    assert moved is not None and (moved.leader, moved.leader_epoch) == (2, 1)


def test_a_follower_that_started_late_skips_what_it_cannot_know() -> None:
    """track_partitions=False: the view begins at the log's end and knows nothing before it."""
    start = len(a_log()) - 1
    view = MetadataView(CLUSTER, after_offset=start, complete=False)
    later = [
        PartitionChangeRecord(partition_id=0, topic_id=ORDERS, isr=(0, 1, 2), offline_replicas=()),
        RemoveTopicRecord(topic_id=ORDERS),
        TopicRecord(name="fresh", topic_id="topic-fresh"),
        PartitionRecord(partition_id=0, topic_id="topic-fresh", replicas=(0,), isr=(0,), leader=0),
    ]
    assert view.apply(fetched(later, first_offset=start + 1)) == 0
    assert view.last_offset == start + len(later)
    assert [p.name for p in view.partitions()] == ["fresh-0"]


def test_a_complete_view_counts_a_record_at_odds_with_the_log() -> None:
    view = MetadataView(CLUSTER)
    change = PartitionChangeRecord(partition_id=0, topic_id=ORDERS, leader=NO_LEADER)
    assert view.apply(fetched([change])) == 1
    assert view.last_offset == 0


def test_records_fetched_twice_are_applied_once() -> None:
    view = MetadataView(CLUSTER)
    records = fetched(a_log())
    view.apply(records)
    assert view.apply(records[-2:]) == 0
    assert view.image.as_comparable() == replay_log(CLUSTER, a_log()).as_comparable()


def test_a_gap_in_the_offsets_keeps_each_record_at_its_own() -> None:
    view = MetadataView(CLUSTER)
    records = fetched(a_log())
    for item in records[4:]:
        item["offset"] += 10
    assert view.apply(records) == 0
    assert view.last_offset == len(records) - 1 + 10


def test_importing_the_simulator_loads_no_django() -> None:
    """The simulator runs without Django: importing it (and the pure core it uses) in a fresh
    interpreter, with no settings module, loads neither Django, DRF nor Celery."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    check = (
        "import simulator, sys; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'rest_framework', 'celery'}); "
        "assert not loaded, loaded"
    )
    result = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
