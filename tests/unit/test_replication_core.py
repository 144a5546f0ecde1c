"""Topics, partitions, elections, AlterPartition and AlterReplicaState in the pure core.

Scenarios follow Kafka's ReplicationControlManagerTest and PartitionChangeBuilderTest; every
event goes through `run_event`, as the controller runs it, against a MetadataDelta.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.canary.rules import CANARY_BROKER_POD
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import BrokerSession, ControllerEnv
from controlplane.controller.errors import ApiError, Errors, InvalidStateTransition
from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    replay_log,
)
from controlplane.controller.partitions.changes import (
    Election,
    PartitionChanges,
    acceptable_leaders,
    change_partition,
)
from controlplane.controller.partitions.leadership import config_view
from controlplane.controller.partitions.states import (
    PARTITION_CREATION_PATH,
    PARTITION_DELETION_PATH,
    PARTITION_TRANSITIONS,
    REPLICA_CREATION_PATH,
    REPLICA_DELETION_PATH,
    REPLICA_TRANSITIONS,
    PartitionState,
    ReplicaState,
    check_partition_transition,
    check_replica_transition,
    partition_state,
    replica_state,
    walk_partition,
    walk_replica,
)
from controlplane.controller.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    ControlledShutdownChange,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    TopicRecord,
    record_from_data,
)
from controlplane.controller.replication.alter_replica_state import validate_alter_replica_state
from controlplane.controller.replication.elections import elect_leaders, rebalance_leaders
from controlplane.controller.replication.placement import (
    UsableBroker,
    place_replicas,
    rack_alternated,
)

CLUSTER = "replication-core"
R = ReplicaState
P = PartitionState


class Cluster:
    """A controller in a test: every event runs through run_event and is applied at once."""

    def __init__(self, **static_configs: str) -> None:
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.records: list[Any] = []
        self.sessions: dict[int, BrokerSession] = {}
        self.static = {k.replace("_", "."): v for k, v in static_configs.items()}
        self.now = 1_000_000

    def env(self) -> ControllerEnv:
        return ControllerEnv(
            now_ms=self.now,
            activated_ms=self.now,
            sessions=self.sessions,
            static_configs=self.static,
        )

    def run(self, api: str, payload: dict[str, Any]) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        response = run_event(delta, api, payload, self.env())
        self.records.extend(record for _, record in delta.replayed)
        self.image.apply(delta)
        return response

    @property
    def offset(self) -> int:
        return self.image.last_offset

    # --- brokers ---------------------------------------------------------------------------
    def register(
        self, *broker_ids: int, unfence: bool = True, rack: str | None = None, pod: str = "broker"
    ) -> None:
        for broker_id in broker_ids:
            response = self.run(
                "BrokerRegistration",
                {
                    "broker_id": broker_id,
                    "cluster_id": CLUSTER,
                    "incarnation_id": str(uuid.uuid4()),
                    "listeners": [
                        {
                            "name": "PLAINTEXT",
                            "host": f"b{broker_id}",
                            "port": 9092,
                            "security_protocol": "PLAINTEXT",
                        }
                    ],
                    "rack": rack,
                    "pod": pod,
                    "log_dirs": [],
                },
            )
            assert response["error_code"] == 0, response
            if unfence:
                self.unfence(broker_id)

    def epoch(self, broker_id: int) -> int:
        broker = self.image.broker(broker_id)
        assert broker is not None
        return broker.epoch

    def heartbeat(self, broker_id: int, **flags: bool) -> dict[str, Any]:
        offset = self.offset
        # The session is touched before the controller decides (as Kafka's heartbeat manager).
        self.sessions[broker_id] = BrokerSession(self.now, offset)
        return self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": self.epoch(broker_id),
                "current_metadata_offset": offset,
                **flags,
            },
        )

    def unfence(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            assert self.heartbeat(broker_id)["is_fenced"] is False
        self.next_round()

    def next_round(self) -> dict[str, Any]:
        """The controller's round that follows an unfencing (the runtime runs it at once):
        leaderless partitions a live replica can lead are elected there, not in the
        heartbeat's own commit."""
        return self.run("FenceStaleBrokers", {"continue_moves": True})

    def fence(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            assert self.heartbeat(broker_id, want_fence=True)["is_fenced"] is True

    # --- topics ----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        assignments: list[list[int]] | None = None,
        *,
        configs: dict[str, str] | None = None,
        **fields: Any,
    ) -> str:
        answer = self.create_topics(
            {
                "name": name,
                **fields,
                "assignments": [
                    {"partition_index": i, "broker_ids": ids}
                    for i, ids in enumerate(assignments or [])
                ],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
        )[0]
        assert answer["error_code"] == 0, answer
        return str(answer["topic_id"])

    def create_topics(self, *topics: dict[str, Any], validate_only: bool = False) -> list[Any]:
        response = self.run(
            "CreateTopics", {"topics": list(topics), "validate_only": validate_only}
        )
        return list(response["topics"])

    def partition(self, topic: str, index: int) -> PartitionRegistration:
        topic_id = self.image.topic_ids[topic]
        return self.image.partitions[(topic_id, index)]

    def alter_partition(
        self,
        topic: str,
        index: int,
        new_isr: list[int],
        *,
        broker_id: int | None = None,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
        broker_epoch: int | None = None,
    ) -> dict[str, Any]:
        current = self.partition(topic, index) if topic in self.image.topic_ids else None
        sender = broker_id if broker_id is not None else (current.leader if current else 0)
        response = self.run(
            "AlterPartition",
            {
                "broker_id": sender,
                "broker_epoch": broker_epoch if broker_epoch is not None else self.epoch(sender),
                "topics": [
                    {
                        "topic_name": topic,
                        "partitions": [
                            {
                                "partition_index": index,
                                "leader_epoch": leader_epoch
                                if leader_epoch is not None
                                else (current.leader_epoch if current else 0),
                                "partition_epoch": partition_epoch
                                if partition_epoch is not None
                                else (current.partition_epoch if current else 0),
                                "new_isr": new_isr,
                            }
                        ],
                    }
                ],
            },
        )
        if "topics" not in response:
            return response
        return dict(response["topics"][0]["partitions"][0])

    def replicas_offline(
        self, broker_id: int, topics: dict[str, list[int]], *, broker_epoch: int | None = None
    ) -> dict[str, Any]:
        return self.run(
            "AlterReplicaState",
            {
                "broker_id": broker_id,
                "broker_epoch": self.epoch(broker_id) if broker_epoch is None else broker_epoch,
                "new_state": 1,
                "reason": "log dir failed",
                "topics": [{"name": n, "partitions": p} for n, p in topics.items()],
            },
        )

    def elect(self, election_type: str, topics: dict[str, list[int]] | None) -> dict[str, Any]:
        return self.run(
            "ElectLeaders",
            {
                "election_type": election_type,
                "topic_partitions": None
                if topics is None
                else [{"topic": t, "partitions": p} for t, p in topics.items()],
            },
        )

    def assert_replays(self) -> None:
        rebuilt = replay_log(
            CLUSTER, [record_from_data(r.TYPE, json.loads(r.to_json())) for r in self.records]
        )
        assert rebuilt.as_comparable() == self.image.as_comparable()


def election_errors(response: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {
        (topic["topic"], p["partition_id"]): Errors(p["error_code"]).name
        for topic in response["replica_election_results"]
        for p in topic["partition_result"]
    }


def partition(
    replicas: tuple[int, ...],
    isr: tuple[int, ...] | None = None,
    leader: int | None = None,
    offline: tuple[int, ...] = (),
) -> PartitionRegistration:
    isr = replicas if isr is None else isr
    return PartitionRegistration(
        replicas=replicas,
        isr=isr,
        leader=isr[0] if leader is None else leader,
        leader_epoch=100,
        partition_epoch=200,
        offline_replicas=offline,
    )


TP = ("topic-id", 0)


def active(*broker_ids: int) -> Any:
    return lambda broker_id: broker_id in broker_ids


# --- state machine tables --------------------------------------------------------------------

# Kafka's ReplicaState.validPreviousStates and PartitionState.validPreviousStates, as Kafka
# writes them: the table the core keeps is their inverse.
KAFKA_REPLICA_PREVIOUS = {
    R.NEW: {R.NON_EXISTENT},
    R.ONLINE: {R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE},
    R.OFFLINE: {R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE},
    R.DELETION_STARTED: {R.OFFLINE},
    R.DELETION_SUCCESSFUL: {R.DELETION_STARTED},
    R.DELETION_INELIGIBLE: {R.OFFLINE, R.DELETION_STARTED},
    R.NON_EXISTENT: {R.DELETION_SUCCESSFUL},
}
KAFKA_PARTITION_PREVIOUS = {
    P.NEW: {P.NON_EXISTENT},
    P.ONLINE: {P.NEW, P.ONLINE, P.OFFLINE},
    P.OFFLINE: {P.NEW, P.ONLINE, P.OFFLINE},
    P.NON_EXISTENT: {P.OFFLINE},
}


def test_the_tables_are_kafkas_valid_previous_states_turned_around():
    for target, previous in KAFKA_REPLICA_PREVIOUS.items():
        for current in R:
            assert (target in REPLICA_TRANSITIONS[current]) is (current in previous), (
                current,
                target,
            )
    for ptarget, pprevious in KAFKA_PARTITION_PREVIOUS.items():
        for pcurrent in P:
            assert (ptarget in PARTITION_TRANSITIONS[pcurrent]) is (pcurrent in pprevious)


@pytest.mark.parametrize(("current", "target"), list(itertools.product(R, R)))
def test_replica_transitions_are_checked_against_the_table(current, target):
    if current == target or target in REPLICA_TRANSITIONS[current]:
        check_replica_transition(current, target)  # accepted (same state: a no-op)
        return
    with pytest.raises(InvalidStateTransition) as refused:
        check_replica_transition(current, target)
    assert refused.value.error is Errors.INVALID_REQUEST
    assert refused.value.machine == "replica"
    assert (refused.value.current, refused.value.target) == (current.value, target.value)
    assert f"from {current.value} to {target.value}" in str(refused.value.message)


@pytest.mark.parametrize(("current", "target"), list(itertools.product(P, P)))
def test_partition_transitions_are_checked_against_the_table(current, target):
    if current == target or target in PARTITION_TRANSITIONS[current]:
        check_partition_transition(current, target)
        return
    with pytest.raises(InvalidStateTransition) as refused:
        check_partition_transition(current, target)
    assert refused.value.error is Errors.INVALID_REQUEST and refused.value.machine == "partition"


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (R.NON_EXISTENT, R.ONLINE),
        (R.ONLINE, R.NEW),
        (R.ONLINE, R.DELETION_STARTED),
        (R.DELETION_SUCCESSFUL, R.ONLINE),
        (R.NEW, R.DELETION_STARTED),
    ],
)
def test_well_known_invalid_replica_transitions(current, target):
    with pytest.raises(InvalidStateTransition):
        check_replica_transition(current, target)


