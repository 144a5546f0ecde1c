"""Where leadership moves: broker fencing, unfencing, controlled shutdown and re-registration;
AlterPartition; AlterReplicaState (KIP-589); leader elections and the preferred-leader rebalance.

Pure, like the rest of the core: each function reads the metadata view and answers records (in a
PartitionChanges) and a response. References: Kafka's ReplicationControlManager
(generateLeaderAndIsrUpdates, alterPartition, electLeaders, maybeBalancePartitionLeaders).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controlplane.controller.configs import ConfigView
from controlplane.controller.errors import ApiError, Errors, InvalidStateTransition
from controlplane.controller.image import MetadataDelta, PartitionRegistration, TopicPartition
from controlplane.controller.partitions import (
    AcceptableLeader,
    Election,
    PartitionChanges,
    ReplicaState,
    acceptable_leaders,
    change_partition,
    check_replica_transition,
    replica_state,
)
from controlplane.controller.records import NO_LEADER

logger = logging.getLogger("controlplane.controller")

OFFLINE_EVENT = 1  # KIP-589: the only AlterReplicaState event type
MAX_ELECTIONS_PER_REBALANCE = 1000  # Kafka's maxElectionsPerImbalance


def config_view(view: MetadataDelta, static: Mapping[str, str] | None = None) -> ConfigView:
    return ConfigView(view.config, static or {})


class _UncleanPolicy:
    """unclean.leader.election.enable per topic id, read once per handler."""

    def __init__(self, view: MetadataDelta, configs: ConfigView) -> None:
        self.view = view
        self.configs = configs
        self._by_topic: dict[str, bool] = {}

    def election(self, topic_id: str) -> Election:
        enabled = self._by_topic.get(topic_id)
        if enabled is None:
            topic = self.view.topic(topic_id)
            enabled = topic is not None and self.configs.unclean_election_enabled(topic.name)
            self._by_topic[topic_id] = enabled
        return Election.UNCLEAN if enabled else Election.ONLINE


def _sorted(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(tps)


def remove_from_isrs(
    changes: PartitionChanges,
    broker_ids: Sequence[int],
    *,
    configs: ConfigView,
    clear_offline: bool = False,
) -> None:
    """Take brokers out of every ISR and re-elect what they led (fencing, controlled shutdown,
    unregistration, a new incarnation). `clear_offline` forgets their offline replicas too: a
    restarted broker reports its log dirs afresh (KIP-589)."""
    view = changes.view
    acceptable = acceptable_leaders(view, excluded=broker_ids)
    policy = _UncleanPolicy(view, configs)
    leaving = frozenset(broker_ids)
    touched: set[TopicPartition] = set()
    for broker_id in broker_ids:
        touched |= view.partitions_with_isr_member(broker_id)
        if clear_offline:
            touched |= {
                tp
                for tp in view.partitions_with_replica(broker_id)
                if broker_id in (view.partition(tp) or _EMPTY).offline_replicas
            }
    for tp in _sorted(touched):
        partition = changes.get(tp)
        if partition is None:
            continue
        offline = (
            tuple(r for r in partition.offline_replicas if r not in leaving)
            if clear_offline
            else None
        )
        changes.add(
            change_partition(
                tp,
                partition,
                acceptable=acceptable,
                target_isr=tuple(r for r in partition.isr if r not in leaving),
                target_offline=offline,
                election=policy.election(tp[0]),
            )
        )


def elect_leaderless(
    changes: PartitionChanges, *, configs: ConfigView, unfenced: Sequence[int] = ()
) -> None:
    """Partitions left without a leader get one when a replica can lead again (an unfenced
    broker, as Kafka's handleBrokerUnfenced)."""
    view = changes.view
    acceptable = acceptable_leaders(view)
    newly: set[int] = set(unfenced)

    def can_lead(broker_id: int) -> bool:
        return broker_id in newly or acceptable(broker_id)

    policy = _UncleanPolicy(view, configs)
    for tp in _sorted(view.partitions_led_by(NO_LEADER)):
        partition = changes.get(tp)
        if partition is None or partition.has_leader():
            continue
        if newly and not newly.intersection(partition.replicas):
            continue
        changes.add(
            change_partition(tp, partition, acceptable=can_lead, election=policy.election(tp[0]))
        )


_EMPTY = PartitionRegistration(replicas=(), isr=(), leader=NO_LEADER)


# --- AlterPartition ------------------------------------------------------------------------


def alter_partition(
    view: MetadataDelta,
    *,
    broker_id: int,
    broker_epoch: int,
    topics: Sequence[Mapping[str, Any]],
    configs: ConfigView,
) -> tuple[PartitionChanges, dict[str, Any]]:
    """Kafka's AlterPartition: the leader changes a partition's ISR, validated in Kafka's order."""
    from controlplane.controller.brokers import require_broker_epoch

    require_broker_epoch(view, broker_id, broker_epoch)
    changes = PartitionChanges(view)
    acceptable = acceptable_leaders(view)
    policy = _UncleanPolicy(view, configs)
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


# --- AlterReplicaState (KIP-589) ----------------------------------------------------------


def validate_alter_replica_state(view: MetadataDelta, request: Mapping[str, Any]) -> dict[str, Any]:
    """The synchronous part: broker epoch, event type, and per partition that it exists and the
    broker holds a replica of it. Answers the response the broker gets at once."""
    from controlplane.controller.brokers import require_broker_epoch

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
    acceptable = acceptable_leaders(view)
    policy = _UncleanPolicy(view, configs)
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
        changes.add(
            change_partition(
                tp,
                partition,
                acceptable=lambda r: r != broker_id and acceptable(r),
                target_isr=tuple(r for r in partition.isr if r != broker_id),
                target_offline=tuple(sorted((*partition.offline_replicas, broker_id))),
                election=policy.election(tp[0]),
            )
        )
    return changes, {
        "error_code": 0,
        "error_message": None,
        "broker_id": broker_id,
        "offline_replicas": marked,
    }


def _named_partitions(view: MetadataDelta, request: Mapping[str, Any]) -> list[TopicPartition]:
    named: list[TopicPartition] = []
    for topic in request["topics"]:
        topic_id = view.topic_id(topic["name"])
        if topic_id is not None:
            named.extend((topic_id, index) for index in topic["partitions"])
    return named


# --- elections -----------------------------------------------------------------------------


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
    elect_all = topic_partitions is None
    requested = _all_partitions(view) if topic_partitions is None else topic_partitions
    results = []
    for topic in requested:
        topic_id = view.topic_id(topic["topic"])
        partition_results = []
        for index in topic["partitions"]:
            tp = (topic_id or "", index)
            error, message = _elect_one(changes, tp, election_type, acceptable)
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
) -> tuple[Errors, str | None]:
    partition = changes.get(tp)
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    preferred = election_type == "PREFERRED"
    if preferred and partition.leader == partition.preferred_leader:
        return Errors.ELECTION_NOT_NEEDED, "Leader is already the preferred replica."
    if not preferred and partition.has_leader():
        return Errors.ELECTION_NOT_NEEDED, "The partition has a leader."
    election = Election.PREFERRED if preferred else Election.UNCLEAN
    record = change_partition(tp, partition, acceptable=acceptable, election=election)
    if record is None or record.leader in (NO_LEADER,) or not changes.add(record):
        if preferred:
            return (
                Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                f"The preferred leader {partition.preferred_leader} is not available.",
            )
        return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No replica can become the leader."
    return Errors.NONE, None


def rebalance_leaders(
    view: MetadataDelta, *, configs: ConfigView, limit: int = MAX_ELECTIONS_PER_REBALANCE
) -> tuple[PartitionChanges, dict[str, Any]]:
    """Move leadership back to preferred replicas that are in the ISR and can lead (Kafka's
    maybeBalancePartitionLeaders); nothing when auto.leader.rebalance.enable is false."""
    changes = PartitionChanges(view)
    if not configs.broker_value("auto.leader.rebalance.enable"):
        return changes, {"error_code": 0, "elections": 0, "enabled": False}
    acceptable = acceptable_leaders(view)
    for topic in sorted(view.all_topics(), key=lambda t: t.name):
        for tp, partition in view.topic_partitions(topic):
            if changes.elections >= limit:
                break
            preferred = partition.preferred_leader
            if (
                partition.leader == preferred
                or preferred not in partition.isr
                or preferred in partition.offline_replicas
                or not acceptable(preferred)
            ):
                continue
            changes.add(
                change_partition(tp, partition, acceptable=acceptable, election=Election.PREFERRED)
            )
    return changes, {"error_code": 0, "elections": changes.elections, "enabled": True}
