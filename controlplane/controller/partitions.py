"""Replica and partition state machines, leader election, and partition changes as records.

The state machines are Kafka's (ZooKeeper-era ReplicaStateMachine / PartitionStateMachine), kept
as transition tables. The change builder follows Kafka's PartitionChangeBuilder: given a partition
and the ISR and offline replicas it should have, it elects a leader if the current one is no longer
valid and answers the one PartitionChangeRecord that gets there, or None when nothing changes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping

from controlplane.controller.errors import InvalidStateTransition
from controlplane.controller.image import (
    BrokerRegistration,
    MetadataDelta,
    PartitionRegistration,
    TopicPartition,
)
from controlplane.controller.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord


class ReplicaState(enum.StrEnum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


class PartitionState(enum.StrEnum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"


R = ReplicaState
# Kafka's ReplicaState.validPreviousStates, turned around: target states allowed from each state.
REPLICA_TRANSITIONS: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    R.NON_EXISTENT: frozenset({R.NEW}),
    R.NEW: frozenset({R.ONLINE, R.OFFLINE}),
    R.ONLINE: frozenset({R.ONLINE, R.OFFLINE}),
    R.OFFLINE: frozenset({R.ONLINE, R.OFFLINE, R.DELETION_STARTED, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.DELETION_SUCCESSFUL, R.DELETION_INELIGIBLE}),
    R.DELETION_SUCCESSFUL: frozenset({R.NON_EXISTENT}),
    R.DELETION_INELIGIBLE: frozenset({R.ONLINE, R.OFFLINE}),
}

P = PartitionState
PARTITION_TRANSITIONS: Mapping[PartitionState, frozenset[PartitionState]] = {
    P.NON_EXISTENT: frozenset({P.NEW}),
    P.NEW: frozenset({P.ONLINE, P.OFFLINE}),
    P.ONLINE: frozenset({P.ONLINE, P.OFFLINE}),
    P.OFFLINE: frozenset({P.ONLINE, P.OFFLINE, P.NON_EXISTENT}),
}

# The walks topic deletion takes, every step checked against the tables.
REPLICA_DELETION_PATH = (R.OFFLINE, R.DELETION_STARTED, R.DELETION_SUCCESSFUL, R.NON_EXISTENT)
PARTITION_DELETION_PATH = (P.OFFLINE, P.NON_EXISTENT)
PARTITION_CREATION_PATH = (P.NEW, P.ONLINE)
REPLICA_CREATION_PATH = (R.NEW, R.ONLINE)


def check_replica_transition(current: ReplicaState, target: ReplicaState) -> None:
    """Same state is a no-op; a transition the table does not list is refused."""
    if current != target and target not in REPLICA_TRANSITIONS[current]:
        raise InvalidStateTransition("replica", current.value, target.value)


def check_partition_transition(current: PartitionState, target: PartitionState) -> None:
    if current != target and target not in PARTITION_TRANSITIONS[current]:
        raise InvalidStateTransition("partition", current.value, target.value)


def walk_replica(current: ReplicaState, path: Iterable[ReplicaState]) -> ReplicaState:
    for target in path:
        check_replica_transition(current, target)
        current = target
    return current


def walk_partition(current: PartitionState, path: Iterable[PartitionState]) -> PartitionState:
    for target in path:
        check_partition_transition(current, target)
        current = target
    return current


def partition_state(partition: PartitionRegistration | None) -> PartitionState:
    if partition is None:
        return P.NON_EXISTENT
    return P.ONLINE if partition.has_leader() else P.OFFLINE


def replica_state(
    partition: PartitionRegistration | None, replica: int, broker: BrokerRegistration | None
) -> ReplicaState:
    """A replica is online when it is assigned, its broker is unfenced and its log dir is fine."""
    if partition is None or replica not in partition.replicas:
        return R.NON_EXISTENT
    if replica in partition.offline_replicas or broker is None or broker.fenced:
        return R.OFFLINE
    return R.ONLINE


class Election(enum.Enum):
    """Kafka's PartitionChangeBuilder.Election."""

    PREFERRED = "PREFERRED"
    ONLINE = "ONLINE"
    UNCLEAN = "UNCLEAN"


