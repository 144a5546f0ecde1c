"""Replica and partition state machines, as Kafka's (ZooKeeper-era) ReplicaStateMachine and
PartitionStateMachine: transition tables, and the walks topic creation and deletion take.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from controlplane.controller.errors import InvalidStateTransition
from controlplane.controller.image import BrokerRegistration, PartitionRegistration


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