def test_same_state_is_a_no_op_even_where_kafka_lists_no_self_loop():
    for state in R:
        check_replica_transition(state, state)
    for pstate in P:
        check_partition_transition(pstate, pstate)


def test_creation_and_deletion_walks_follow_the_tables():
    assert walk_replica(R.NON_EXISTENT, REPLICA_CREATION_PATH) is R.ONLINE
    assert walk_replica(R.ONLINE, REPLICA_DELETION_PATH) is R.NON_EXISTENT
    assert walk_partition(P.NON_EXISTENT, PARTITION_CREATION_PATH) is P.ONLINE
    assert walk_partition(P.ONLINE, PARTITION_DELETION_PATH) is P.NON_EXISTENT
    with pytest.raises(InvalidStateTransition):
        walk_replica(R.NEW, REPLICA_DELETION_PATH[1:])  # deletion must start offline
    with pytest.raises(InvalidStateTransition):
        walk_partition(P.ONLINE, (P.NON_EXISTENT,))


def test_states_derived_from_the_image():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.fence(3)
    led = partition((1, 2, 3), isr=(1, 2), offline=(2,))
    assert partition_state(None) is P.NON_EXISTENT
    assert partition_state(led) is P.ONLINE
    assert partition_state(partition((1,), leader=NO_LEADER)) is P.OFFLINE
    assert replica_state(led, 1, cluster.image.broker(1)) is R.ONLINE
    assert replica_state(led, 2, cluster.image.broker(2)) is R.OFFLINE  # offline log dir
    assert replica_state(led, 3, cluster.image.broker(3)) is R.OFFLINE  # fenced broker
    assert replica_state(led, 4, None) is R.NON_EXISTENT  # not a replica
    assert replica_state(None, 1, cluster.image.broker(1)) is R.NON_EXISTENT


# --- the partition change builder (Kafka's PartitionChangeBuilderTest) ----------------------


def test_no_change_builds_no_record():
    p = partition((1, 2, 3))
    assert change_partition(TP, p, acceptable=active(1, 2, 3)) is None
    assert change_partition(TP, p, acceptable=active(1, 2, 3), target_isr=(1, 2, 3)) is None


def test_isr_shrink_keeps_the_leader_and_changes_only_the_isr():
    p = partition((1, 2, 3))
    record = change_partition(TP, p, acceptable=active(1, 2, 3), target_isr=(1, 3))
    assert record == PartitionChangeRecord(partition_id=0, topic_id="topic-id", isr=(1, 3))
    merged = p.merge(record)
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (1, 100, 201)


def test_a_leader_that_leaves_the_isr_is_replaced_in_replica_order():
    # The ISR lists 3 before 2; the replica order (2 first) decides.
    p = partition((1, 2, 3), isr=(1, 3, 2), leader=1)
    record = change_partition(TP, p, acceptable=active(1, 2, 3), target_isr=(3, 2))
    assert record is not None and record.leader == 2 and record.isr == (3, 2)
    merged = p.merge(record)
    assert (merged.leader_epoch, merged.partition_epoch) == (101, 201)


def test_only_acceptable_isr_members_not_offline_may_lead():
    p = partition((1, 2, 3, 4), isr=(1, 2, 3, 4))
    record = change_partition(
        TP, p, acceptable=active(3, 4), target_isr=(2, 3, 4), target_offline=(3,)
    )
    assert record is not None and record.leader == 4  # 2 is not acceptable, 3 is offline
    assert record.offline_replicas == (3,)


def test_the_isr_never_becomes_empty_and_the_partition_goes_leaderless():
    p = partition((1, 2), isr=(1,))
    record = change_partition(TP, p, acceptable=active(2), target_isr=())
    assert record is not None
    assert record.isr is None and record.leader == NO_LEADER  # the lone member stays
    merged = p.merge(record)
    assert merged.isr == (1,) and merged.leader == NO_LEADER and merged.leader_epoch == 101


def test_unclean_election_picks_a_live_replica_outside_the_isr_and_resets_the_isr():
    p = partition((1, 2, 3), isr=(1,))
    clean = change_partition(TP, p, acceptable=active(2, 3), target_isr=())
    assert clean is not None and clean.leader == NO_LEADER
    unclean = change_partition(
        TP, p, acceptable=active(2, 3), target_isr=(), election=Election.UNCLEAN
    )
    assert unclean is not None and (unclean.leader, unclean.isr) == (2, (2,))
    offline_first = change_partition(
        TP,
        p,
        acceptable=active(2, 3),
        target_isr=(),
        target_offline=(2,),
        election=Election.UNCLEAN,
    )
    assert offline_first is not None and offline_first.leader == 3  # offline replicas never lead


