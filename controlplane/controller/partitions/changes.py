"""Partition changes as records, as Kafka's PartitionChangeBuilder builds them.

Given a partition and the ISR and offline replicas it should have, `change_partition` elects a
leader if the current one is no longer valid and answers the one PartitionChangeRecord that gets
there, or None when nothing changes. `PartitionChanges` collects a handler's changes so later
ones see earlier ones.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable
from typing import Any

from controlplane.controller.canary.rules import isolated, replicas_leader_order
from controlplane.controller.image import MetadataDelta, PartitionRegistration, TopicPartition
from controlplane.controller.partitions.reassignment import Assignment, completed
from controlplane.controller.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    UNASSIGNED_DIRECTORY,
    PartitionChangeRecord,
)


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
    canary_brokers: Collection[int] = frozenset(),
    target: Assignment | None = None,
    default_dir: Callable[[int], str] | None = None,
) -> PartitionChangeRecord | None:
    """The record that moves `partition` to the target ISR / offline replicas / assignment
    with a valid leader, or None when nothing would change.

    The ISR never becomes empty: when the last member would leave, it stays and the partition
    goes leaderless (leader -1), as Kafka's controller does. A canary partition elects its
    replicas on `canary_brokers` first (KIP-1095). Any change completes a reassignment in
    progress that its ISR allows (Kafka's completeReassignmentIfNeeded), the ISR it elects
    included: the leaving replicas go, a leaving leader hands over to a target replica, and
    the leader epoch moves. A new replica's log dir is `default_dir(broker)` (UNASSIGNED by
    default, KIP-858) when the partition's replicas have assigned dirs.
    """
    isr = partition.isr if target_isr is None else target_isr
    if not isr:
        isr = tuple(r for r in partition.isr if r == partition.leader) or partition.isr[-1:]
    if target is None and not partition.reassigning:
        # An election or an ISR change alone (every partition of a broker's failure or
        # shutdown): the replicas stay, and the record carries no assignment.
        return _leadership_change(
            tp, partition, acceptable, isr, target_offline, election, canary_brokers
        )
    assignment = target or Assignment(
        partition.replicas, partition.adding_replicas, partition.removing_replicas
    )
    assignment, isr = _completed_by(assignment, isr)
    requested_offline = partition.offline_replicas if target_offline is None else target_offline
    offline = _offline_among(partition, requested_offline, assignment.replicas)
    leader, isr = _elected(
        partition, assignment.replicas, isr, offline, acceptable, election, canary_brokers
    )
    if assignment.in_progress:
        # The election may give the ISR every replica the move adds (an unclean one, onto a
        # replica being added, its old ISR fenced): the move completes in this change. Kafka's
        # builder checks before electing only, and the move then waits for an ISR change that
        # a leader alone in its ISR never sends; a later target naming the replicas as they
        # stand would complete the old move instead of keeping them.
        assignment, isr = _completed_by(assignment, isr)
        if not assignment.in_progress:
            offline = _offline_among(partition, offline, assignment.replicas)
            leader, isr = _elected(
                partition, assignment.replicas, isr, offline, acceptable, election, canary_brokers
            )
    replicas = assignment.replicas
    moved = replicas != partition.replicas
    new_leader = leader if leader != partition.leader else NO_LEADER_CHANGE
    left = moved and any(r not in replicas for r in partition.replicas)
    if left and new_leader == NO_LEADER_CHANGE:
        # Replicas left: the leader epoch moves even when the leader stays (Kafka's
        # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded), fencing the removed ones.
        new_leader = partition.leader
    record = PartitionChangeRecord(
        partition_id=tp[1],
        topic_id=tp[0],
        isr=isr if isr != partition.isr else None,
        leader=new_leader,
        offline_replicas=offline if offline != partition.offline_replicas else None,
        **_assignment_changes(partition, assignment, canary_brokers, default_dir),
    )
    if (
        record.isr is None
        and record.leader == NO_LEADER_CHANGE
        and record.offline_replicas is None
        and record.replicas is None
        and record.adding_replicas is None
        and record.removing_replicas is None
    ):
        return None
    return record


def _completed_by(
    assignment: Assignment, isr: tuple[int, ...]
) -> tuple[Assignment, tuple[int, ...]]:
    """The assignment and ISR once `isr` completes the move in progress, else as they are."""
    done = completed(assignment, isr)
    return (assignment, isr) if done is None else (Assignment(done[0]), done[1])


def _offline_among(
    partition: PartitionRegistration, offline: tuple[int, ...], replicas: tuple[int, ...]
) -> tuple[int, ...]:
    """The offline replicas still among `replicas` once a move changed them."""
    if offline and replicas != partition.replicas:
        return tuple([r for r in offline if r in replicas])
    return offline


def _leadership_change(
    tp: TopicPartition,
    partition: PartitionRegistration,
    acceptable: AcceptableLeader,
    isr: tuple[int, ...],
    target_offline: tuple[int, ...] | None,
    election: Election,
    canary_brokers: Collection[int],
) -> PartitionChangeRecord | None:
    """`change_partition` where the replicas stay and no reassignment runs: the same election,
    and a record without an assignment to compare."""
    offline = partition.offline_replicas if target_offline is None else target_offline
    leader, isr = _elected(
        partition, partition.replicas, isr, offline, acceptable, election, canary_brokers
    )
    changed_isr = isr if isr != partition.isr else None
    changed_offline = offline if offline != partition.offline_replicas else None
    if leader == partition.leader and changed_isr is None and changed_offline is None:
        return None
    return PartitionChangeRecord(
        partition_id=tp[1],
        topic_id=tp[0],
        isr=changed_isr,
        leader=leader if leader != partition.leader else NO_LEADER_CHANGE,
        offline_replicas=changed_offline,
    )


def _elected(
    partition: PartitionRegistration,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    offline: tuple[int, ...],
    acceptable: AcceptableLeader,
    election: Election,
    canary_brokers: Collection[int],
) -> tuple[int, tuple[int, ...]]:
    """The leader of `partition` with the target `isr`, `offline` and `replicas`, and its ISR
    (the leader alone after an unclean election)."""
    order = replicas_leader_order(replicas, partition.is_canary, canary_brokers)
    leader, unclean = _elect(partition, order, isr, offline, acceptable, election)
    if partition.is_canary and leader not in canary_brokers and not unclean:
        # KIP-1095: a canary partition's leadership goes back to a canary broker as soon as
        # one can lead it (in the ISR, online, active), whatever the election.
        leader = next(
            (r for r in order if r in canary_brokers and _can_lead(r, isr, offline, acceptable)),
            leader,
        )
    return leader, ((leader,) if unclean else isr)


def _assignment_changes(
    partition: PartitionRegistration,
    assignment: Assignment,
    canary_brokers: Collection[int],
    default_dir: Callable[[int], str] | None,
) -> dict[str, Any]:
    """The record fields that change with the partition's assignment: its replicas (with
    their log dirs and canary isolation) and its reassignment's adding and removing."""
    fields: dict[str, Any] = {}
    if assignment.adding != partition.adding_replicas:
        fields["adding_replicas"] = assignment.adding
    if assignment.removing != partition.removing_replicas:
        fields["removing_replicas"] = assignment.removing
    replicas = assignment.replicas
    if replicas == partition.replicas:
        return fields
    fields["replicas"] = replicas
    if partition.directories:
        # Kept replicas keep their dirs; a new one is where its broker puts it by default.
        placed = dict(zip(partition.replicas, partition.directories, strict=False))
        fallback = default_dir or (lambda _broker: UNASSIGNED_DIRECTORY)
        fields["directories"] = tuple(placed.get(r) or fallback(r) for r in replicas)
    if partition.is_canary:
        now_isolated = isolated(replicas, canary_brokers)
        if now_isolated != partition.canary_isolated:
            fields["canary_isolated"] = now_isolated
    return fields


