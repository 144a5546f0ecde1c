"""Leader elections: Kafka's ElectLeaders (PREFERRED or UNCLEAN) and the controller's periodic
move of leadership back to preferred replicas (maybeBalancePartitionLeaders).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from controlplane.controller.canary.rules import canary_brokers_of, preferred_leader
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.errors import Errors
from controlplane.controller.image import MetadataDelta, TopicInfo, TopicPartition
from controlplane.controller.partitions.changes import (
    AcceptableLeader,
    Election,
    PartitionChanges,
    acceptable_leaders,
    change_partition,
)
from controlplane.controller.records import NO_LEADER

MAX_ELECTIONS_PER_REBALANCE = 1000  # Kafka's maxElectionsPerImbalance


def elect_leaders(
    view: MetadataDelta,
    *,
    election_type: str,
    topic_partitions: Sequence[Mapping[str, Any]] | None,
    configs: ConfigView,
) -> tuple[PartitionChanges, dict[str, Any]]:
    """Kafka's ElectLeaders: PREFERRED or UNCLEAN, per partition; null means every partition
    (and then partitions that need no election are left out of the answer)."""
    changes = PartitionChanges(view)
    acceptable = acceptable_leaders(view)
    canary = canary_brokers_of(view)
    elect_all = topic_partitions is None
    requested = _all_partitions(view) if topic_partitions is None else topic_partitions
    results = []
    for topic in requested:
        topic_id = view.topic_id(topic["topic"])
        partition_results = []
        for index in topic["partitions"]:
            tp = (topic_id or "", index)
            error, message = _elect_one(changes, tp, election_type, acceptable, canary)
            if elect_all and error is Errors.ELECTION_NOT_NEEDED:
                continue
            partition_results.append(
                {"partition_id": index, "error_code": int(error), "error_message": message}
            )
        if partition_results or not elect_all:
            results.append({"topic": topic["topic"], "partition_result": partition_results})
    return changes, {"error_code": 0, "error_message": None, "replica_election_results": results}


def _all_partitions(view: MetadataDelta) -> list[dict[str, Any]]:
    return [
        {"topic": topic.name, "partitions": list(range(topic.partition_count))}
        for topic in sorted(view.all_topics(), key=lambda t: t.name)
    ]


def _elect_one(
    changes: PartitionChanges,
    tp: TopicPartition,
    election_type: str,
    acceptable: AcceptableLeader,
    canary: Collection[int],
) -> tuple[Errors, str | None]:
    partition = changes.get(tp)
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    preferred = election_type == "PREFERRED"
    wanted = preferred_leader(partition, canary)
    if preferred and partition.leader == wanted:
        return Errors.ELECTION_NOT_NEEDED, "Leader is already the preferred replica."
    if not preferred and partition.has_leader():
        return Errors.ELECTION_NOT_NEEDED, "The partition has a leader."
    election = Election.PREFERRED if preferred else Election.UNCLEAN
    record = change_partition(
        tp, partition, acceptable=acceptable, election=election, canary_brokers=canary
    )
    if record is None or record.leader in (NO_LEADER,) or not changes.add(record):
        if preferred:
            return (
                Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                f"The preferred leader {wanted} is not available.",
            )
        return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No replica can become the leader."
    return Errors.NONE, None


def rebalance_topics(view: MetadataDelta, canary: Collection[int]) -> list[TopicInfo]:
    """The topics where a leader may not be the preferred replica, by name: those with a
    partition not led by its first replica or, while canary brokers are registered, with one
    that has a replica on one (a canary partition's preferred leader is its first canary
    replica). Found from the image's groups, so a balanced cluster of a million partitions is
    not read whole at every leader.imbalance.check.interval.seconds (Kafka keeps its
    imbalancedPartitions); within them, the rebalance reads partitions as a scan would."""
    topics = (view.topic(topic_id) for topic_id in view.topics_off_first_replica(canary))
    return sorted((t for t in topics if t is not None), key=lambda t: t.name)


def rebalance_leaders(
    view: MetadataDelta, *, configs: ConfigView, limit: int = MAX_ELECTIONS_PER_REBALANCE
) -> tuple[PartitionChanges, dict[str, Any]]:
    """Move leadership back to preferred replicas that are in the ISR and can lead (Kafka's
    maybeBalancePartitionLeaders); nothing when auto.leader.rebalance.enable is false."""
    changes = PartitionChanges(view)
    if not configs.broker_value("auto.leader.rebalance.enable"):
        return changes, {"error_code": 0, "elections": 0, "enabled": False}
    acceptable = acceptable_leaders(view)
    canary = canary_brokers_of(view)
    for topic in rebalance_topics(view, canary):
        for tp, partition in view.topic_partitions(topic):
            if changes.elections >= limit:
                break
            preferred = preferred_leader(partition, canary)
            if (
                partition.leader == preferred
                or preferred not in partition.isr
                or preferred in partition.offline_replicas
                or not acceptable(preferred)
            ):
                continue
            changes.add(
                change_partition(
                    tp,
                    partition,
                    acceptable=acceptable,
                    election=Election.PREFERRED,
                    canary_brokers=canary,
                )
            )
    return changes, {"error_code": 0, "elections": changes.elections, "enabled": True}