def test_unclean_is_a_last_resort_a_clean_candidate_wins():
    p = partition((1, 2, 3), isr=(1, 3))
    record = change_partition(
        TP, p, acceptable=active(2, 3), target_isr=(3,), election=Election.UNCLEAN
    )
    assert record is not None and (record.leader, record.isr) == (3, (3,))


def test_preferred_election():
    p = partition((1, 2, 3), isr=(1, 2, 3), leader=2)
    record = change_partition(TP, p, acceptable=active(1, 2, 3), election=Election.PREFERRED)
    assert record is not None and record.leader == 1 and record.isr is None
    # The preferred replica cannot lead: the current (valid) leader stays, nothing changes.
    assert change_partition(TP, p, acceptable=active(2, 3), election=Election.PREFERRED) is None
    # Neither can: another ISR member.
    record = change_partition(TP, p, acceptable=active(3), election=Election.PREFERRED)
    assert record is not None and record.leader == 3


def test_partition_changes_see_earlier_changes_and_count_elections():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2, 3]])
    tp = (cluster.image.topic_ids["foo"], 0)
    changes = PartitionChanges(MetadataDelta(cluster.image))
    acceptable = acceptable_leaders(changes.view)
    first = changes.get(tp)
    assert first is not None
    assert changes.add(change_partition(tp, first, acceptable=acceptable, target_isr=(2, 3)))
    second = changes.get(tp)
    assert second is not None and second.leader == 2 and second.partition_epoch == 1
    assert not changes.add(None)
    assert changes.elections == 1 and changes.unclean_elections == 0 and len(changes.records) == 1


def test_replaying_a_change_bumps_the_leader_epoch_only_on_a_leader_change():
    p = partition((1, 2, 3))
    isr_only = p.merge(PartitionChangeRecord(partition_id=0, topic_id="t", isr=(1, 2)))
    assert (isr_only.leader_epoch, isr_only.partition_epoch) == (100, 201)
    leader = isr_only.merge(PartitionChangeRecord(partition_id=0, topic_id="t", leader=2))
    assert (leader.leader, leader.leader_epoch, leader.partition_epoch) == (2, 101, 202)
    gone = leader.merge(PartitionChangeRecord(partition_id=0, topic_id="t", leader=NO_LEADER))
    assert (gone.leader, gone.leader_epoch, gone.partition_epoch) == (-1, 102, 203)
    assert (
        PartitionChangeRecord(partition_id=0, topic_id="t").leader == NO_LEADER_CHANGE
    )  # the default: unchanged


# --- CreateTopics --------------------------------------------------------------------------


def test_create_topics_with_no_brokers_and_then_kafkas_first_topic():
    cluster = Cluster(default_replication_factor="3")
    (refused,) = cluster.create_topics({"name": "foo"})
    assert refused["error_code"] == Errors.INVALID_REPLICATION_FACTOR
    assert refused["error_message"] == "All brokers are currently fenced."
    assert refused["topic_id"] is None and cluster.offset == -1

    cluster.register(0, 1, 2)
    (created,) = cluster.create_topics({"name": "foo"})
    assert created["error_code"] == 0 and created["error_message"] is None
    assert (created["num_partitions"], created["replication_factor"]) == (1, 3)
    assert str(uuid.UUID(created["topic_id"])) == created["topic_id"]
    p = cluster.partition("foo", 0)
    assert sorted(p.replicas) == [0, 1, 2] and p.isr == p.replicas and p.leader == p.replicas[0]
    assert (p.leader_epoch, p.partition_epoch) == (0, 0)

    (again,) = cluster.create_topics({"name": "foo"})
    assert again["error_code"] == Errors.TOPIC_ALREADY_EXISTS
    assert again["error_message"] == "Topic 'foo' already exists."
    cluster.assert_replays()


def test_create_topics_batch_defaults_and_validate_only():
    cluster = Cluster(num_partitions="4", default_replication_factor="2")
    cluster.register(1, 2, 3)
    answers = cluster.create_topics(
        {"name": "defaults"},
        {"name": "explicit", "num_partitions": 2, "replication_factor": 3},
        {"name": "bad name!"},
        {"name": "manual", "assignments": [{"partition_index": 0, "broker_ids": [3, 1]}]},
    )
    by_name = {a["name"]: a for a in answers}
    assert [a["name"] for a in answers] == ["defaults", "explicit", "bad name!", "manual"]
    assert (by_name["defaults"]["num_partitions"], by_name["defaults"]["replication_factor"]) == (
        4,
        2,
    )
    assert (by_name["explicit"]["num_partitions"], by_name["explicit"]["replication_factor"]) == (
        2,
        3,
    )
    assert by_name["bad name!"]["error_code"] == Errors.INVALID_TOPIC_EXCEPTION
    assert cluster.partition("manual", 0).replicas == (3, 1)
    assert cluster.partition("manual", 0).leader == 3
    assert {t.name: t.partition_count for t in cluster.image.topics.values()} == {
        "defaults": 4,
        "explicit": 2,
        "manual": 1,
    }
    ids = {a["topic_id"] for a in answers if a["error_code"] == 0}
    assert len(ids) == 3 and all(uuid.UUID(i).version == 4 for i in ids)

    end = cluster.offset
    (checked,) = cluster.create_topics(
        {"name": "dry", "num_partitions": 3, "replication_factor": 2}, validate_only=True
    )
    assert checked["error_code"] == 0 and checked["num_partitions"] == 3
    assert cluster.offset == end and "dry" not in cluster.image.topic_ids  # nothing written
    (checked,) = cluster.create_topics({"name": "defaults"}, validate_only=True)
    assert checked["error_code"] == Errors.TOPIC_ALREADY_EXISTS
    cluster.assert_replays()