AcceptableLeader = Callable[[int], bool]


def acceptable_leaders(view: MetadataDelta, excluded: Iterable[int] = ()) -> AcceptableLeader:
    """Kafka's isActive: registered, unfenced and not shutting down; `excluded` brokers are
    about to be fenced or shut down by the same event."""
    excluded_set = frozenset(excluded)
    cache: dict[int, bool] = {}

    def acceptable(broker_id: int) -> bool:
        known = cache.get(broker_id)
        if known is None:
            broker = view.broker(broker_id)
            known = (
                broker is not None
                and not broker.fenced
                and not broker.in_controlled_shutdown
                and broker_id not in excluded_set
            )
            cache[broker_id] = known
        return known

    return acceptable


def change_partition(
    tp: TopicPartition,
    partition: PartitionRegistration,
    *,
    acceptable: AcceptableLeader,
    target_isr: tuple[int, ...] | None = None,
    target_offline: tuple[int, ...] | None = None,
    election: Election = Election.ONLINE,
) -> PartitionChangeRecord | None:
    """The record that moves `partition` to the target ISR / offline replicas with a valid
    leader, or None when nothing would change.

    The ISR never becomes empty: when the last member would leave, it stays and the partition
    goes leaderless (leader -1), as Kafka's controller does.
    """
    isr = partition.isr if target_isr is None else target_isr
    if not isr:
        isr = tuple(r for r in partition.isr if r == partition.leader) or partition.isr[-1:]
    offline = partition.offline_replicas if target_offline is None else target_offline

    def valid_leader(replica: int) -> bool:
        return replica in isr and replica not in offline and acceptable(replica)

    leader, unclean = _elect(partition, valid_leader, acceptable, offline, election)
    if unclean:
        isr = (leader,)
    record = PartitionChangeRecord(
        partition_id=tp[1],
        topic_id=tp[0],
        isr=isr if isr != partition.isr else None,
        leader=leader if leader != partition.leader else NO_LEADER_CHANGE,
        offline_replicas=offline if offline != partition.offline_replicas else None,
    )
    if record.isr is None and record.leader == NO_LEADER_CHANGE and record.offline_replicas is None:
        return None
    return record


def _elect(
    partition: PartitionRegistration,
    valid_leader: Callable[[int], bool],
    acceptable: AcceptableLeader,
    offline: tuple[int, ...],
    election: Election,
) -> tuple[int, bool]:
    """(leader, unclean): Kafka's electLeader, preferred / any in-ISR / unclean."""
    if election is Election.PREFERRED and partition.replicas:
        preferred = partition.replicas[0]
        if valid_leader(preferred):
            return preferred, False
    if partition.leader != NO_LEADER and valid_leader(partition.leader):
        return partition.leader, False
    for replica in partition.replicas:
        if valid_leader(replica):
            return replica, False
    if election is Election.UNCLEAN:
        for replica in partition.replicas:
            if replica not in offline and acceptable(replica):
                return replica, True
    return NO_LEADER, False


class PartitionChanges:
    """Partition changes a handler builds up; later changes see earlier ones (Kafka builds its
    records the same way, merging each change into the partition it has in hand)."""

    def __init__(self, view: MetadataDelta) -> None:
        self.view = view
        self.records: list[PartitionChangeRecord] = []
        self.elections = 0
        self.unclean_elections = 0
        self._current: dict[TopicPartition, PartitionRegistration] = {}

    def get(self, tp: TopicPartition) -> PartitionRegistration | None:
        current = self._current.get(tp)
        return current if current is not None else self.view.partition(tp)

    def add(self, record: PartitionChangeRecord | None) -> bool:
        if record is None:
            return False
        tp = (record.topic_id, record.partition_id)
        before = self.get(tp)
        assert before is not None
        after = before.merge(record)
        if record.leader not in (NO_LEADER_CHANGE, NO_LEADER):
            self.elections += 1
            if record.isr == (record.leader,) and record.leader not in before.isr:
                self.unclean_elections += 1
        self._current[tp] = after
        self.records.append(record)
        return True
