"""AlterReplicaState (KIP-589): a broker reports replicas whose log dir failed; they become
OfflineReplica, leave the ISR, and what they led gets a new leader.

The API answers the synchronous checks at once (`validate_alter_replica_state`); the controller
applies the change later (`alter_replica_state`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controlplane.controller.brokers.control import require_broker_epoch
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.errors import ApiError, Errors, InvalidStateTransition
from controlplane.controller.image import MetadataDelta, TopicPartition
from controlplane.controller.partitions.changes import PartitionChanges
from controlplane.controller.partitions.leadership import ReplicaOffline
from controlplane.controller.partitions.states import (
    ReplicaState,
    check_replica_transition,
    replica_state,
)
from controlplane.controller.records import LOST_DIRECTORY, BrokerRegistrationChangeRecord

logger = logging.getLogger("controlplane.controller")

OFFLINE_EVENT = 1  # KIP-589: the only AlterReplicaState event type


def validate_alter_replica_state(view: MetadataDelta, request: Mapping[str, Any]) -> dict[str, Any]:
    """The synchronous part: broker epoch, event type, and per partition that it exists and the
    broker holds a replica of it. Answers the response the broker gets at once."""
    require_broker_epoch(view, request["broker_id"], request["broker_epoch"])
    if request["new_state"] != OFFLINE_EVENT:
        raise ApiError(
            Errors.UNKNOWN_EVENT_TYPE,
            f"Unknown replica event type {request['new_state']}; only 1 (offline) is defined.",
        )
    topics = []
    for topic in request["topics"]:
        topic_id = view.topic_id(topic["name"])
        results = []
        for index in topic["partitions"]:
            partition = None if topic_id is None else view.partition((topic_id, index))
            if partition is None:
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            elif request["broker_id"] not in partition.replicas:
                error = Errors.NOT_LEADER_OR_FOLLOWER
            else:
                error = Errors.NONE
            results.append({"partition_index": index, "error_code": int(error)})
        topics.append({"name": topic["name"], "partitions": results})
    return {"error_code": 0, "error_message": None, "topics": topics}


def alter_replica_state(
    view: MetadataDelta, request: Mapping[str, Any], *, configs: ConfigView
) -> tuple[PartitionChanges, dict[str, Any]]:
    """The asynchronous part: every named replica becomes OfflineReplica, leaves the ISR, and
    what it led gets a new leader. Gated by broker epoch: a broker that re-registered since
    sending it makes the request a no-op."""
    changes = PartitionChanges(view)
    broker_id = request["broker_id"]
    broker = view.broker(broker_id)
    if broker is None or broker.epoch != request["broker_epoch"]:
        logger.info(
            "AlterReplicaState from broker %s epoch %s ignored: the broker re-registered since",
            broker_id,
            request["broker_epoch"],
        )
        return changes, {
            "error_code": int(Errors.STALE_BROKER_EPOCH),
            "error_message": "The broker re-registered since sending the request; ignored.",
            "offline_replicas": 0,
        }
    offline = ReplicaOffline(view, broker_id, configs)
    marked = 0
    for tp in _named_partitions(view, request):
        partition = changes.get(tp)
        try:
            check_replica_transition(
                replica_state(partition, broker_id, broker), ReplicaState.OFFLINE
            )
        except InvalidStateTransition as refused:
            logger.warning("AlterReplicaState for %s refused: %s", tp, refused.message)
            continue
        assert partition is not None
        if broker_id in partition.offline_replicas:
            continue
        marked += 1
        changes.add(offline.change(tp, partition))
    return changes, {
        "error_code": 0,
        "error_message": None,
        "broker_id": broker_id,
        "offline_replicas": marked,
    }


def failed_log_dir_record(
    view: MetadataDelta, request: Mapping[str, Any]
) -> BrokerRegistrationChangeRecord | None:
    """The broker's failed dir, offline from this report on (CONTRACT: offline log dirs are
    reported by heartbeats or AlterReplicaState): on its registration, where its heartbeats
    keep the list, so a heartbeat that no longer names it (the dir repaired) or a new
    incarnation brings it back online, as for a dir a heartbeat named. A report naming no dir
    stands for Kafka's DirectoryId.LOST. None when the dir is offline already (no record for a
    no-op) or the broker re-registered since the report."""
    broker = view.broker(request["broker_id"])
    if broker is None or broker.epoch != request["broker_epoch"]:
        return None
    failed = request.get("log_dir") or LOST_DIRECTORY
    if failed in broker.offline_log_dirs:
        return None
    return BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id,
        broker_epoch=broker.epoch,
        offline_log_dirs=tuple(sorted({*broker.offline_log_dirs, failed})),
    )


def _named_partitions(view: MetadataDelta, request: Mapping[str, Any]) -> list[TopicPartition]:
    named: list[TopicPartition] = []
    for topic in request["topics"]:
        topic_id = view.topic_id(topic["name"])
        if topic_id is not None:
            named.extend((topic_id, index) for index in topic["partitions"])
    return named