@pytest.mark.parametrize(
    ("topic", "error", "message"),
    [
        ({"name": ""}, Errors.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"),
        ({"name": "."}, Errors.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."'),
        ({"name": ".."}, Errors.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."'),
        ({"name": "x" * 250}, Errors.INVALID_TOPIC_EXCEPTION, "can't be longer than 249"),
        ({"name": "a/b"}, Errors.INVALID_TOPIC_EXCEPTION, "contains a character other than"),
        (
            {"name": "t", "num_partitions": 0},
            Errors.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        ({"name": "t", "num_partitions": -5}, Errors.INVALID_PARTITIONS, "non-positive"),
        (
            {"name": "t", "replication_factor": 0},
            Errors.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            {"name": "t", "replication_factor": 4},
            Errors.INVALID_REPLICATION_FACTOR,
            "The target replication factor of 4 cannot be reached because only 3 broker(s) "
            "are registered.",
        ),
        (
            {"name": "t", "assignments": [{"partition_index": 0, "broker_ids": [1, 1]}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "includes the broker 1 more than once",
        ),
        (
            {"name": "t", "assignments": [{"partition_index": 0, "broker_ids": [1, 9]}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "broker 9, but no such broker is registered",
        ),
        (
            {"name": "t", "assignments": [{"partition_index": 0, "broker_ids": []}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "empty replica list",
        ),
        (
            {"name": "t", "assignments": [{"partition_index": 1, "broker_ids": [1]}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "consecutive 0-based",
        ),
        (
            {
                "name": "t",
                "assignments": [
                    {"partition_index": 0, "broker_ids": [1, 2]},
                    {"partition_index": 1, "broker_ids": [1]},
                ],
            },
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "not consistent with previous partitions",
        ),
        (
            {
                "name": "t",
                "num_partitions": 2,
                "assignments": [{"partition_index": 0, "broker_ids": [1]}],
            },
            Errors.INVALID_REQUEST,
            "numPartitions or replicationFactor was not set to -1",
        ),
        (
            {"name": "t", "configs": [{"name": "no.such.config", "value": "1"}]},
            Errors.INVALID_CONFIG,
            "Unknown topic config name: no.such.config",
        ),
        (
            {"name": "t", "configs": [{"name": "retention.ms", "value": "soon"}]},
            Errors.INVALID_CONFIG,
            "Invalid value soon for configuration retention.ms",
        ),
        (
            {
                "name": "t",
                "configs": [
                    {"name": "retention.ms", "value": "1"},
                    {"name": "retention.ms", "value": "2"},
                ],
            },
            Errors.INVALID_REQUEST,
            "Duplicate config name.",
        ),
    ],
)
def test_create_topic_errors(topic, error, message):
    cluster = Cluster()
    cluster.register(1, 2, 3)
    end = cluster.offset
    (answer,) = cluster.create_topics(topic)
    assert Errors(answer["error_code"]) is error, answer
    assert message in answer["error_message"]
    assert (answer["topic_id"], answer["num_partitions"], answer["replication_factor"]) == (
        None,
        -1,
        -1,
    )
    assert cluster.offset == end and not cluster.image.topics


def test_duplicate_names_in_one_request_are_refused_both_times_and_others_go_ahead():
    cluster = Cluster()
    cluster.register(1)
    answers = cluster.create_topics({"name": "dup"}, {"name": "ok"}, {"name": "dup"})
    assert [Errors(a["error_code"]).name for a in answers] == [
        "INVALID_REQUEST",
        "NONE",
        "INVALID_REQUEST",
    ]
    assert set(cluster.image.topic_ids) == {"ok"}


def test_a_manual_assignment_of_only_fenced_brokers_is_refused_and_the_leader_is_unfenced():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.fence(1, 2)
    (refused,) = cluster.create_topics(
        {"name": "t", "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}]}
    )
    assert refused["error_code"] == Errors.INVALID_REPLICA_ASSIGNMENT
    assert "are fenced or in controlled shutdown" in refused["error_message"]
    cluster.create_topic("u", [[1, 3, 2]])
    p = cluster.partition("u", 0)
    assert p.replicas == (1, 3, 2) and p.isr == (3,) and p.leader == 3


def test_names_that_collide_on_dot_and_underscore_are_refused():
    cluster = Cluster()
    cluster.register(1)
    cluster.create_topic("a.b")
    (answer,) = cluster.create_topics({"name": "a_b"})
    assert answer["error_code"] == Errors.INVALID_TOPIC_EXCEPTION
    assert answer["error_message"] == "Topic 'a_b' collides with existing topic: a.b"


def test_topic_configs_are_written_and_described():
    cluster = Cluster()
    cluster.register(1)
    (answer,) = cluster.create_topics(
        {
            "name": "c",
            "configs": [
                {"name": "cleanup.policy", "value": "compact"},
                {"name": "unclean.leader.election.enable", "value": "true"},
            ],
        }
    )
    assert cluster.image.configs[("TOPIC", "c")] == {
        "cleanup.policy": "compact",
        "unclean.leader.election.enable": "true",
    }
    described = {c["name"]: c for c in answer["configs"]}
    assert described["cleanup.policy"]["value"] == "compact"
    assert described["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert described["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert config_view(MetadataDelta(cluster.image)).unclean_election_enabled("c")
    cluster.assert_replays()


# --- placement -------------------------------------------------------------------------------


def test_placement_spreads_racks_and_leaders():
    cluster = Cluster()
    for broker_id in range(9):
        cluster.register(broker_id, rack=f"rack-{broker_id % 3}")
    cluster.create_topic("spread", num_partitions=30, replication_factor=3)
    leaders: Counter[int] = Counter()
    racks = {b.broker_id: b.rack for b in cluster.image.all_brokers()}
    for index in range(30):
        p = cluster.partition("spread", index)
        assert len(set(p.replicas)) == 3
        assert len({racks[r] for r in p.replicas}) == 3  # one replica per rack
        leaders[p.leader] += 1
    assert set(leaders) == set(range(9))
    assert max(leaders.values()) - min(leaders.values()) <= 1


def test_placement_prefers_unfenced_brokers_and_never_makes_a_fenced_one_leader():
    cluster = Cluster()
    cluster.register(1, 2, 3, 4)
    cluster.fence(3, 4)
    cluster.create_topic("two", num_partitions=8, replication_factor=2)
    for index in range(8):
        assert set(cluster.partition("two", index).replicas) == {1, 2}
    cluster.create_topic("three", num_partitions=8, replication_factor=3)
    for index in range(8):
        p = cluster.partition("three", index)
        assert p.leader in (1, 2) and len(set(p.replicas)) == 3
        assert set(p.isr) == {1, 2} & set(p.replicas)


def test_brokers_in_controlled_shutdown_get_no_replicas():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("held", [[3]])
    response = cluster.heartbeat(3, want_shut_down=True)
    assert response["should_shut_down"] is False  # it leads: controlled shutdown first
    cluster.create_topic("fresh", num_partitions=6, replication_factor=2)
    for index in range(6):
        assert 3 not in cluster.partition("fresh", index).replicas


def test_rack_alternation_and_placement_edge_cases():
    brokers = [
        UsableBroker(1, "a", False),
        UsableBroker(2, "a", False),
        UsableBroker(3, "b", False),
        UsableBroker(4, None, False),
    ]
    assert [b.broker_id for b in rack_alternated(brokers)] == [4, 1, 3, 2]
    placed = place_replicas(
        brokers, seed_name="x", first_partition=0, num_partitions=4, replication_factor=4
    )
    assert all(sorted(replicas) == [1, 2, 3, 4] for replicas in placed)
    assert sorted(r[0] for r in placed) == [1, 2, 3, 4]  # four partitions, four leaders
    again = place_replicas(
        brokers, seed_name="x", first_partition=0, num_partitions=4, replication_factor=4
    )
    assert again == placed  # deterministic


# --- DeleteTopics and CreatePartitions -------------------------------------------------------


def test_delete_topics_by_name_and_id():
    cluster = Cluster()
    cluster.register(1, 2)
    foo = cluster.create_topic("foo", [[1, 2], [2, 1]], configs={"retention.ms": "1000"})
    cluster.create_topic("bar", [[1]])
    unknown_id = str(uuid.uuid4())
    response = cluster.run(
        "DeleteTopics",
        {
            "topic_names": ["foo", "nope"],
            "topics": [{"topic_id": unknown_id}, {"name": "bar"}, {"name": "bar"}],
        },
    )
    errors = [
        (r["name"], r["topic_id"], Errors(r["error_code"]).name) for r in response["responses"]
    ]
    assert errors == [
        ("foo", foo, "NONE"),
        ("nope", None, "UNKNOWN_TOPIC_OR_PARTITION"),
        (None, unknown_id, "UNKNOWN_TOPIC_ID"),
        ("bar", None, "INVALID_REQUEST"),
        ("bar", None, "INVALID_REQUEST"),
    ]
    assert set(cluster.image.topic_ids) == {"bar"}
    assert not any(tp[0] == foo for tp in cluster.image.partitions)
    assert ("TOPIC", "foo") not in cluster.image.configs
    for index in (cluster.image.replica_index, cluster.image.isr_index, cluster.image.leader_index):
        assert not any(tp[0] == foo for tps in index.values() for tp in tps)

    again = cluster.create_topic("foo", [[2]])
    assert again != foo and cluster.partition("foo", 0).replicas == (2,)
    response = cluster.run("DeleteTopics", {"topics": [{"topic_id": again}]})
    assert response["responses"][0]["name"] == "foo" and response["responses"][0]["error_code"] == 0
    cluster.assert_replays()


def test_a_topic_named_by_name_and_by_id_is_deleted_once():
    cluster = Cluster()
    cluster.register(1)
    foo = cluster.create_topic("foo", [[1]])
    response = cluster.run("DeleteTopics", {"topic_names": ["foo"], "topics": [{"topic_id": foo}]})
    assert [(r["name"], r["topic_id"], r["error_code"]) for r in response["responses"]] == [
        ("foo", foo, 0),
        ("foo", foo, 0),
    ]
    assert [type(r).__name__ for r in cluster.records].count("RemoveTopicRecord") == 1
    assert not cluster.image.topics
    cluster.assert_replays()


def test_create_partitions():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2], [2, 3]])

    def create(topic: dict[str, Any], *, validate_only: bool = False) -> tuple[str, str | None]:
        response = cluster.run(
            "CreatePartitions", {"topics": [topic], "validate_only": validate_only}
        )
        result = response["results"][0]
        return Errors(result["error_code"]).name, result["error_message"]

    end = cluster.offset
    assert create({"name": "foo", "count": 5}, validate_only=True) == ("NONE", None)
    assert cluster.offset == end
    assert create({"name": "nope", "count": 3}) == (
        "UNKNOWN_TOPIC_OR_PARTITION",
        "This server does not host this topic-partition.",
    )
    assert create({"name": "foo", "count": 1}) == (
        "INVALID_PARTITIONS",
        "The topic foo currently has 2 partition(s); 1 would not be an increase.",
    )
    assert create({"name": "foo", "count": 2}) == (
        "INVALID_PARTITIONS",
        "Topic already has 2 partition(s).",
    )
    error, message = create({"name": "foo", "count": 4, "assignments": [{"broker_ids": [1, 3]}]})
    assert error == "INVALID_REPLICA_ASSIGNMENT" and "only 1 assignment(s)" in str(message)
    error, _ = create({"name": "foo", "count": 3, "assignments": [{"broker_ids": [1]}]})
    assert error == "INVALID_REPLICA_ASSIGNMENT"  # the topic's replication factor is 2
    error, _ = create({"name": "foo", "count": 3, "assignments": [{"broker_ids": [1, 7]}]})
    assert error == "INVALID_REPLICA_ASSIGNMENT"
    assert cluster.offset == end

    assert create({"name": "foo", "count": 3, "assignments": [{"broker_ids": [3, 1]}]}) == (
        "NONE",
        None,
    )
    assert cluster.partition("foo", 2).replicas == (3, 1)
    assert create({"name": "foo", "count": 6}) == ("NONE", None)
    for index in range(3, 6):
        p = cluster.partition("foo", index)
        assert len(set(p.replicas)) == 2 and p.isr == p.replicas
    assert cluster.image.topics[cluster.image.topic_ids["foo"]].partition_count == 6
    response = cluster.run(
        "CreatePartitions", {"topics": [{"name": "foo", "count": 7}, {"name": "foo", "count": 8}]}
    )
    assert [r["error_code"] for r in response["results"]] == [Errors.INVALID_REQUEST] * 2
    cluster.assert_replays()


# --- fencing, controlled shutdown, unfencing -------------------------------------------------


def test_fence_multiple_brokers_kafkas_scenario():
    cluster = Cluster()
    cluster.register(0, 1, 2, 3, 4)
    cluster.create_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    cluster.fence(2, 3)
    p0, p1, p2 = (cluster.partition("foo", i) for i in range(3))
    assert (p0.replicas, p0.isr, p0.leader) == ((1, 2, 3), (1,), 1)
    assert (p1.replicas, p1.isr, p1.leader) == ((2, 3, 4), (4,), 4)
    assert (p2.replicas, p2.isr) == ((0, 2, 1), (0, 1)) and p2.leader != 2
    # Partition 1 changed leader twice (2 -> 3 -> 4); partition 0 kept its leader.
    assert (p0.leader_epoch, p0.partition_epoch) == (0, 2)
    assert (p1.leader_epoch, p1.partition_epoch) == (2, 2)
    cluster.assert_replays()


def test_fencing_everyone_leaves_the_last_replica_in_the_isr_without_a_leader():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2]])
    cluster.fence(1)
    assert (cluster.partition("foo", 0).isr, cluster.partition("foo", 0).leader) == ((2,), 2)
    cluster.fence(2)
    p = cluster.partition("foo", 0)
    assert (p.isr, p.leader, p.leader_epoch) == ((2,), NO_LEADER, 2)
    # Broker 1 left the ISR: it may not lead (no unclean election by default).
    cluster.unfence(1)
    assert cluster.partition("foo", 0).leader == NO_LEADER
    # Broker 2, the last ISR member, comes back and leads again.
    cluster.unfence(2)
    p = cluster.partition("foo", 0)
    assert (p.isr, p.leader, p.leader_epoch) == ((2,), 2, 3)
    cluster.assert_replays()


def test_unclean_leader_election_only_where_the_topic_enables_it():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("clean", [[1, 2]])
    cluster.create_topic("dirty", [[1, 2]], configs={"unclean.leader.election.enable": "true"})
    cluster.fence(2)
    cluster.fence(1)  # both partitions: ISR [1], leaderless
    assert cluster.partition("clean", 0).leader == NO_LEADER
    assert cluster.partition("dirty", 0).leader == NO_LEADER
    delta_before = cluster.offset
    cluster.unfence(2)
    clean, dirty = cluster.partition("clean", 0), cluster.partition("dirty", 0)
    assert (clean.leader, clean.isr) == (NO_LEADER, (1,))
    assert (dirty.leader, dirty.isr) == (2, (2,))  # unclean: the ISR becomes the new leader
    assert cluster.offset > delta_before
    cluster.assert_replays()


def test_the_cluster_default_enables_unclean_election_unless_the_topic_says_no():
    cluster = Cluster(unclean_leader_election_enable="true")
    cluster.register(1, 2)
    cluster.create_topic("inherits", [[1, 2]])
    cluster.create_topic("refuses", [[1, 2]], configs={"unclean.leader.election.enable": "false"})
    cluster.fence(2, 1)
    cluster.unfence(2)
    inherits, refuses = cluster.partition("inherits", 0), cluster.partition("refuses", 0)
    assert (inherits.leader, inherits.isr) == (2, (2,))
    assert (refuses.leader, refuses.isr) == (NO_LEADER, (1,))


def test_unclean_election_on_fencing_when_the_topic_enables_it():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("dirty", [[1, 2, 3]], configs={"unclean.leader.election.enable": "true"})
    cluster.alter_partition("dirty", 0, [1])  # 2 and 3 fell behind
    cluster.fence(1)
    p = cluster.partition("dirty", 0)
    assert (p.leader, p.isr) == (2, (2,))


def test_controlled_shutdown_moves_leadership_then_shuts_down():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2, 3], [2, 1, 3], [1, 3, 2]])
    first = cluster.heartbeat(1, want_shut_down=True)
    assert first["should_shut_down"] is False and first["is_fenced"] is False
    broker = cluster.image.broker(1)
    assert broker is not None and broker.in_controlled_shutdown
    for index in range(3):
        p = cluster.partition("foo", index)
        assert 1 not in p.isr and p.leader != 1 and p.leader in p.isr
    assert cluster.partition("foo", 0).leader == 2
    assert cluster.partition("foo", 2).leader == 3
    # Everyone has seen the shutdown: the next heartbeat lets it go.
    cluster.heartbeat(2)
    cluster.heartbeat(3)
    final = cluster.heartbeat(1, want_shut_down=True)
    assert final["should_shut_down"] is True
    broker = cluster.image.broker(1)
    assert broker is not None and broker.fenced
    # A broker in controlled shutdown may not lead nor join an ISR.
    cluster.assert_replays()


def test_a_broker_without_leaderships_shuts_down_at_once():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2]])
    response = cluster.heartbeat(2, want_shut_down=True)
    assert response["should_shut_down"] is True
    assert cluster.partition("foo", 0).isr == (1,)


def test_session_expiry_fences_and_moves_leadership():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2]])
    cluster.sessions[1] = BrokerSession(cluster.now - 60_000, 0)
    response = cluster.run("FenceStaleBrokers", {})
    assert response["fenced_brokers"] == [1]
    p = cluster.partition("foo", 0)
    assert (p.leader, p.isr) == (2, (2,))