def _can_lead(
    replica: int, isr: tuple[int, ...], offline: tuple[int, ...], acceptable: AcceptableLeader
) -> bool:
    """A valid leader: in the ISR, not offline, and acceptable (a function of the module, not a
    closure built per partition: this runs for every partition of a 10,000-partition change)."""
    return replica in isr and replica not in offline and acceptable(replica)


def _elect(
    partition: PartitionRegistration,
    order: tuple[int, ...],
    isr: tuple[int, ...],
    offline: tuple[int, ...],
    acceptable: AcceptableLeader,
    election: Election,
) -> tuple[int, bool]:
    """(leader, unclean): Kafka's electLeader, preferred / any in-ISR / unclean, trying the
    replicas in `order` (replica order; canary replicas first for a canary partition)."""
    if election is Election.PREFERRED and order:
        preferred = order[0]
        if _can_lead(preferred, isr, offline, acceptable):
            return preferred, False
    current = partition.leader
    if current != NO_LEADER and _can_lead(current, isr, offline, acceptable):
        return current, False
    for replica in order:
        if _can_lead(replica, isr, offline, acceptable):
            return replica, False
    if election is Election.UNCLEAN:
        for replica in order:
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
        # The last change of each partition, not merged yet: most partitions of a large change
        # are changed once and never asked for again, and the replay merges every record anyway.
        self._unmerged: dict[
            TopicPartition, tuple[PartitionRegistration, PartitionChangeRecord]
        ] = {}

    def get(self, tp: TopicPartition) -> PartitionRegistration | None:
        if self._unmerged:
            unmerged = self._unmerged.pop(tp, None)
            if unmerged is not None:
                before, record = unmerged
                after = self._current[tp] = before.merge(record)
                return after
        current = self._current.get(tp)
        return current if current is not None else self.view.partition(tp)

    def add(self, record: PartitionChangeRecord | None) -> bool:
        if record is None:
            return False
        tp = (record.topic_id, record.partition_id)
        before = self.get(tp)
        assert before is not None
        if record.leader not in (NO_LEADER_CHANGE, NO_LEADER, before.leader):
            self.elections += 1
            if record.isr == (record.leader,) and record.leader not in before.isr:
                self.unclean_elections += 1
        self._unmerged[tp] = (before, record)
        self.records.append(record)
        return True
