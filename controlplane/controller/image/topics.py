"""The topics' part of the image: topics, partitions and the indexes of partitions by broker
(Kafka's TopicsImage and TopicsDelta).

Replays TopicRecord, PartitionRecord and PartitionChangeRecord; RemoveTopicRecord is replayed
through `MetadataDelta`, since a topic's configs go with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

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


@dataclasses.dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: str
    name: str
    partition_count: int = 0


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

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        return cls(
            replicas=record.replicas,
            isr=record.isr,
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            offline_replicas=record.offline_replicas,
            is_canary=record.is_canary,
            canary_isolated=record.canary_isolated,
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader_changed = change.leader != NO_LEADER_CHANGE
        return PartitionRegistration(
            replicas=self.replicas if change.replicas is None else change.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=change.leader if leader_changed else self.leader,
            leader_epoch=self.leader_epoch + 1 if leader_changed else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            offline_replicas=self.offline_replicas
            if change.offline_replicas is None
            else change.offline_replicas,
            is_canary=self.is_canary,
            canary_isolated=self.canary_isolated
            if change.canary_isolated is None
            else change.canary_isolated,
        )

    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    def as_comparable(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _index_add(index: dict[int, set[TopicPartition]], key: int, tp: TopicPartition) -> None:
    bucket = index.get(key)
    if bucket is None:
        index[key] = {tp}
    else:
        bucket.add(tp)


def _index_discard(index: dict[int, set[TopicPartition]], key: int, tp: TopicPartition) -> None:
    bucket = index.get(key)
    if bucket is not None:
        bucket.discard(tp)
        if not bucket:
            del index[key]


@dataclasses.dataclass(slots=True)
class TopicsImage:
    topics: dict[str, TopicInfo] = dataclasses.field(default_factory=dict)
    topic_ids: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> id
    partitions: dict[TopicPartition, PartitionRegistration] = dataclasses.field(
        default_factory=dict
    )
    # Kafka's BrokersToIsrs, and its kin: partitions by broker, kept as partitions change.
    replica_index: dict[int, set[TopicPartition]] = dataclasses.field(default_factory=dict)
    isr_index: dict[int, set[TopicPartition]] = dataclasses.field(default_factory=dict)
    leader_index: dict[int, set[TopicPartition]] = dataclasses.field(default_factory=dict)

    def broker_has_leaderships(self, broker_id: int) -> bool:
        return bool(self.leader_index.get(broker_id))

    def put_partition(self, tp: TopicPartition, partition: PartitionRegistration | None) -> None:
        old = self.partitions.pop(tp, None)
        if old is not None and partition is not None:
            self.partitions[tp] = partition
            self._reindex(tp, old, partition)
            return
        if old is not None:
            for replica in old.replicas:
                _index_discard(self.replica_index, replica, tp)
            for replica in old.isr:
                _index_discard(self.isr_index, replica, tp)
            _index_discard(self.leader_index, old.leader, tp)
        if partition is None:
            return
        self.partitions[tp] = partition
        for replica in partition.replicas:
            _index_add(self.replica_index, replica, tp)
        for replica in partition.isr:
            _index_add(self.isr_index, replica, tp)
        _index_add(self.leader_index, partition.leader, tp)

    def _reindex(
        self, tp: TopicPartition, old: PartitionRegistration, new: PartitionRegistration
    ) -> None:
        """Only the index entries that differ: an election or an ISR change (most of a large
        commit's changes) leaves the replicas alone and moves one or two brokers."""
        if old.replicas != new.replicas:
            for replica in old.replicas:
                if replica not in new.replicas:
                    _index_discard(self.replica_index, replica, tp)
            for replica in new.replicas:
                if replica not in old.replicas:
                    _index_add(self.replica_index, replica, tp)
        if old.isr != new.isr:
            for replica in old.isr:
                if replica not in new.isr:
                    _index_discard(self.isr_index, replica, tp)
            for replica in new.isr:
                if replica not in old.isr:
                    _index_add(self.isr_index, replica, tp)
        if old.leader != new.leader:
            _index_discard(self.leader_index, old.leader, tp)
            _index_add(self.leader_index, new.leader, tp)

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
        return self._indexed(self.image.replica_index, broker_id, lambda p: broker_id in p.replicas)

    def partitions_with_isr_member(self, broker_id: int) -> set[TopicPartition]:
        return self._indexed(self.image.isr_index, broker_id, lambda p: broker_id in p.isr)

    def partitions_led_by(self, broker_id: int) -> set[TopicPartition]:
        return self._indexed(self.image.leader_index, broker_id, lambda p: p.leader == broker_id)

    def _indexed(
        self,
        index: dict[int, set[TopicPartition]],
        broker_id: int,
        member: Callable[[PartitionRegistration], bool],
    ) -> set[TopicPartition]:
        changed = self.changed_partitions
        found = {tp for tp in index.get(broker_id, ()) if tp not in changed}
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
        self.changed_topics[record.topic_id] = dataclasses.replace(
            topic, partition_count=topic.partition_count + 1
        )

    def replay_partition_change(self, record: PartitionChangeRecord, offset: int) -> None:
        tp = (record.topic_id, record.partition_id)
        current = self.partition(tp)
        if current is None:
            raise ValueError(f"PartitionChangeRecord for unknown partition {tp}")
        merged = current.merge(record)
        self.changed_partitions[tp] = merged
        self.transitions[offset] = (current, merged)
        if record.leader >= 0:
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