def test_unregistering_a_broker_moves_its_leaderships():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2]])
    assert cluster.run("UnregisterBroker", {"broker_id": 1})["error_code"] == 0
    p = cluster.partition("foo", 0)
    assert (p.leader, p.isr) == (2, (2,))
    cluster.assert_replays()


def test_a_new_incarnation_leaves_every_isr_and_forgets_its_offline_replicas():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2, 3]])
    cluster.replicas_offline(3, {"foo": [0]})
    assert cluster.partition("foo", 0).offline_replicas == (3,)
    cluster.sessions.pop(3)  # its session lapsed: a new incarnation may register
    cluster.sessions.pop(1)
    cluster.register(3, unfence=False)
    cluster.register(1, unfence=False)
    p = cluster.partition("foo", 0)
    assert p.offline_replicas == () and p.isr == (2,) and p.leader == 2
    cluster.assert_replays()


# --- AlterPartition ------------------------------------------------------------------------


def test_shrink_and_expand_isr():
    cluster = Cluster()
    cluster.register(0, 1, 2)
    cluster.create_topic("foo", [[0, 1, 2]])
    shrunk = cluster.alter_partition("foo", 0, [0, 1])
    assert shrunk == {
        "partition_index": 0,
        "error_code": 0,
        "leader_id": 0,
        "leader_epoch": 0,
        "isr": [0, 1],
        "partition_epoch": 1,
    }
    expanded = cluster.alter_partition("foo", 0, [0, 1, 2])
    assert expanded["error_code"] == 0 and expanded["isr"] == [0, 1, 2]
    p = cluster.partition("foo", 0)
    assert (p.isr, p.leader_epoch, p.partition_epoch) == ((0, 1, 2), 0, 2)
    # The same ISR again: accepted, nothing written.
    end = cluster.offset
    same = cluster.alter_partition("foo", 0, [0, 1, 2])
    assert same["error_code"] == 0 and same["partition_epoch"] == 2 and cluster.offset == end
    cluster.assert_replays()


