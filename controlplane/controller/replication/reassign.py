"""AlterPartitionReassignments (KIP-455): move a partition's replicas, replace or cancel a move,
as Kafka's ReplicationControlManager.alterPartitionReassignments does.

A target starts a move with one PartitionChangeRecord: the replicas become the target followed
by the replicas leaving, with `adding_replicas` and `removing_replicas` (`partitions.
reassignment`). The new replicas catch up and their leader takes them into the ISR
(AlterPartition); the change that gives the ISR every target replica completes the move
(`partitions.changes.change_partition`, whatever the change: AlterPartition, a fencing, an
election). The state is in the log, so a standby that takes over finishes what it finds there.

A null target cancels: back to the original replicas, the ISR less the replicas being added
(an unclean election when only they were in sync, refused unless the topic allows one). A new
target replaces a move in progress. Errors per partition, Kafka's: an unknown topic or
partition UNKNOWN_TOPIC_OR_PARTITION; an empty target, a broker twice, an unregistered broker
or a fenced one the move would add INVALID_REPLICA_ASSIGNMENT; a cancel of no move
NO_REASSIGNMENT_IN_PROGRESS; a changed replica count when the request does not allow it
(v1, KIP-860) INVALID_REPLICATION_FACTOR. More partitions changed than one operation may write
(Kafka's max records per user op) refuses the request as a whole, POLICY_VIOLATION.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controller.canary.rules import canary_brokers_of
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import (
    BrokerRegistration,
    MetadataDelta,
    PartitionRegistration,
    TopicPartition,
)
from controlplane.controller.partitions.changes import (
    Election,
    PartitionChanges,
    acceptable_leaders,
    change_partition,
)
from controlplane.controller.partitions.leadership import UncleanPolicy
from controlplane.controller.partitions.reassignment import Assignment, moving_to, reverted
from controlplane.controller.records import default_log_dir

MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's QuorumController bound on one operation's records


class _Reassigner:
    """One request's partitions, each changed in turn (a partition named twice sees its first
    change)."""

    def __init__(self, view: MetadataDelta, configs: ConfigView, allow_rf_change: bool) -> None:
        self.view = view
        self.changes = PartitionChanges(view)
        self.acceptable = acceptable_leaders(view)
        self.policy = UncleanPolicy(view, configs)
        self.canary = canary_brokers_of(view)
        self.allow_rf_change = allow_rf_change
        # Each broker looked up once: a request names the same few brokers for every partition.
        self._brokers: dict[int, BrokerRegistration | None] = {}

    def topic(self, topic: Mapping[str, Any]) -> dict[str, Any]:
        name = topic["name"]
        topic_id = self.view.topic_id(name)
        results = []
        for item in topic["partitions"]:
            index = item["partition_index"]
            try:
                self.partition(name, topic_id, index, item.get("replicas"))
                error: ApiError | None = None
            except ApiError as refused:
                error = refused
            results.append(
                {
                    "partition_index": index,
                    "error_code": int(error.error) if error else 0,
                    "error_message": error.message if error else None,
                }
            )
        return {"name": name, "partitions": results}

    def partition(
        self, name: str, topic_id: str | None, index: int, replicas: Sequence[int] | None
    ) -> None:
        if topic_id is None:
            raise ApiError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
            )
        tp = (topic_id, index)
        partition = self.changes.get(tp)
        if partition is None:
            raise ApiError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}."
            )
        if replicas is None:
            self._cancel(name, tp, partition)
        else:
            self._move(tp, partition, tuple(replicas))

    def _move(
        self, tp: TopicPartition, partition: PartitionRegistration, target: tuple[int, ...]
    ) -> None:
        self._check_target(partition, target)
        if not self.allow_rf_change and len(partition.original_replicas) != len(target):
            raise ApiError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {len(partition.original_replicas)} "
                f"to {len(target)}",
            )
        self.changes.add(
            change_partition(
                tp,
                partition,
                acceptable=self.acceptable,
                election=self.policy.election(tp[0]),
                canary_brokers=self.canary,
                target=_replacing(partition, moving_to(partition.replicas, target)),
                default_dir=self._default_dir,
            )
        )

    def _check_target(self, partition: PartitionRegistration, target: tuple[int, ...]) -> None:
        """Kafka's validateManualPartitionAssignment, in its order (by broker id); and a broker
        the move would add must be unfenced: a move onto a broker that cannot fetch would
        only stall."""
        if not target:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for broker_id in sorted(target):
            broker = self._broker(broker_id)
            if broker is None:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker_id}, but no such "
                    "broker is registered.",
                )
            if broker_id == previous:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker_id} more "
                    "than once.",
                )
            if broker.fenced and broker_id not in partition.replicas:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker_id}, which is "
                    "fenced.",
                )
            previous = broker_id

    def _cancel(self, name: str, tp: TopicPartition, partition: PartitionRegistration) -> None:
        if not partition.reassigning:
            raise ApiError(
                Errors.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
            )
        current = Assignment(
            partition.replicas, partition.adding_replicas, partition.removing_replicas
        )
        revert = reverted(current, partition.isr)
        election = self.policy.election(tp[0])
        if revert.unclean and election is not Election.UNCLEAN:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {name}:{tp[1]} because it would "
                "require an unclean leader election.",
            )
        self.changes.add(
            change_partition(
                tp,
                partition,
                acceptable=self.acceptable,
                target_isr=revert.isr,
                election=election,
                canary_brokers=self.canary,
                target=Assignment(revert.replicas),
            )
        )

    def _broker(self, broker_id: int) -> BrokerRegistration | None:
        try:
            return self._brokers[broker_id]
        except KeyError:
            broker = self._brokers[broker_id] = self.view.broker(broker_id)
            return broker

    def _default_dir(self, broker_id: int) -> str:
        broker = self._broker(broker_id)
        return default_log_dir(None if broker is None else broker.log_dirs)


def _replacing(partition: PartitionRegistration, move: Assignment) -> Assignment:
    """`move` over the one in progress, as Kafka's controller sets it: a target that adds
    nothing (or removes nothing) leaves what the move in progress adds (removes) as it is."""
    return Assignment(
        move.replicas,
        move.adding or partition.adding_replicas,
        move.removing or partition.removing_replicas,
    )


def alter_partition_reassignments(
    view: MetadataDelta, payload: Mapping[str, Any], *, configs: ConfigView
) -> tuple[PartitionChanges, dict[str, Any]]:
    """Kafka's AlterPartitionReassignments: one change per partition that moves, in order."""
    allow = bool(payload.get("allow_replication_factor_change", True))
    reassigner = _Reassigner(view, configs, allow)
    responses = [reassigner.topic(topic) for topic in payload["topics"]]
    if len(reassigner.changes.records) > MAX_RECORDS_PER_USER_OP:
        raise ApiError(
            Errors.POLICY_VIOLATION, "Unable to perform excessively large batch operation."
        )
    return reassigner.changes, {
        "error_code": 0,
        "error_message": None,
        "allow_replication_factor_change": allow,
        "responses": responses,
    }
