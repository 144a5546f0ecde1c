"""AlterPartition: the leader of a partition changes its ISR (Kafka's
ReplicationControlManager.alterPartition), validated in Kafka's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controller.brokers.control import require_broker_epoch
from controlplane.controller.canary.rules import canary_brokers_of
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta, PartitionRegistration
from controlplane.controller.partitions.changes import (
    AcceptableLeader,
    PartitionChanges,
    acceptable_leaders,
    change_partition,
)
from controlplane.controller.partitions.leadership import UncleanPolicy
from controlplane.controller.records import NO_LEADER

RECOVERED = 0  # Kafka's LeaderRecoveryState.RECOVERED (RECOVERING is 1)


def alter_partition(
    view: MetadataDelta,
    *,
    broker_id: int,
    broker_epoch: int,
    topics: Sequence[Mapping[str, Any]],
    configs: ConfigView,
) -> tuple[PartitionChanges, dict[str, Any]]:
    """Kafka's AlterPartition: the leader changes a partition's ISR, validated in Kafka's order."""
    require_broker_epoch(view, broker_id, broker_epoch)
    changes = PartitionChanges(view)
    acceptable = acceptable_leaders(view)
    policy = UncleanPolicy(view, configs)
    canary = canary_brokers_of(view)
    answered = []
    for topic in topics:
        topic_id = view.topic_id(topic["topic_name"])
        results = []
        for item in topic["partitions"]:
            index = item["partition_index"]
            if topic_id is None:
                results.append(_partition_error(index, Errors.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            tp = (topic_id, index)
            partition = changes.get(tp)
            error = _validate_alter_partition(view, broker_id, partition, item, acceptable)
            if error is not None:
                results.append(_partition_error(index, error))
                continue
            assert partition is not None
            new_isr = tuple(item["new_isr"])
            # A replica the leader takes back into the ISR has caught up: its log dir works
            # again, so it is no longer offline (KIP-589's "mark online after recovery").
            offline = tuple(r for r in partition.offline_replicas if r not in new_isr)
            changes.add(
                change_partition(
                    tp,
                    partition,
                    acceptable=acceptable,
                    target_isr=new_isr,
                    target_offline=offline,
                    election=policy.election(topic_id),
                    canary_brokers=canary,
                )
            )
            after = changes.get(tp)
            assert after is not None
            error_code = Errors.NEW_LEADER_ELECTED if after.leader != broker_id else Errors.NONE
            results.append(
                {
                    "partition_index": index,
                    "error_code": int(error_code),
                    "leader_id": after.leader,
                    "leader_epoch": after.leader_epoch,
                    "isr": list(after.isr),
                    "partition_epoch": after.partition_epoch,
                }
            )
        answered.append({"topic_name": topic["topic_name"], "partitions": results})
    return changes, {"error_code": 0, "error_message": None, "topics": answered}


def _validate_alter_partition(
    view: MetadataDelta,
    broker_id: int,
    partition: PartitionRegistration | None,
    item: Mapping[str, Any],
    acceptable: AcceptableLeader,
) -> Errors | None:
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    # Kafka's order (validateAlterPartitionData): epochs from the future first, both of them.
    if item["leader_epoch"] > partition.leader_epoch:
        # A leader or partition epoch from the future: this controller is likely stale.
        return Errors.NOT_CONTROLLER
    if item["partition_epoch"] > partition.partition_epoch:
        return Errors.NOT_CONTROLLER
    if item["leader_epoch"] < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return Errors.INVALID_REQUEST
    if item["partition_epoch"] < partition.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    new_isr = item["new_isr"]
    if (
        not new_isr
        or len(set(new_isr)) != len(new_isr)
        or any(r not in partition.replicas for r in new_isr)
        or partition.leader not in new_isr
    ):
        return Errors.INVALID_REQUEST
    # Every partition here is RECOVERED (no election leaves a leader recovering): a leader may
    # not report it RECOVERING (Kafka: INVALID_REQUEST, the state cannot go back).
    if item.get("leader_recovery_state", RECOVERED) != RECOVERED:
        return Errors.INVALID_REQUEST
    # Kafka checks every member of the new ISR (not only the ones being added).
    if any(not _eligible_for_isr(view, r) for r in new_isr):
        return Errors.INELIGIBLE_REPLICA
    return None


def _eligible_for_isr(view: MetadataDelta, broker_id: int) -> bool:
    broker = view.broker(broker_id)
    return broker is not None and not broker.fenced and not broker.in_controlled_shutdown


def _partition_error(index: int, error: Errors) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": int(error),
        "leader_id": NO_LEADER,
        "leader_epoch": -1,
        "isr": [],
        "partition_epoch": -1,
    }