def test_invalid_alter_partition_requests_in_kafkas_order():
    cluster = Cluster()
    cluster.register(0, 1, 2, 3)
    cluster.create_topic("foo", [[0, 1, 2]])
    cluster.alter_partition("foo", 0, [0, 1, 2])  # no-op, epochs stay 0 / 0
    cluster.fence(3)
    cluster.fence(1)  # ISR [0, 2], partition epoch 1
    p = cluster.partition("foo", 0)
    assert (p.isr, p.leader_epoch, p.partition_epoch) == ((0, 2), 0, 1)
    end = cluster.offset

    def error(new_isr: list[int], **kwargs: int) -> str:
        return Errors(cluster.alter_partition("foo", 0, new_isr, **kwargs)["error_code"]).name

    assert error([0], broker_id=2) == "INVALID_REQUEST"  # not the leader
    assert error([0], leader_epoch=5) == "NOT_CONTROLLER"  # leader epoch from the future
    assert error([0], partition_epoch=5) == "NOT_CONTROLLER"  # partition epoch from the future
    # Kafka checks both future epochs before anything else.
    assert error([0], leader_epoch=-1, partition_epoch=5) == "NOT_CONTROLLER"
    assert error([0], broker_id=2, partition_epoch=5) == "NOT_CONTROLLER"
    assert error([0], leader_epoch=-1) == "FENCED_LEADER_EPOCH"
    assert error([0], broker_id=2, leader_epoch=-1) == "FENCED_LEADER_EPOCH"  # before leader
    assert error([0], partition_epoch=0) == "INVALID_UPDATE_VERSION"
    assert error([5, 0], partition_epoch=0) == "INVALID_UPDATE_VERSION"  # before the ISR
    assert error([0, 3]) == "INVALID_REQUEST"  # 3 is not a replica
    assert error([2]) == "INVALID_REQUEST"  # the leader must stay in the ISR
    assert error([]) == "INVALID_REQUEST"
    assert error([0, 2, 2]) == "INVALID_REQUEST"  # duplicates
    assert error([0, 1]) == "INELIGIBLE_REPLICA"  # 1 is fenced
    assert cluster.alter_partition("nope", 0, [0], broker_id=0)["error_code"] == (
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    unknown_index = cluster.run(
        "AlterPartition",
        {
            "broker_id": 0,
            "broker_epoch": cluster.epoch(0),
            "topics": [
                {
                    "topic_name": "foo",
                    "partitions": [
                        {
                            "partition_index": 7,
                            "leader_epoch": 0,
                            "partition_epoch": 1,
                            "new_isr": [0],
                        }
                    ],
                }
            ],
        },
    )
    assert unknown_index["topics"][0]["partitions"][0]["error_code"] == (
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    stale = cluster.alter_partition("foo", 0, [0], broker_epoch=12345)
    assert stale["error_code"] == Errors.STALE_BROKER_EPOCH and "topics" not in stale
    assert cluster.offset == end  # nothing was written


def test_a_replica_in_controlled_shutdown_is_ineligible_for_the_isr():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2, 3]])
    cluster.create_topic("led", [[3]])
    cluster.heartbeat(3, want_shut_down=True)
    assert cluster.partition("foo", 0).isr == (1, 2)
    answer = cluster.alter_partition("foo", 0, [1, 2, 3])
    assert answer["error_code"] == Errors.INELIGIBLE_REPLICA


def test_a_leader_in_controlled_shutdown_is_itself_an_ineligible_isr_member():
    # A state no event of this controller produces (leadership moves when a broker starts its
    # controlled shutdown), built from records. Kafka checks every member of the new ISR, the
    # sending leader included, so the answer is INELIGIBLE_REPLICA and nothing changes.
    records: list[Record] = [
        RegisterBrokerRecord(
            broker_id=b,
            incarnation_id=str(uuid.uuid4()),
            broker_epoch=b - 1,
            listeners=(Listener("PLAINTEXT", "h", 9092, "PLAINTEXT"),),
            rack=None,
            pod="broker",
            log_dirs=(),
            fenced=False,
        )
        for b in (1, 2)
    ]
    records += [
        TopicRecord(name="foo", topic_id="foo-id"),
        PartitionRecord(partition_id=0, topic_id="foo-id", replicas=(1, 2), isr=(1, 2), leader=1),
        BrokerRegistrationChangeRecord(
            broker_id=1,
            broker_epoch=0,
            in_controlled_shutdown=ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN,
        ),
    ]
    cluster = Cluster()
    cluster.image = replay_log(CLUSTER, records)
    cluster.records = list(records)
    before = len(cluster.records)
    answer = cluster.alter_partition("foo", 0, [1, 2])
    assert answer["error_code"] == Errors.INELIGIBLE_REPLICA
    assert len(cluster.records) == before
    assert cluster.partition("foo", 0).leader == 1
    cluster.assert_replays()


