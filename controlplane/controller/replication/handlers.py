"""The controller's topic and partition RPCs: CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders, AlterPartition, AlterReplicaState, AssignReplicasToDirs,
AlterPartitionReassignments, and the controller's own RebalanceLeaders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv, Handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.partitions.changes import PartitionChanges
from controlplane.controller.records import Record
from controlplane.controller.replication.alter_partition import alter_partition
from controlplane.controller.replication.alter_replica_state import (
    alter_replica_state,
    failed_log_dir_record,
)
from controlplane.controller.replication.assign_dirs import assign_replicas_to_dirs
from controlplane.controller.replication.elections import elect_leaders, rebalance_leaders
from controlplane.controller.replication.reassign import alter_partition_reassignments
from controlplane.controller.replication.topics import (
    create_partitions,
    create_topics,
    delete_topics,
)
from controlplane.controller.result import ControllerResult


def _partition_changes(answer: tuple[PartitionChanges, dict[str, Any]]) -> ControllerResult:
    changes, response = answer
    return ControllerResult(list(changes.records), response)


def _create_topics(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = create_topics(
        view, payload, configs=env.configs(view), new_topic_id=env.new_uuid
    )
    return ControllerResult(records, response)


def _delete_topics(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = delete_topics(view, payload)
    return ControllerResult(records, response)


def _create_partitions(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = create_partitions(view, payload, configs=env.configs(view))
    return ControllerResult(records, response)


def _elect_leaders(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(
        elect_leaders(
            view,
            election_type=payload["election_type"],
            topic_partitions=payload.get("topic_partitions"),
            configs=env.configs(view),
        )
    )


def _alter_partition(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(
        alter_partition(
            view,
            broker_id=payload["broker_id"],
            broker_epoch=payload["broker_epoch"],
            topics=payload["topics"],
            configs=env.configs(view),
        )
    )


def _alter_replica_state(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    changes, response = alter_replica_state(view, payload, configs=env.configs(view))
    failed_dir = failed_log_dir_record(view, payload)
    records: list[Record] = list(changes.records)
    return ControllerResult(records if failed_dir is None else [failed_dir, *records], response)


def _assign_replicas_to_dirs(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return assign_replicas_to_dirs(view, payload, configs=env.configs(view))


def _alter_partition_reassignments(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(
        alter_partition_reassignments(view, payload, configs=env.configs(view))
    )


def _rebalance_leaders(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(rebalance_leaders(view, configs=env.configs(view)))


HANDLERS: Mapping[str, Handler] = {
    "CreateTopics": _create_topics,
    "DeleteTopics": _delete_topics,
    "CreatePartitions": _create_partitions,
    "ElectLeaders": _elect_leaders,
    "AlterPartition": _alter_partition,
    "AlterReplicaState": _alter_replica_state,
    "AssignReplicasToDirs": _assign_replicas_to_dirs,
    "RebalanceLeaders": _rebalance_leaders,
    "AlterPartitionReassignments": _alter_partition_reassignments,
}
# Retries of these are naturally idempotent: their outcome follows from state alone.
STATE_IDEMPOTENT_APIS = frozenset({"RebalanceLeaders"})
