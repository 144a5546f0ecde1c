"""Partition reassignment (KIP-455) in the pure core, as Kafka's ReplicationControlManagerTest
and PartitionReassignmentReplicasTest/RevertTest describe it: start, catch up, complete, a
removed leader handing over, cancel, a new target replacing one in progress, the errors, the
records' Kafka twins and a replay of the log rebuilding the image after each step."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from controlplane.controller.errors import Errors
from controlplane.controller.kraft import decode_metadata_value, kafka_record
from controlplane.controller.partitions.reassignment import (
    Assignment,
    completed,
    moving_to,
    reverted,
)
from controlplane.controller.records import (
    UNASSIGNED_DIRECTORY,
    PartitionChangeRecord,
    PartitionRecord,
)
from tests.unit.test_replication_core import Cluster


def reassign(cluster: Cluster, *moves: tuple[str, int, list[int] | None], **extra: Any) -> Any:
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, index, replicas in moves:
        topics.setdefault(topic, []).append({"partition_index": index, "replicas": replicas})
    response = cluster.run(
        "AlterPartitionReassignments",
        {"topics": [{"name": t, "partitions": p} for t, p in topics.items()], **extra},
    )
    return response


def codes(response: dict[str, Any]) -> list[int]:
    return [p["error_code"] for t in response["responses"] for p in t["partitions"]]


@pytest.fixture
def cluster() -> Cluster:
    cluster = Cluster()
    cluster.register(1, 2, 3, 4, 5)
    cluster.create_topic("t", [[1, 2, 3], [2, 3, 1]])
    return cluster


# --- the pure rules ---------------------------------------------------------------------------
def test_moving_to_puts_the_target_first_then_what_leaves() -> None:
    assert moving_to((1, 2, 3), (3, 4, 5)) == Assignment((3, 4, 5, 1, 2), (4, 5), (1, 2))
    assert moving_to((1, 2, 3), (3, 2, 1)) == Assignment((3, 2, 1))  # a reorder moves nothing
    # A new target replaces one in progress: what that one was adding and is not wanted leaves.
    assert moving_to((2, 3, 4, 1), (2, 3, 5)) == Assignment((2, 3, 5, 1, 4), (5,), (1, 4))


def test_completion_needs_every_target_replica_in_sync_and_one_that_stays() -> None:
    moving = Assignment((3, 4, 1, 2), (4,), (1, 2))
    assert completed(moving, (1, 2, 3)) is None  # 4 not caught up
    assert completed(moving, (1, 2, 3, 4)) == ((3, 4), (3, 4))
    only_leaving = Assignment((3, 1), (3,), (1,))
    assert completed(only_leaving, (1,)) is None  # the ISR would be empty: wait


def test_revert_drops_the_added_replicas_and_is_unclean_when_only_they_are_in_sync() -> None:
    moving = Assignment((3, 4, 1, 2), (4,), (1, 2))
    assert reverted(moving, (1, 3, 4)) == reverted(moving, (1, 3, 4))
    clean = reverted(moving, (1, 3, 4))
    assert (clean.replicas, clean.isr, clean.unclean) == ((3, 1, 2), (1, 3), False)
    unclean = reverted(moving, (4,))
    assert (unclean.replicas, unclean.isr, unclean.unclean) == ((3, 1, 2), (3,), True)


# --- through the controller -------------------------------------------------------------------
def test_a_move_adds_the_new_replicas_then_completes_when_they_join_the_isr(
    cluster: Cluster,
) -> None:
    before = cluster.partition("t", 0)
    response = reassign(cluster, ("t", 0, [2, 3, 4]))
    assert codes(response) == [0]
    moving = cluster.partition("t", 0)
    assert moving.replicas == (2, 3, 4, 1)
    assert (moving.adding_replicas, moving.removing_replicas) == ((4,), (1,))
    assert moving.isr == before.isr and moving.leader == 1  # the leader stays while it can
    assert moving.leader_epoch == before.leader_epoch  # nothing left yet: no bump
    # The leader takes the new replica into the ISR: the move completes, 1 leaves and hands
    # leadership over to the first target replica in sync.
    answer = cluster.alter_partition("t", 0, [1, 2, 3, 4])
    assert answer["error_code"] == Errors.NEW_LEADER_ELECTED
    done = cluster.partition("t", 0)
    assert done.replicas == (2, 3, 4) and done.isr == (2, 3, 4)
    assert (done.adding_replicas, done.removing_replicas) == ((), ())
    assert done.leader == 2 and done.leader_epoch == moving.leader_epoch + 1
    cluster.assert_replays()


def test_a_leader_that_stays_gets_a_new_epoch_when_replicas_leave(cluster: Cluster) -> None:
    reassign(cluster, ("t", 0, [1, 2, 4]))
    moving = cluster.partition("t", 0)
    cluster.alter_partition("t", 0, [1, 2, 3, 4])
    done = cluster.partition("t", 0)
    assert done.replicas == (1, 2, 4) and done.leader == 1
    # Kafka bumps the leader epoch when replicas leave, though the leader stays.
    assert done.leader_epoch == moving.leader_epoch + 1
    change = cluster.records[-1]
    assert isinstance(change, PartitionChangeRecord) and change.leader == 1
    cluster.assert_replays()


def test_a_reorder_or_a_target_already_in_sync_completes_at_once(cluster: Cluster) -> None:
    assert codes(reassign(cluster, ("t", 0, [3, 2, 1]), ("t", 1, [2, 3]))) == [0, 0]
    assert cluster.partition("t", 0).replicas == (3, 2, 1)
    shrunk = cluster.partition("t", 1)
    assert shrunk.replicas == (2, 3) and not shrunk.reassigning
    cluster.assert_replays()


def test_the_same_target_again_writes_nothing(cluster: Cluster) -> None:
    reassign(cluster, ("t", 0, [2, 3, 4]))
    offset = cluster.offset
    assert codes(reassign(cluster, ("t", 0, [2, 3, 4]))) == [0]
    assert cluster.offset == offset


def test_cancel_reverts_to_the_original_replicas(cluster: Cluster) -> None:
    reassign(cluster, ("t", 0, [4, 5, 3]))
    moving = cluster.partition("t", 0)
    assert moving.replicas == (4, 5, 3, 1, 2)
    cluster.alter_partition("t", 0, [1, 2, 3, 4])  # 4 caught up, 5 not yet
    assert codes(reassign(cluster, ("t", 0, None))) == [0]
    back = cluster.partition("t", 0)
    assert back.replicas == (3, 1, 2) and back.isr == (1, 2, 3)
    assert not back.reassigning and back.leader == 1
    assert back.leader_epoch > moving.leader_epoch
    cluster.assert_replays()


def test_cancelling_nothing_is_no_reassignment_in_progress(cluster: Cluster) -> None:
    response = reassign(cluster, ("t", 0, None))
    assert codes(response) == [Errors.NO_REASSIGNMENT_IN_PROGRESS]


def test_a_new_target_replaces_the_one_in_progress(cluster: Cluster) -> None:
    reassign(cluster, ("t", 0, [2, 3, 4]))
    reassign(cluster, ("t", 0, [2, 3, 5]))
    moving = cluster.partition("t", 0)
    assert moving.replicas == (2, 3, 5, 1, 4)
    assert (moving.adding_replicas, moving.removing_replicas) == ((5,), (1, 4))
    cluster.alter_partition("t", 0, [1, 2, 3, 5])
    done = cluster.partition("t", 0)
    assert done.replicas == (2, 3, 5) and not done.reassigning
    cluster.assert_replays()


def test_an_unclean_revert_is_refused_unless_the_topic_allows_it() -> None:
    cluster = Cluster()
    cluster.register(1, 2, 3, 4)
    cluster.create_topic("t", [[1, 2]])
    reassign(cluster, ("t", 0, [3, 4]))
    cluster.alter_partition("t", 0, [1, 2, 3])
    cluster.fence(1, 2)  # only the new replica 3 is in sync now
    assert cluster.partition("t", 0).isr == (3,)
    response = reassign(cluster, ("t", 0, None))
    assert codes(response) == [Errors.INVALID_REPLICA_ASSIGNMENT]
    assert "unclean leader election" in response["responses"][0]["partitions"][0]["error_message"]
    assert cluster.partition("t", 0).reassigning


def test_kafkas_errors_per_partition(cluster: Cluster) -> None:
    cluster.register(9, unfence=False)
    response = reassign(
        cluster,
        ("t", 0, []),
        ("t", 1, [1, 1, 2]),
        ("t", 7, [1, 2, 3]),
        ("nope", 0, [1, 2, 3]),
    )
    assert codes(response) == [
        Errors.INVALID_REPLICA_ASSIGNMENT,
        Errors.INVALID_REPLICA_ASSIGNMENT,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    unknown_and_fenced = reassign(cluster, ("t", 0, [1, 2, 42]), ("t", 1, [2, 3, 9]))
    assert codes(unknown_and_fenced) == [Errors.INVALID_REPLICA_ASSIGNMENT] * 2
    assert "no such broker" in unknown_and_fenced["responses"][0]["partitions"][0]["error_message"]
    assert "fenced" in unknown_and_fenced["responses"][0]["partitions"][1]["error_message"]
    rf = reassign(cluster, ("t", 0, [1, 2]), allow_replication_factor_change=False)
    assert codes(rf) == [Errors.INVALID_REPLICATION_FACTOR]
    assert cluster.partition("t", 0).replicas == (1, 2, 3)  # nothing half-applied


def test_a_target_adding_nothing_keeps_the_adding_replicas_so_a_cancel_goes_back(
    cluster: Cluster,
) -> None:
    """Kafka's controller sets adding (removing) only when the new target adds (removes)
    something: a replica the first move added and the second drops is both, and a cancel still
    goes back to the replicas the partition had before either."""
    cluster.alter_partition("t", 0, [1, 2])  # 3 falls behind: the second target waits for it
    reassign(cluster, ("t", 0, [1, 2, 4]))
    reassign(cluster, ("t", 0, [1, 3]))
    both = cluster.partition("t", 0)
    assert both.adding_replicas == (4,) and both.removing_replicas == (2, 4)
    assert both.target_replicas == (1, 3)
    assert codes(reassign(cluster, ("t", 0, None))) == [0]
    back = cluster.partition("t", 0)
    assert sorted(back.replicas) == [1, 2, 3] and not back.reassigning
    cluster.assert_replays()


def test_a_deleted_topic_is_unknown_to_a_move_and_takes_its_moves_with_it(cluster: Cluster) -> None:
    reassign(cluster, ("t", 0, [3, 4, 5]))
    assert cluster.partition("t", 0).reassigning
    deleted = cluster.run("DeleteTopics", {"topic_names": ["t"]})
    assert deleted["responses"][0]["error_code"] == 0
    response = reassign(cluster, ("t", 0, None), ("t", 1, [1, 2, 4]))
    assert codes(response) == [Errors.UNKNOWN_TOPIC_OR_PARTITION] * 2
    assert not any(p.reassigning for p in cluster.image.partitions.values())
    cluster.assert_replays()


def test_a_target_broker_that_dies_mid_move_stalls_it_and_the_isr_keeps_a_member(
    cluster: Cluster,
) -> None:
    reassign(cluster, ("t", 0, [4, 5]))
    cluster.fence(4)  # KIP-589: the target replica cannot catch up
    cluster.alter_partition("t", 0, [1, 2, 3, 5])
    stalled = cluster.partition("t", 0)
    assert stalled.reassigning and stalled.removing_replicas == (1, 2, 3)
    # Every original replica dies too: the ISR keeps its last member, the move still waits.
    cluster.fence(1, 2, 3)
    assert cluster.partition("t", 0).isr and cluster.partition("t", 0).reassigning
    cluster.unfence(4)
    leader = cluster.partition("t", 0).leader
    assert leader == 5
    cluster.alter_partition("t", 0, [*cluster.partition("t", 0).isr, 4])
    done = cluster.partition("t", 0)
    assert done.replicas == (4, 5) and not done.reassigning
    cluster.assert_replays()


def test_a_move_onto_a_replica_elected_uncleanly_completes_in_the_same_change() -> None:
    """Every replica of an unclean topic fenced, the partition leaderless: a move onto a live
    broker elects it (unclean, the topic allows it) and completes in that change, since its ISR
    holds the whole target; waiting for the leader's next ISR change would wait for ever (it is
    alone in its ISR), and a later target naming the replicas as they stood would complete
    the old move instead (found by the replication property test)."""
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("u", [[1, 2]], configs={"unclean.leader.election.enable": "true"})
    cluster.fence(1, 2)
    assert cluster.partition("u", 0).leader == -1
    assert codes(reassign(cluster, ("u", 0, [3]))) == [0]
    moved = cluster.partition("u", 0)
    assert (moved.replicas, moved.isr, moved.leader) == ((3,), (3,), 3)
    assert not moved.reassigning
    cluster.unfence(1, 2)
    assert codes(reassign(cluster, ("u", 0, [1, 2, 3]))) == [0]
    again = cluster.partition("u", 0)
    assert sorted(again.replicas) == [1, 2, 3] and again.adding_replicas == (1, 2)
    cluster.assert_replays()


def test_new_replicas_are_unassigned_until_their_broker_places_them() -> None:
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.run(
        "BrokerRegistration",
        {
            "broker_id": 3,
            "cluster_id": cluster.image.cluster_id,
            "incarnation_id": str(uuid.uuid4()),
            "listeners": [
                {"name": "PLAINTEXT", "host": "b3", "port": 9092, "security_protocol": "PLAINTEXT"}
            ],
            "rack": None,
            "log_dirs": [str(uuid.uuid4()), str(uuid.uuid4())],  # several: the broker picks
        },
    )
    cluster.unfence(3)
    cluster.create_topic("t", [[1, 2]])
    topic_id = cluster.image.topic_ids["t"]
    placed = "11111111-1111-1111-1111-111111111111"
    cluster.run(
        "AssignReplicasToDirs",
        {
            "broker_id": 1,
            "broker_epoch": cluster.epoch(1),
            "directories": [
                {
                    "id": placed,
                    "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0}]}],
                }
            ],
        },
    )
    directories = cluster.partition("t", 0).directories
    assert directories and directories[0] == placed
    reassign(cluster, ("t", 0, [1, 3]))
    moving = cluster.partition("t", 0)
    assert moving.replicas == (1, 3, 2)
    assert moving.directories[0] == placed and moving.directories[1] == UNASSIGNED_DIRECTORY


def test_canary_isolation_follows_the_replicas_the_request_names() -> None:
    cluster = Cluster()
    cluster.register(1, 2, pod="canary-broker")
    cluster.register(3, 4)
    cluster.create_topic(
        "c", configs={"percent.canary.partition": "100"}, num_partitions=1, replication_factor=2
    )
    assert cluster.partition("c", 0).canary_isolated
    reassign(cluster, ("c", 0, [1, 3]))
    cluster.alter_partition("c", 0, [*cluster.partition("c", 0).isr, 3])
    moved = cluster.partition("c", 0)
    assert moved.replicas == (1, 3) and not moved.canary_isolated
    assert moved.leader == 1  # a canary replica leads while one can


def test_a_request_larger_than_one_operation_is_a_policy_violation() -> None:
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("big", num_partitions=10_001, replication_factor=1)
    moves = [
        ("big", i, [2 if cluster.partition("big", i).replicas == (1,) else 1])
        for i in range(10_001)
    ]
    before = dict(cluster.image.partitions)
    response = reassign(cluster, *moves)
    assert response["error_code"] == Errors.POLICY_VIOLATION
    assert cluster.image.partitions == before  # nothing half-applied


def test_reassignment_records_carry_kafkas_fields(cluster: Cluster) -> None:
    reassign(cluster, ("t", 0, [2, 3, 4]))
    change = cluster.records[-1]
    assert isinstance(change, PartitionChangeRecord)
    assert (change.adding_replicas, change.removing_replicas) == ((4,), (1,))
    decoded = decode_metadata_value(kafka_record(change, 21).value).fields
    assert (decoded["AddingReplicas"], decoded["RemovingReplicas"]) == ([4], [1])
    assert decoded["Replicas"] == [2, 3, 4, 1]
    # A snapshot's PartitionRecord keeps a move in progress.
    snapshot = [r for r in cluster.image.snapshot_records() if isinstance(r, PartitionRecord)]
    moving = next(r for r in snapshot if r.partition_id == 0)
    assert (moving.adding_replicas, moving.removing_replicas) == ((4,), (1,))
    assert PartitionRecord(0, "x", (1,), (1,), 1).to_data().get("adding_replicas") is None


# --- the throttles Kafka's reassignment tool sets and removes --------------------------------
def test_the_reassignment_tools_throttles_are_accepted_and_removed_as_kafka_does(
    cluster: Cluster,
) -> None:
    def alter(*resources: dict[str, Any]) -> list[int]:
        response = cluster.run("IncrementalAlterConfigs", {"resources": list(resources)})
        return [r["error_code"] for r in response["responses"]]

    def ops(rtype: str, name: str, operation: str, **configs: str | None) -> dict[str, Any]:
        return {
            "resource_type": rtype,
            "resource_name": name,
            "configs": [
                {"name": k.replace("_", "."), "config_operation": operation, "value": v}
                for k, v in configs.items()
            ],
        }

    # --execute --throttle: the moving replicas per topic, the rate per broker.
    assert (
        alter(
            ops(
                "TOPIC",
                "t",
                "SET",
                leader_replication_throttled_replicas="0:1,0:2,0:3",
                follower_replication_throttled_replicas="0:4",
            ),
            *(
                ops(
                    "BROKER",
                    str(b),
                    "SET",
                    leader_replication_throttled_rate="1000000",
                    follower_replication_throttled_rate="1000000",
                )
                for b in (1, 2, 3, 4)
            ),
        )
        == [0] * 5
    )
    assert cluster.image.configs[("BROKER", "4")]["follower.replication.throttled.rate"] == (
        "1000000"
    )
    assert alter(ops("TOPIC", "t", "SET", leader_replication_throttled_replicas="*")) == [0]
    # Kafka's validator refuses anything else, and a negative rate.
    assert (
        alter(
            ops("TOPIC", "t", "SET", leader_replication_throttled_replicas="1-2"),
            ops("BROKER", "1", "SET", leader_replication_throttled_rate="-1"),
        )
        == [Errors.INVALID_CONFIG] * 2
    )
    # --verify once complete: DELETE of all three broker keys (set or not) and both topic keys.
    assert (
        alter(
            *(
                ops(
                    "BROKER",
                    str(b),
                    "DELETE",
                    leader_replication_throttled_rate=None,
                    follower_replication_throttled_rate=None,
                    replica_alter_log_dirs_io_max_bytes_per_second=None,
                )
                for b in (1, 2, 3, 4, 5)
            ),
            ops(
                "TOPIC",
                "t",
                "DELETE",
                leader_replication_throttled_replicas=None,
                follower_replication_throttled_replicas=None,
            ),
        )
        == [0] * 6
    )
    assert ("TOPIC", "t") not in cluster.image.configs or not cluster.image.configs[("TOPIC", "t")]