def test_alter_partition_batch_sees_its_own_earlier_changes():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2, 3], [1, 2, 3]])
    item = {"leader_epoch": 0, "partition_epoch": 0}
    response = cluster.run(
        "AlterPartition",
        {
            "broker_id": 1,
            "broker_epoch": cluster.epoch(1),
            "topics": [
                {
                    "topic_name": "foo",
                    "partitions": [
                        {"partition_index": 0, "new_isr": [1, 2], **item},
                        {"partition_index": 0, "new_isr": [1], **item},  # stale by then
                        {"partition_index": 1, "new_isr": [1, 3], **item},
                    ],
                }
            ],
        },
    )
    codes = [p["error_code"] for p in response["topics"][0]["partitions"]]
    assert codes == [0, Errors.INVALID_UPDATE_VERSION, 0]
    assert cluster.partition("foo", 0).isr == (1, 2) and cluster.partition("foo", 1).isr == (1, 3)


# --- AlterReplicaState (KIP-589) -------------------------------------------------------------


def test_alter_replica_state_validation():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2], [2, 3]])
    view = MetadataDelta(cluster.image)
    request = {
        "broker_id": 1,
        "broker_epoch": cluster.epoch(1),
        "new_state": 1,
        "topics": [{"name": "foo", "partitions": [0, 1, 9]}, {"name": "nope", "partitions": [0]}],
    }
    response = validate_alter_replica_state(view, request)
    assert response["error_code"] == 0
    assert [
        [(p["partition_index"], Errors(p["error_code"]).name) for p in t["partitions"]]
        for t in response["topics"]
    ] == [
        [(0, "NONE"), (1, "NOT_LEADER_OR_FOLLOWER"), (9, "UNKNOWN_TOPIC_OR_PARTITION")],
        [(0, "UNKNOWN_TOPIC_OR_PARTITION")],
    ]
    with pytest.raises(Exception) as stale:
        validate_alter_replica_state(view, {**request, "broker_epoch": 999})
    assert getattr(stale.value, "error", None) is Errors.STALE_BROKER_EPOCH
    with pytest.raises(Exception) as unknown_event:
        validate_alter_replica_state(view, {**request, "new_state": 2})
    assert getattr(unknown_event.value, "error", None) is Errors.UNKNOWN_EVENT_TYPE


def test_offline_replicas_leave_the_isr_and_lose_leadership():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2, 3], [2, 1, 3]])
    cluster.create_topic("solo", [[1]])
    cluster.create_topic("other", [[3, 2]])
    response = cluster.replicas_offline(1, {"foo": [0, 1], "solo": [0], "other": [0]})
    assert response["offline_replicas"] == 3  # "other" has no replica on broker 1
    p0, p1 = cluster.partition("foo", 0), cluster.partition("foo", 1)
    solo, other = cluster.partition("solo", 0), cluster.partition("other", 0)
    assert (p0.leader, p0.isr, p0.offline_replicas, p0.leader_epoch) == (2, (2, 3), (1,), 1)
    assert (p1.leader, p1.isr, p1.offline_replicas, p1.leader_epoch) == (2, (2, 3), (1,), 0)
    assert (solo.leader, solo.isr, solo.offline_replicas) == (NO_LEADER, (1,), (1,))
    assert other.offline_replicas == () and other.partition_epoch == 0
    # The same report again changes nothing.
    end = cluster.offset
    assert cluster.replicas_offline(1, {"foo": [0, 1], "solo": [0]})["offline_replicas"] == 0
    assert cluster.offset == end
    # An offline replica cannot lead, even by an unclean election.
    assert election_errors(cluster.elect("UNCLEAN", {"solo": [0]})) == {
        ("solo", 0): "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    }
    # The leader takes a recovered replica back into the ISR: it is online again.
    back = cluster.alter_partition("foo", 0, [2, 3, 1])
    assert back["error_code"] == 0
    assert cluster.partition("foo", 0).offline_replicas == ()
    cluster.assert_replays()


def test_offline_replica_unclean_only_with_the_topic_config():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("clean", [[1, 2]])
    cluster.create_topic("dirty", [[1, 2]], configs={"unclean.leader.election.enable": "true"})
    cluster.alter_partition("clean", 0, [1])
    cluster.alter_partition("dirty", 0, [1])
    cluster.replicas_offline(1, {"clean": [0], "dirty": [0]})
    assert cluster.partition("clean", 0).leader == NO_LEADER
    dirty = cluster.partition("dirty", 0)
    assert (dirty.leader, dirty.isr, dirty.offline_replicas) == (2, (2,), (1,))


def test_a_report_from_an_older_registration_is_a_no_op():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2]])
    old_epoch = cluster.epoch(1)
    cluster.sessions.pop(1)
    cluster.register(1)  # a new incarnation, a new epoch
    assert cluster.epoch(1) != old_epoch
    cluster.alter_partition("foo", 0, [2, 1])
    end = cluster.offset
    response = cluster.replicas_offline(1, {"foo": [0]}, broker_epoch=old_epoch)
    assert response["error_code"] == Errors.STALE_BROKER_EPOCH
    assert cluster.offset == end and cluster.partition("foo", 0).offline_replicas == ()


# --- ElectLeaders and the rebalance ---------------------------------------------------------


def test_elect_preferred_leaders_kafkas_scenario():
    cluster = Cluster()
    cluster.register(0, 1, 2, 3, 4)
    cluster.fence(0)
    cluster.create_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    cluster.heartbeat(1, want_shut_down=True)  # in controlled shutdown: leads nothing
    request = {"foo": [0, 1, 2], "bar": [0, 1]}
    end = cluster.offset
    first = cluster.elect("PREFERRED", request)
    assert election_errors(first) == {
        ("foo", 0): "PREFERRED_LEADER_NOT_AVAILABLE",
        ("foo", 1): "ELECTION_NOT_NEEDED",
        ("foo", 2): "PREFERRED_LEADER_NOT_AVAILABLE",
        ("bar", 0): "UNKNOWN_TOPIC_OR_PARTITION",
        ("bar", 1): "UNKNOWN_TOPIC_OR_PARTITION",
    }
    assert cluster.offset == end

    # Brokers 0 and 1 come back (1 as a new incarnation) and the leader takes them back in.
    cluster.sessions.pop(1)
    cluster.register(1, unfence=False)
    cluster.unfence(0, 1)
    assert cluster.alter_partition("foo", 0, [2, 3, 1])["error_code"] == 0
    assert cluster.alter_partition("foo", 2, [2, 1, 0])["error_code"] == 0
    second = cluster.elect("PREFERRED", request)
    assert election_errors(second)[("foo", 0)] == "NONE"
    assert election_errors(second)[("foo", 2)] == "NONE"
    assert election_errors(second)[("foo", 1)] == "ELECTION_NOT_NEEDED"
    assert cluster.partition("foo", 0).leader == 1 and cluster.partition("foo", 2).leader == 0
    # Every partition: those needing no election are left out of the answer.
    assert cluster.elect("PREFERRED", None)["replica_election_results"] == []
    cluster.assert_replays()


def test_elect_unclean_leaders():
    cluster = Cluster()
    cluster.register(1, 2, 3)
    cluster.create_topic("foo", [[1, 2], [1, 3], [2, 3]])
    cluster.alter_partition("foo", 0, [1])
    cluster.alter_partition("foo", 1, [1])
    cluster.fence(1)  # foo-0 and foo-1 leaderless with ISR [1]
    cluster.fence(3)  # foo-1 has no live replica at all
    answer = cluster.elect("UNCLEAN", {"foo": [0, 1, 2, 7]})
    assert election_errors(answer) == {
        ("foo", 0): "NONE",
        ("foo", 1): "ELIGIBLE_LEADERS_NOT_AVAILABLE",
        ("foo", 2): "ELECTION_NOT_NEEDED",
        ("foo", 7): "UNKNOWN_TOPIC_OR_PARTITION",
    }
    p0 = cluster.partition("foo", 0)
    assert (p0.leader, p0.isr, p0.leader_epoch) == (2, (2,), 2)
    assert cluster.partition("foo", 1).leader == NO_LEADER
    # A preferred election never elects uncleanly.
    preferred = cluster.elect("PREFERRED", {"foo": [1]})
    assert election_errors(preferred) == {("foo", 1): "PREFERRED_LEADER_NOT_AVAILABLE"}
    cluster.assert_replays()


