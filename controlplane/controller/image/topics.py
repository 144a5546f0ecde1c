"""The topics' part of the image: topics, partitions and the indexes of partitions by broker
(Kafka's TopicsImage and TopicsDelta).

Replays TopicRecord, PartitionRecord and PartitionChangeRecord; RemoveTopicRecord is replayed
through `MetadataDelta`, since a topic's configs go with it.

Compact, for a million partitions in a controller of well under 1 GiB: partitions
share their replica, ISR and offline tuples (a cluster has few distinct assignments, and an ISR
is most often its replicas), every key of a topic's partitions shares the topic's id string,
and the indexes by broker hold one entry per partition, not seven (`PartitionGroup`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator
from typing import Any

from controlplane.controller.frozen import quick_init
from controlplane.controller.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RemoveTopicRecord,
    TopicRecord,
)

TopicPartition = tuple[str, int]  # (topic id, partition index)
Brokers = tuple[int, ...]

# The one tuple of each value (see `shared_brokers`); cleared past a bound, as it only saves
# memory and a cluster's distinct assignments are far fewer.
_SHARED_BROKERS: dict[Brokers, Brokers] = {}
SHARED_VALUES_MAX = 1 << 16


def shared_brokers(brokers: Brokers) -> Brokers:
    """The tuple equal to `brokers` that every partition holding these brokers shares: two
    tuples of three brokers cost 128 bytes a partition, a shared one nothing."""
    found = _SHARED_BROKERS.get(brokers)
    if found is not None:
        return found
    if len(_SHARED_BROKERS) >= SHARED_VALUES_MAX:
        _SHARED_BROKERS.clear()
    _SHARED_BROKERS[brokers] = brokers
    return brokers


def shared_isr(isr: Brokers, replicas: Brokers) -> Brokers:
    """The partition's replicas tuple itself when the ISR is all of them (most often, and then
    shared even when assignments are too many for `shared_brokers` to keep them all)."""
    return replicas if isr == replicas else shared_brokers(isr)


# Partition indexes past CPython's cached small ints, one int object each, for every topic's
# keys: 28 bytes a partition of a large topic otherwise.
_SHARED_INDEXES: dict[int, int] = {}
SHARED_INDEX_CACHED = 256  # CPython shares the ints up to this one already


def _shared_index(index: int) -> int:
    if index <= SHARED_INDEX_CACHED:
        return index
    found = _SHARED_INDEXES.get(index)
    if found is not None:
        return found
    if len(_SHARED_INDEXES) >= SHARED_VALUES_MAX:
        _SHARED_INDEXES.clear()
    _SHARED_INDEXES[index] = index
    return index


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: str
    name: str
    partition_count: int = 0


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """A partition's replicas, ISR and leader; epochs only grow."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    offline_replicas: tuple[int, ...] = ()
    is_canary: bool = False
    canary_isolated: bool = False
    # Each replica's log dir, in `replicas`' order, once assigned (AssignReplicasToDirs);
    # () (one shared object) while every replica is in its broker's default dir.
    directories: tuple[str, ...] = ()
    # A reassignment in progress (KIP-455): `replicas` holds the target replicas, then the
    # ones leaving; `adding_replicas` are the target's new ones, `removing_replicas` the
    # leaving ones. Both () when none runs (Kafka's PartitionRegistration).
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        replicas = shared_brokers(record.replicas)
        return cls(
            replicas=replicas,
            isr=shared_isr(record.isr, replicas),
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            offline_replicas=shared_brokers(record.offline_replicas),
            is_canary=record.is_canary,
            canary_isolated=record.canary_isolated,
            directories=record.directories,
            adding_replicas=_shared_or_empty(record.adding_replicas),
            removing_replicas=_shared_or_empty(record.removing_replicas),
        )

    @property
    def reassigning(self) -> bool:
        """Whether a reassignment is in progress (Kafka's isReassignmentInProgress)."""
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """Where the partition is going: its replicas less the ones a reassignment removes."""
        if not self.removing_replicas:
            return self.replicas
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """Where it was before a reassignment: its replicas less the ones being added."""
        if not self.adding_replicas:
            return self.replicas
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader_changed = change.leader != NO_LEADER_CHANGE
        replicas = self.replicas if change.replicas is None else shared_brokers(change.replicas)
        # Hot (twice per partition of a large commit): `shared_isr` and `shared_brokers` inline.
        isr = change.isr
        if isr is None:
            isr = self.isr
        elif isr == replicas:
            isr = replicas
        else:
            isr = _SHARED_BROKERS.get(isr) or shared_brokers(isr)
        offline = change.offline_replicas
        if offline is None:
            offline = self.offline_replicas
        elif offline:  # () is one object already
            offline = _SHARED_BROKERS.get(offline) or shared_brokers(offline)
        # The change's dirs; the defaults when it moves the replicas without them.
        directories = change.directories
        if directories is None:
            directories = self.directories if change.replicas is None else ()
        adding = change.adding_replicas
        adding = self.adding_replicas if adding is None else _shared_or_empty(adding)
        removing = change.removing_replicas
        removing = self.removing_replicas if removing is None else _shared_or_empty(removing)
        return PartitionRegistration(
            replicas=replicas,
            isr=isr,
            leader=change.leader if leader_changed else self.leader,
            leader_epoch=self.leader_epoch + 1 if leader_changed else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            offline_replicas=offline,
            is_canary=self.is_canary,
            canary_isolated=self.canary_isolated
            if change.canary_isolated is None
            else change.canary_isolated,
            directories=directories,
            adding_replicas=adding,
            removing_replicas=removing,
        )

    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    def as_comparable(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# Partitions alike in what the indexes by broker ask of them: (replicas, ISR, leader).
PartitionGroup = tuple[Brokers, Brokers, int]
# A group's partitions: the key of its one partition, or a set of two or more (where
# assignments are spread at random, most groups are of one, and an empty set is 216 bytes).
GroupMembers = TopicPartition | set[TopicPartition]


def _with_shared_brokers(partition: PartitionRegistration) -> PartitionRegistration:
    """`partition`, or its equal holding the shared tuples when it was built with its own (a
    loaded row, a direct construction): records' partitions share them already."""
    replicas, isr, offline = partition.replicas, partition.isr, partition.offline_replicas
    shared_replicas = shared_brokers(replicas)
    shared = shared_replicas, shared_isr(isr, shared_replicas), shared_brokers(offline)
    if shared[0] is replicas and shared[1] is isr and shared[2] is offline:
        return partition
    return PartitionRegistration(
        replicas=shared[0],
        isr=shared[1],
        leader=partition.leader,
        leader_epoch=partition.leader_epoch,
        partition_epoch=partition.partition_epoch,
        offline_replicas=shared[2],
        is_canary=partition.is_canary,
        canary_isolated=partition.canary_isolated,
        directories=partition.directories,
        adding_replicas=partition.adding_replicas,
        removing_replicas=partition.removing_replicas,
    )


def _shared_or_empty(brokers: Brokers) -> Brokers:
    """`brokers` shared, and () itself when empty: a partition not being reassigned (nearly
    all of them) holds two references to the one empty tuple."""
    return shared_brokers(brokers) if brokers else ()


def _link(index: dict[int, set[PartitionGroup]], broker_id: int, group: PartitionGroup) -> None:
    groups = index.get(broker_id)
    if groups is None:
        index[broker_id] = {group}
    else:
        groups.add(group)


def _unlink(index: dict[int, set[PartitionGroup]], broker_id: int, group: PartitionGroup) -> None:
    groups = index.get(broker_id)
    if groups is not None:
        groups.discard(group)
        if not groups:
            del index[broker_id]


@dataclasses.dataclass(slots=True)
class TopicsImage:
    topics: dict[str, TopicInfo] = dataclasses.field(default_factory=dict)
    topic_ids: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> id
    partitions: dict[TopicPartition, PartitionRegistration] = dataclasses.field(
        default_factory=dict
    )
    # Kafka's BrokersToIsrs, and its kin, compacted: the partitions of each group (one entry a
    # partition, where three sets by broker held seven), and each broker's groups as a replica,
    # an ISR member and the leader (with Kafka's placement, a few thousand groups however many
    # partitions). Derived from `partitions`, kept as they change; never compared.
    groups: dict[PartitionGroup, GroupMembers] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    groups_by_replica: dict[int, set[PartitionGroup]] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    groups_by_isr_member: dict[int, set[PartitionGroup]] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    groups_by_leader: dict[int, set[PartitionGroup]] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )

    # --- partitions by broker ---------------------------------------------------------------
    def broker_has_leaderships(self, broker_id: int) -> bool:
        return broker_id in self.groups_by_leader  # a broker's entry goes with its last group

    def broker_has_replicas(self, broker_id: int) -> bool:
        return broker_id in self.groups_by_replica  # a broker's entry goes with its last group

    def partitions_with_replica(self, broker_id: int) -> set[TopicPartition]:
        return self._members(self.groups_by_replica, broker_id)

    def partitions_with_isr_member(self, broker_id: int) -> set[TopicPartition]:
        return self._members(self.groups_by_isr_member, broker_id)

    def partitions_led_by(self, broker_id: int) -> set[TopicPartition]:
        """The partitions `broker_id` leads (NO_LEADER: the leaderless ones)."""
        return self._members(self.groups_by_leader, broker_id)

    def _members(
        self, index: dict[int, set[PartitionGroup]], broker_id: int
    ) -> set[TopicPartition]:
        found: set[TopicPartition] = set()
        groups = self.groups
        for group in index.get(broker_id, ()):
            members = groups[group]
            if isinstance(members, set):
                found |= members
            else:
                found.add(members)
        return found

    def topics_off_first_replica(self, or_with_replica_on: Collection[int]) -> set[str]:
        """The topics with a partition not led by its first replica (Kafka's
        imbalancedPartitions, by topic) or with a replica on a broker of `or_with_replica_on`:
        read from the groups (a few thousand with Kafka's placement), not from every partition,
        and no further once every topic is found."""
        found: set[str] = set()
        every_topic = len(self.topics)
        for (replicas, _, leader), members in self.groups.items():
            if (not replicas or leader != replicas[0]) or (
                or_with_replica_on and any(r in or_with_replica_on for r in replicas)
            ):
                if isinstance(members, set):
                    found.update(topic_id for topic_id, _ in members)
                else:
                    found.add(members[0])
                if len(found) >= every_topic:
                    break
        return found

    # The indexes by broker as whole dicts, built from the groups on each read (O(partitions)):
    # for tests and tools; the controller asks broker by broker.
    @property
    def replica_index(self) -> dict[int, set[TopicPartition]]:
        return {b: self.partitions_with_replica(b) for b in self.groups_by_replica}

    @property
    def isr_index(self) -> dict[int, set[TopicPartition]]:
        return {b: self.partitions_with_isr_member(b) for b in self.groups_by_isr_member}

    @property
    def leader_index(self) -> dict[int, set[TopicPartition]]:
        return {b: self.partitions_led_by(b) for b in self.groups_by_leader}

    # --- changes ------------------------------------------------------------------------------
    def put_partition(self, tp: TopicPartition, partition: PartitionRegistration | None) -> None:
        partitions = self.partitions
        old = partitions.get(tp)
        if partition is None:
            if old is not None:
                del partitions[tp]
                self._ungroup(tp, old)
            return
        if old is None or partition.replicas is not old.replicas:
            # New or reassigned, perhaps built with tuples of its own (a loaded row); a change
            # from `merge`, the hot path of a large commit, shares them already.
            partition = _with_shared_brokers(partition)
        if old is not None:
            if (
                partition.leader == old.leader
                and partition.isr == old.isr
                and partition.replicas == old.replicas
            ):
                # Still in its group (offline replicas or canary isolation changed): the key
                # stays the one stored, which its group holds too.
                partitions[tp] = partition
                return
            del partitions[tp]
            self._ungroup(tp, old)
        tp = self._shared_key(tp)
        partitions[tp] = partition
        self._group(tp, partition)

    def _shared_key(self, tp: TopicPartition) -> TopicPartition:
        """`tp` with its topic's own id string, not the one of the record or row it came from
        (a standby's records and a loaded row each bring their own copy), and a shared int."""
        topic_id, index = tp
        topic = self.topics.get(topic_id)
        shared_id = topic_id if topic is None else topic.topic_id
        shared_index = _shared_index(index)
        if shared_id is topic_id and shared_index is index:
            return tp
        return (shared_id, shared_index)

    def _group(self, tp: TopicPartition, partition: PartitionRegistration) -> None:
        group = (partition.replicas, partition.isr, partition.leader)
        members = self.groups.get(group)
        if isinstance(members, set):
            members.add(tp)
            return
        if members is not None:
            if members != tp:
                self.groups[group] = {members, tp}
            return
        self.groups[group] = tp
        for broker_id in partition.replicas:
            _link(self.groups_by_replica, broker_id, group)
        for broker_id in partition.isr:
            _link(self.groups_by_isr_member, broker_id, group)
        _link(self.groups_by_leader, partition.leader, group)

    def _ungroup(self, tp: TopicPartition, partition: PartitionRegistration) -> None:
        group = (partition.replicas, partition.isr, partition.leader)
        members = self.groups.get(group)
        if isinstance(members, set):
            members.discard(tp)
            if len(members) == 1:
                self.groups[group] = members.pop()
            return
        if members is None or members != tp:
            return  # put in `partitions` directly (a read-only view), never grouped
        del self.groups[group]
        for broker_id in partition.replicas:
            _unlink(self.groups_by_replica, broker_id, group)
        for broker_id in partition.isr:
            _unlink(self.groups_by_isr_member, broker_id, group)
        _unlink(self.groups_by_leader, partition.leader, group)

    def load_topic(self, record: TopicRecord, partitions: list[PartitionRecord]) -> None:
        """Put a topic and its partitions, as a snapshot holds them (its TopicRecord, then its
        PartitionRecords 0..n-1), straight into the image: what replaying them through a delta
        makes, without a delta's bookkeeping (a million partitions load in seconds). Checked
        as replay checks them, all before anything is put, so a snapshot that is not one is
        refused (ValueError) with the image as it was."""
        topic_id = record.topic_id
        if topic_id in self.topics or record.name in self.topic_ids:
            raise ValueError(f"TopicRecord for existing topic {record.name} ({topic_id})")
        for index, partition in enumerate(partitions):
            if partition.partition_id != index or partition.topic_id != topic_id:
                raise ValueError(
                    f"PartitionRecord ({partition.topic_id}, {partition.partition_id}) out of "
                    f"order or not of topic {topic_id}"
                )
        self.put_topic(topic_id, TopicInfo(topic_id, record.name, len(partitions)))
        stored = self.partitions
        groups = self.groups
        by_replica, by_isr_member = self.groups_by_replica, self.groups_by_isr_member
        by_leader = self.groups_by_leader
        shared = _SHARED_BROKERS
        new = PartitionRegistration
        for index, partition in enumerate(partitions):
            # `PartitionRegistration.from_record`, `put_partition` and `_group`, inline: the
            # topic is new, so each partition is too.
            replicas = partition.replicas
            replicas = shared.get(replicas) or shared_brokers(replicas)
            isr = partition.isr
            isr = replicas if isr == replicas else shared.get(isr) or shared_brokers(isr)
            offline = partition.offline_replicas
            if offline:
                offline = shared.get(offline) or shared_brokers(offline)
            leader = partition.leader
            registration = new(
                replicas,
                isr,
                leader,
                partition.leader_epoch,
                partition.partition_epoch,
                offline,
                partition.is_canary,
                partition.canary_isolated,
                partition.directories,
                _shared_or_empty(partition.adding_replicas),
                _shared_or_empty(partition.removing_replicas),
            )
            tp = (topic_id, index if index <= SHARED_INDEX_CACHED else _shared_index(index))
            stored[tp] = registration
            group = (replicas, isr, leader)
            members = groups.get(group)
            if members is None:
                groups[group] = tp
                for broker_id in replicas:
                    linked = by_replica.get(broker_id)
                    if linked is None:
                        by_replica[broker_id] = {group}
                    else:
                        linked.add(group)
                for broker_id in isr:
                    linked = by_isr_member.get(broker_id)
                    if linked is None:
                        by_isr_member[broker_id] = {group}
                    else:
                        linked.add(group)
                _link(by_leader, leader, group)
            elif isinstance(members, set):
                members.add(tp)
            else:
                groups[group] = {members, tp}

    def put_topic(self, topic_id: str, topic: TopicInfo | None) -> None:
        old = self.topics.pop(topic_id, None)
        if old is not None:
            self.topic_ids.pop(old.name, None)
        if topic is not None:
            self.topics[topic_id] = topic
            self.topic_ids[topic.name] = topic_id

    def apply(self, delta: TopicsDelta) -> None:
        for topic_id, topic in delta.changed_topics.items():
            self.put_topic(topic_id, topic)
        for tp, partition in delta.changed_partitions.items():
            self.put_partition(tp, partition)

    def as_comparable(self) -> dict[str, Any]:
        return {
            "topics": {k: dataclasses.asdict(v) for k, v in sorted(self.topics.items())},
            "partitions": {
                f"{t}:{p}": v.as_comparable() for (t, p), v in sorted(self.partitions.items())
            },
        }

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image, by topic id: each topic, then
        its partitions in index order (as replay requires), each as it is now (its epochs
        included). One record at a time: a snapshot of a million partitions is streamed."""
        partitions = self.partitions
        for topic_id in sorted(self.topics):
            topic = self.topics[topic_id]
            yield TopicRecord(name=topic.name, topic_id=topic_id)
            for index in range(topic.partition_count):
                partition = partitions[(topic_id, index)]
                # Positional, in PartitionRecord's field order: a million of these, and keyword
                # arguments cost half as much again.
                yield PartitionRecord(
                    index,
                    topic_id,
                    partition.replicas,
                    partition.isr,
                    partition.leader,
                    partition.leader_epoch,
                    partition.partition_epoch,
                    partition.offline_replicas,
                    partition.is_canary,
                    partition.canary_isolated,
                    partition.directories,
                    partition.adding_replicas,
                    partition.removing_replicas,
                )


class TopicsDelta:
    """Topics and partitions changed over a TopicsImage (None: removed), and how many leader
    elections the changes made (for the controller's metrics)."""

    def __init__(self, image: TopicsImage) -> None:
        self.image = image
        self.changed_topics: dict[str, TopicInfo | None] = {}
        self.changed_topic_names: dict[str, str | None] = {}
        self.changed_partitions: dict[TopicPartition, PartitionRegistration | None] = {}
        self.leader_elections = 0  # partition changes that gave a partition a new leader
        self.unclean_leader_elections = 0
        # Each PartitionChangeRecord's partition before and after it, by offset: what the
        # timeline reads instead of merging every change a second time.
        self.transitions: dict[int, tuple[PartitionRegistration, PartitionRegistration]] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            TopicRecord: self.replay_topic,
            PartitionRecord: self.replay_partition,
            PartitionChangeRecord: self.replay_partition_change,
        }

    def topic(self, topic_id: str) -> TopicInfo | None:
        if topic_id in self.changed_topics:
            return self.changed_topics[topic_id]
        return self.image.topics.get(topic_id)

    def topic_id(self, name: str) -> str | None:
        if name in self.changed_topic_names:
            return self.changed_topic_names[name]
        return self.image.topic_ids.get(name)

    def all_topics(self) -> Iterator[TopicInfo]:
        for topic_id, topic in self.image.topics.items():
            if topic_id not in self.changed_topics:
                yield topic
        for changed in self.changed_topics.values():
            if changed is not None:
                yield changed

    def partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        changed = self.changed_partitions
        if tp in changed:
            return changed[tp]
        return self.image.partitions.get(tp)

    def partitions_with_replica(self, broker_id: int) -> set[TopicPartition]:
        found = self.image.partitions_with_replica(broker_id)
        return self._indexed(found, lambda p: broker_id in p.replicas)

    def partitions_with_isr_member(self, broker_id: int) -> set[TopicPartition]:
        found = self.image.partitions_with_isr_member(broker_id)
        return self._indexed(found, lambda p: broker_id in p.isr)

    def partitions_led_by(self, broker_id: int) -> set[TopicPartition]:
        found = self.image.partitions_led_by(broker_id)
        return self._indexed(found, lambda p: p.leader == broker_id)

    def topics_off_first_replica(self, or_with_replica_on: Collection[int]) -> set[str]:
        """The image's (a topic whose partitions this delta changed back stays: a topic too
        many is read for nothing, never a topic too few) and those of the partitions this
        delta changed that are off their first replica or on such a broker."""
        found = self.image.topics_off_first_replica(or_with_replica_on)
        for (topic_id, _), p in self.changed_partitions.items():
            if p is not None and (
                (not p.replicas or p.leader != p.replicas[0])
                or any(r in or_with_replica_on for r in p.replicas)
            ):
                found.add(topic_id)
        return found

    def broker_has_leaderships(self, broker_id: int) -> bool:
        """Whether `broker_id` leads a partition, without gathering them (each heartbeat asks):
        the first one of the image's it still leads answers."""
        changed = self.changed_partitions
        image = self.image
        for group in image.groups_by_leader.get(broker_id, ()):
            members = image.groups[group]
            if not isinstance(members, set):
                members = {members}
            for tp in members:
                if tp not in changed:
                    return True
        return any(p is not None and p.leader == broker_id for p in changed.values())

    def _indexed(
        self, found: set[TopicPartition], member: Callable[[PartitionRegistration], bool]
    ) -> set[TopicPartition]:
        """The image's partitions `found` (a set of their own) as this delta changed them."""
        changed = self.changed_partitions
        if changed:
            found.difference_update(changed)
            found.update(tp for tp, p in changed.items() if p is not None and member(p))
        return found

    def replay_topic(self, record: TopicRecord, offset: int) -> None:
        if self.topic_id(record.name) is not None or self.topic(record.topic_id) is not None:
            raise ValueError(f"TopicRecord for existing topic {record.name} ({record.topic_id})")
        self.changed_topics[record.topic_id] = TopicInfo(record.topic_id, record.name)
        self.changed_topic_names[record.name] = record.topic_id

    def replay_partition(self, record: PartitionRecord, offset: int) -> None:
        topic = self._require_topic(record.topic_id, record.TYPE)
        tp = (record.topic_id, record.partition_id)
        if record.partition_id != topic.partition_count or self.partition(tp) is not None:
            raise ValueError(f"PartitionRecord {tp} out of order or already present")
        self.changed_partitions[tp] = PartitionRegistration.from_record(record)
        # Built directly: `dataclasses.replace` costs 5 times as much, once per partition of a
        # topic's creation.
        self.changed_topics[record.topic_id] = TopicInfo(
            topic.topic_id, topic.name, topic.partition_count + 1
        )

    def replay_partition_change(self, record: PartitionChangeRecord, offset: int) -> None:
        tp = (record.topic_id, record.partition_id)
        current = self.partition(tp)
        if current is None:
            raise ValueError(f"PartitionChangeRecord for unknown partition {tp}")
        merged = current.merge(record)
        self.changed_partitions[tp] = merged
        self.transitions[offset] = (current, merged)
        if record.leader >= 0 and record.leader != current.leader:  # not an epoch bump alone
            self.leader_elections += 1
            if record.leader not in current.isr:
                self.unclean_leader_elections += 1

    def replay_remove_topic(self, record: RemoveTopicRecord, offset: int) -> TopicInfo:
        """Remove the topic and its partitions; answers the topic removed (its name keys its
        configs)."""
        topic = self._require_topic(record.topic_id, record.TYPE)
        for index in range(topic.partition_count):
            self.changed_partitions[(topic.topic_id, index)] = None
        self.changed_topics[topic.topic_id] = None
        self.changed_topic_names[topic.name] = None
        return topic

    def _require_topic(self, topic_id: str, record_type: str) -> TopicInfo:
        topic = self.topic(topic_id)
        if topic is None:
            raise ValueError(f"{record_type} for unknown topic {topic_id}")
        return topic
