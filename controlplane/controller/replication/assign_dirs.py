"""AssignReplicasToDirs (KIP-858): a broker with several log dirs says which dir holds each of
its replicas, as Kafka's ReplicationControlManager.handleAssignReplicasToDirs takes it.

Each assignment is a PartitionChangeRecord carrying every replica's dir (the others keep theirs,
or their broker's default dir when none was assigned yet); one that changes nothing writes no
record. A replica assigned to a dir its broker reports offline (its heartbeats' offline log
dirs) leaves the ISR and its leadership as AlterReplicaState's offline replicas do (KIP-589:
the same state machine), in the same record. Per partition: UNKNOWN_TOPIC_ID, then
UNKNOWN_TOPIC_OR_PARTITION, then NOT_LEADER_OR_FOLLOWER for a partition the broker holds no
replica of; the whole request: STALE_BROKER_EPOCH, and UNSUPPORTED_VERSION below the
metadata.version that has directories.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from controlplane.controller.brokers.control import require_broker_epoch
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.features import DIRECTORY_ASSIGNMENT_METADATA_VERSION
from controlplane.controller.image import (
    BrokerRegistration,
    MetadataDelta,
    PartitionRegistration,
    TopicPartition,
)
from controlplane.controller.partitions.changes import PartitionChanges
from controlplane.controller.partitions.leadership import ReplicaOffline
from controlplane.controller.records import PartitionChangeRecord, default_log_dir
from controlplane.controller.result import ControllerResult

logger = logging.getLogger("controlplane.controller")


def assign_replicas_to_dirs(
    view: MetadataDelta, request: Mapping[str, Any], *, configs: ConfigView
) -> ControllerResult:
    """`request`: `{broker_id, broker_epoch, directories: [{id, topics: [{topic_id,
    partitions: [{partition_index}]}]}]}` (Kafka's fields, ids as UUID strings)."""
    level = view.metadata_version
    if level is not None and level < DIRECTORY_ASSIGNMENT_METADATA_VERSION:
        raise ApiError(Errors.UNSUPPORTED_VERSION, "Directory assignment is not supported yet.")
    broker = require_broker_epoch(view, request["broker_id"], request["broker_epoch"])
    assigner = _Assigner(view, broker, configs)
    answered = [
        {
            "id": directory["id"],
            "topics": [assigner.topic(directory["id"], topic) for topic in directory["topics"]],
        }
        for directory in request["directories"]
    ]
    return ControllerResult(
        list(assigner.changes.records), {"error_code": 0, "directories": answered}
    )


class _Assigner:
    def __init__(self, view: MetadataDelta, broker: BrokerRegistration, configs: ConfigView):
        self.view = view
        self.broker = broker
        self.changes = PartitionChanges(view)  # a partition named twice sees its first change
        self.online = frozenset(broker.log_dirs) - frozenset(broker.offline_log_dirs)
        self.offline = ReplicaOffline(view, broker.broker_id, configs)

    def topic(self, dir_id: str, topic: Mapping[str, Any]) -> dict[str, Any]:
        topic_id = topic["topic_id"]
        known = self.view.topic(topic_id) is not None
        if not known:
            logger.warning(
                "AssignReplicasToDirs from broker %d names unknown topic id %s",
                self.broker.broker_id,
                topic_id,
            )
        return {
            "topic_id": topic_id,
            "partitions": [
                {
                    "partition_index": p["partition_index"],
                    "error_code": int(
                        self.partition(dir_id, (topic_id, p["partition_index"]))
                        if known
                        else Errors.UNKNOWN_TOPIC_ID
                    ),
                }
                for p in topic["partitions"]
            ],
        }

    def partition(self, dir_id: str, tp: TopicPartition) -> Errors:
        partition = self.changes.get(tp)
        broker_id = self.broker.broker_id
        if partition is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if broker_id not in partition.replicas:
            return Errors.NOT_LEADER_OR_FOLLOWER
        directories = self._directories(partition)
        directories[partition.replicas.index(broker_id)] = dir_id
        record = None
        if tuple(directories) != partition.directories:
            record = PartitionChangeRecord(
                partition_id=tp[1], topic_id=tp[0], directories=tuple(directories)
            )
        if dir_id not in self.online:
            record = self._offline(tp, partition, record)
        self.changes.add(record)
        return Errors.NONE

    def _directories(self, partition: PartitionRegistration) -> list[str]:
        """Every replica's dir as it stands: assigned, or its broker's default."""
        if partition.directories:
            return list(partition.directories)
        return [default_log_dir(self._log_dirs(b)) for b in partition.replicas]

    def _log_dirs(self, broker_id: int) -> tuple[str, ...] | None:
        broker = self.view.broker(broker_id)
        return None if broker is None else broker.log_dirs

    def _offline(
        self,
        tp: TopicPartition,
        partition: PartitionRegistration,
        dirs: PartitionChangeRecord | None,
    ) -> PartitionChangeRecord | None:
        """The broker's replica on an offline dir: out of the ISR and its leadership, offline
        (as AlterReplicaState marks it), in the record that assigns the dir."""
        moved = self.offline.change(tp, partition)
        if moved is None:
            return dirs
        if dirs is None:
            return moved
        return dataclasses.replace(moved, directories=dirs.directories)