def test_elect_all_partitions_unclean_reports_only_those_needing_an_election():
    cluster = Cluster()
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2], [2, 1]])
    cluster.alter_partition("foo", 0, [1])
    cluster.fence(1)
    answer = cluster.elect("UNCLEAN", None)
    assert election_errors(answer) == {("foo", 0): "NONE"}


def test_rebalance_leaders_kafkas_scenario():
    cluster = Cluster()
    cluster.register(0, 1, 2, 3, 4)
    cluster.fence(0, 1)
    cluster.create_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    cluster.unfence(1)
    assert cluster.alter_partition("foo", 0, [2, 3, 1])["error_code"] == 0
    response = cluster.run("RebalanceLeaders", {})
    assert response == {"error_code": 0, "elections": 1, "enabled": True}
    assert cluster.partition("foo", 0).leader == 1
    assert cluster.partition("foo", 2).leader == 2  # 0 is fenced and outside the ISR
    cluster.unfence(0)
    assert cluster.alter_partition("foo", 2, [2, 1, 0])["error_code"] == 0
    assert cluster.run("RebalanceLeaders", {})["elections"] == 1
    assert cluster.partition("foo", 2).leader == 0
    end = cluster.offset
    assert cluster.run("RebalanceLeaders", {})["elections"] == 0 and cluster.offset == end


def test_rebalance_respects_the_switch_and_the_limit():
    cluster = Cluster(auto_leader_rebalance_enable="false")
    cluster.register(1, 2)
    cluster.create_topic("foo", [[1, 2], [1, 2], [1, 2]])
    cluster.fence(1)
    cluster.unfence(1)
    for index in range(3):
        cluster.alter_partition("foo", index, [2, 1])
    assert cluster.run("RebalanceLeaders", {}) == {
        "error_code": 0,
        "elections": 0,
        "enabled": False,
    }
    cluster.static.clear()
    changes, response = rebalance_leaders(
        MetadataDelta(cluster.image), configs=config_view(MetadataDelta(cluster.image)), limit=2
    )
    assert response["elections"] == 2 and len(changes.records) == 2


def test_elect_leaders_core_function_reports_unknown_topics_per_partition():
    cluster = Cluster()
    _, response = elect_leaders(
        MetadataDelta(cluster.image),
        election_type="PREFERRED",
        topic_partitions=[{"topic": "ghost", "partitions": [0, 1]}],
        configs=config_view(MetadataDelta(cluster.image)),
    )
    assert election_errors(response) == {
        ("ghost", 0): "UNKNOWN_TOPIC_OR_PARTITION",
        ("ghost", 1): "UNKNOWN_TOPIC_OR_PARTITION",
    }


# --- placement, as a property ----------------------------------------------------------------


@st.composite
def usable_brokers(draw: st.DrawFn) -> list[UsableBroker]:
    ids = draw(st.lists(st.integers(0, 50), min_size=1, max_size=12, unique=True))
    racks = draw(
        st.sampled_from([[None], ["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]])
    )
    return [
        UsableBroker(broker_id, draw(st.sampled_from(racks)), draw(st.booleans()))
        for broker_id in ids
    ]


@settings(max_examples=300, deadline=None)
@given(
    brokers=usable_brokers(),
    rf=st.integers(1, 5),
    partitions=st.integers(1, 40),
    first=st.integers(0, 30),
    seed_name=st.text(min_size=1, max_size=8),
)
def test_placement_properties(brokers, rf, partitions, first, seed_name):
    unfenced = [b for b in brokers if not b.fenced]
    if not unfenced or rf > len(brokers):
        with pytest.raises(ApiError) as refused:
            place_replicas(
                brokers,
                seed_name=seed_name,
                first_partition=first,
                num_partitions=partitions,
                replication_factor=rf,
            )
        assert refused.value.error is Errors.INVALID_REPLICATION_FACTOR
        return
    placed = place_replicas(
        brokers,
        seed_name=seed_name,
        first_partition=first,
        num_partitions=partitions,
        replication_factor=rf,
    )
    by_id = {b.broker_id: b for b in brokers}
    unfenced_ids = {b.broker_id for b in unfenced}
    racks_available = len({b.rack for b in unfenced})
    leaders: Counter[int] = Counter({b: 0 for b in unfenced_ids})
    assert len(placed) == partitions
    for replicas in placed:
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= set(by_id)
        assert replicas[0] in unfenced_ids  # the leader is always unfenced
        leaders[replicas[0]] += 1
        if len(unfenced) >= rf:
            assert set(replicas) <= unfenced_ids
            # One replica per rack while racks last.
            assert len({by_id[r].rack for r in replicas}) == min(rf, racks_available)
        else:
            assert set(replicas[: len(unfenced)]) == unfenced_ids  # unfenced brokers first
    # Balanced leaders, for a fresh topic and for the partitions a topic gains.
    assert max(leaders.values()) - min(leaders.values()) <= 1


@st.composite
def broker_set(draw: st.DrawFn) -> list[tuple[int, str | None, str, bool]]:
    """Brokers to register: id, rack, pod (some canary) and whether each stays fenced."""
    ids = draw(st.lists(st.integers(1, 30), min_size=1, max_size=9, unique=True))
    racks = draw(st.sampled_from([[None], ["a", "b"], ["a", "b", "c"]]))
    return [
        (
            broker_id,
            draw(st.sampled_from(racks)),
            draw(st.sampled_from(["broker", "broker", CANARY_BROKER_POD])),
            draw(st.booleans()),
        )
        for broker_id in ids
    ]


@settings(max_examples=60, deadline=None)
@given(
    brokers=broker_set(),
    topics=st.lists(
        st.tuples(st.integers(1, 6), st.integers(1, 3), st.sampled_from([None, "25", "50"])),
        min_size=1,
        max_size=6,
    ),
)
def test_topics_placed_in_one_request_are_placed_as_each_alone(brokers, topics):
    """A request of many topics reads the brokers once for all of them: each topic still gets
    the replicas, leaders and canary flags a request of its own gives it."""

    def cluster() -> Cluster:
        built = Cluster()
        for broker_id, rack, pod, fenced in brokers:
            built.register(broker_id, rack=rack, pod=pod, unfence=not fenced)
        return built

    def request(index: int, partitions: int, rf: int, percent: str | None) -> dict[str, Any]:
        configs = (
            [] if percent is None else [{"name": "percent.canary.partition", "value": percent}]
        )
        return {
            "name": f"topic-{index}",
            "num_partitions": partitions,
            "replication_factor": rf,
            "assignments": [],
            "configs": configs,
        }

    def placed(built: Cluster, answers: list[Any]) -> list[Any]:
        rows = []
        for answer in answers:
            rows.append((answer["name"], answer["error_code"], answer.get("error_message")))
            if answer["error_code"] == 0:
                for index in range(answer["num_partitions"]):
                    p = built.partition(answer["name"], index)
                    rows.append((p.replicas, p.isr, p.leader, p.is_canary, p.canary_isolated))
        return rows

    together = cluster()
    answers = together.create_topics(*(request(i, *t) for i, t in enumerate(topics)))
    alone = cluster()
    each = [alone.create_topics(request(i, *t))[0] for i, t in enumerate(topics)]
    assert placed(together, answers) == placed(alone, each)
