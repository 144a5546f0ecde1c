"""KIP-858 on the pure core: brokers place their replicas in log dirs (AssignReplicasToDirs) and
a heartbeat's offline log dirs take the replicas in them offline, as Kafka's controller does
(ReplicationControlManager.handleAssignReplicasToDirs and handleDirectoriesOffline)."""

from __future__ import annotations

import uuid
from typing import Any

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import (
    UNASSIGNED_DIRECTORY,
    FeatureLevelRecord,
    PartitionChangeRecord,
)

CLUSTER = "log-dirs"
NOW = 1_000_000
DIRS = {b: (str(uuid.uuid4()), str(uuid.uuid4())) for b in (1, 2, 3)}
ONE_DIR = str(uuid.uuid4())  # broker 4 has one log dir


def env() -> ControllerEnv:
    return ControllerEnv(now_ms=NOW, activated_ms=NOW, sessions={})


def cluster(metadata_version: int = 25) -> tuple[MetadataDelta, dict[int, int], str]:
    """Brokers 1-3 with two log dirs each and broker 4 with one, unfenced; topic `t` with three
    partitions on 1, 2 and 3 (led by 1, 2 and 3)."""
    delta = MetadataDelta(MetadataImage(cluster_id=CLUSTER))
    delta.replay(FeatureLevelRecord("metadata.version", metadata_version))
    epochs = {}
    for broker_id in (1, 2, 3, 4):
        answer = run_event(
            delta,
            "BrokerRegistration",
            {
                "broker_id": broker_id,
                "cluster_id": CLUSTER,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [],
                "rack": None,
                "log_dirs": list(DIRS.get(broker_id, (ONE_DIR,))),
            },
            env(),
        )
        epochs[broker_id] = answer["broker_epoch"]
        beat(delta, broker_id, epochs[broker_id])
    assignments = [
        {"partition_index": i, "broker_ids": [1 + (i + k) % 3 for k in range(3)]} for i in range(3)
    ]
    created = run_event(
        delta,
        "CreateTopics",
        {
            "topics": [
                {
                    "name": "t",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": assignments,
                }
            ]
        },
        env(),
    )
    assert created["topics"][0]["error_code"] == 0, created
    return delta, epochs, delta.topic_id("t") or ""


def beat(delta: MetadataDelta, broker_id: int, epoch: int, offline: tuple[str, ...] = ()) -> Any:
    return run_event(
        delta,
        "BrokerHeartbeat",
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "current_metadata_offset": delta.last_offset,
            "offline_log_dirs": list(offline),
        },
        env(),
    )


def assign(delta: MetadataDelta, broker_id: int, epoch: int, placed: dict[str, Any]) -> Any:
    return run_event(
        delta,
        "AssignReplicasToDirs",
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "directories": [
                {
                    "id": dir_id,
                    "topics": [
                        {"topic_id": t, "partitions": [{"partition_index": i} for i in indexes]}
                        for t, indexes in topics.items()
                    ],
                }
                for dir_id, topics in placed.items()
            ],
        },
        env(),
    )


def codes(answer: dict[str, Any]) -> list[int]:
    return [
        p["error_code"] for d in answer["directories"] for t in d["topics"] for p in t["partitions"]
    ]


def test_a_broker_places_its_replicas_and_a_placement_that_changes_nothing_writes_nothing():
    delta, epochs, topic = cluster()
    partition = delta.partition((topic, 0))
    assert partition is not None and partition.directories == ()  # each its broker's default
    answer = assign(delta, 1, epochs[1], {DIRS[1][1]: {topic: [0, 1]}})
    assert codes(answer) == [0, 0]
    placed = delta.partition((topic, 0))
    assert placed is not None
    # Broker 1's replica in its second dir; the others keep their brokers' default (two dirs
    # each: UNASSIGNED until they say).
    assert placed.directories == tuple(
        DIRS[1][1] if b == 1 else UNASSIGNED_DIRECTORY for b in placed.replicas
    )
    written = delta.last_offset
    assert codes(assign(delta, 1, epochs[1], {DIRS[1][1]: {topic: [0]}})) == [0]
    assert delta.last_offset == written


def test_refusals_are_kafkas():
    delta, epochs, topic = cluster()
    stale = assign(delta, 1, epochs[1] + 1, {DIRS[1][0]: {topic: [0]}})
    assert stale["error_code"] == Errors.STALE_BROKER_EPOCH
    answer = assign(delta, 4, epochs[4], {ONE_DIR: {topic: [0, 9], str(uuid.uuid4()): [0]}})
    # broker 4 holds no replica of t-0; t-9 does not exist; the other topic id is unknown
    assert codes(answer) == [
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
    ]
    old, old_epochs, old_topic = cluster(metadata_version=16)  # 3.7-IV1: no directories
    refused = assign(old, 1, old_epochs[1], {DIRS[1][0]: {old_topic: [0]}})
    assert refused["error_code"] == Errors.UNSUPPORTED_VERSION


def test_a_dir_reported_offline_takes_the_replicas_placed_in_it_offline():
    delta, epochs, topic = cluster()
    failing, healthy = DIRS[1]
    assign(delta, 1, epochs[1], {failing: {topic: [0]}, healthy: {topic: [1]}})
    led_before = {i: delta.partition((topic, i)).leader for i in range(3)}  # type: ignore[union-attr]
    assert led_before[0] == 1
    start = delta.last_offset
    assert beat(delta, 1, epochs[1], offline=(failing,))["error_code"] == 0
    on_failed, on_healthy, unplaced = (delta.partition((topic, i)) for i in range(3))
    assert on_failed is not None and on_healthy is not None and unplaced is not None
    assert 1 in on_failed.offline_replicas and 1 not in on_failed.isr
    assert on_failed.leader not in (1, -1)  # led by a live ISR member now
    assert 1 not in on_healthy.offline_replicas and 1 in on_healthy.isr
    assert 1 not in unplaced.offline_replicas  # UNASSIGNED: in no dir that failed
    changes = [r for o, r in delta.replayed if o > start and isinstance(r, PartitionChangeRecord)]
    assert [(r.topic_id, r.partition_id) for r in changes] == [(topic, 0)]
    # The same report again changes nothing.
    written = delta.last_offset
    beat(delta, 1, epochs[1], offline=(failing,))
    assert delta.last_offset == written


def test_a_one_dir_broker_losing_its_dir_loses_every_replica():
    delta, epochs, _ = cluster()
    created = run_event(
        delta,
        "CreateTopics",
        {
            "topics": [
                {
                    "name": "u",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [4, 1]}],
                }
            ]
        },
        env(),
    )
    assert created["topics"][0]["error_code"] == 0
    beat(delta, 4, epochs[4], offline=(ONE_DIR,))
    partition = delta.partition((delta.topic_id("u") or "", 0))
    assert partition is not None and partition.offline_replicas == (4,)
    assert partition.leader == 1 and partition.isr == (1,)
