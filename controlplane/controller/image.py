"""The controller's view of cluster metadata, and the one place records are applied.

`MetadataImage` is the state after some offset of the log. `MetadataDelta` layers changes over an
image: handlers read through it while the controller replays the records they produce, so a batch
of requests sees its own earlier changes. Replaying every record of the log into an empty image
rebuilds the state exactly; `verify_metadata` depends on that.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    ControlledShutdownChange,
    DelegationTokenRecord,
    FencingChange,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    QuotaEntity,
    Record,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)

NO_OFFSET = -1
TopicPartition = tuple[str, int]  # (topic id, partition index)
ConfigKey = tuple[str, str, str]  # (resource type, resource name, config name)


class BrokerControlState(enum.StrEnum):
    """Kafka's BrokerControlState (BrokerHeartbeatManager)."""

    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerStatus:
    """What a heartbeat decision needs of a registration (kept in the session store's mirror)."""

    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    controlled_shutdown_offset: int = NO_OFFSET

    @property
    def control_state(self) -> BrokerControlState:
        if self.fenced:
            return BrokerControlState.FENCED
        if self.in_controlled_shutdown:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.UNFENCED

    def encode(self) -> str:
        return (
            f"{self.epoch}:{int(self.fenced)}:{int(self.in_controlled_shutdown)}:"
            f"{self.controlled_shutdown_offset}"
        )

    @classmethod
    def decode(cls, broker_id: int, value: str) -> BrokerStatus:
        epoch, fenced, shutting_down, cs_offset = value.split(":")
        return cls(broker_id, int(epoch), fenced == "1", shutting_down == "1", int(cs_offset))


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    epoch: int
    listeners: tuple[Listener, ...]
    rack: str | None
    pod: str
    log_dirs: tuple[str, ...]
    fenced: bool
    in_controlled_shutdown: bool
    controlled_shutdown_offset: int = NO_OFFSET

    @property
    def control_state(self) -> BrokerControlState:
        return self.status.control_state

    @property
    def status(self) -> BrokerStatus:
        return BrokerStatus(
            self.broker_id,
            self.epoch,
            self.fenced,
            self.in_controlled_shutdown,
            self.controlled_shutdown_offset,
        )

    def as_comparable(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


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
class MetadataImage:
    cluster_id: str
    last_offset: int = NO_OFFSET
    brokers: dict[int, BrokerRegistration] = dataclasses.field(default_factory=dict)
    acls: dict[str, AccessControlEntryRecord] = dataclasses.field(default_factory=dict)
    topics: dict[str, TopicInfo] = dataclasses.field(default_factory=dict)
    topic_ids: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> id
    partitions: dict[TopicPartition, PartitionRegistration] = dataclasses.field(
        default_factory=dict
    )
    configs: dict[tuple[str, str], dict[str, str]] = dataclasses.field(default_factory=dict)
    # Kafka's ClientQuotasImage: quota values by entity (sorted (type, name or None) pairs).
    client_quotas: dict[QuotaEntity, dict[str, float]] = dataclasses.field(default_factory=dict)
    # Kafka's DelegationTokenImage: live tokens by token id (no HMAC: it is recomputable).
    delegation_tokens: dict[str, DelegationTokenRecord] = dataclasses.field(default_factory=dict)
    # Kafka's BrokersToIsrs, and its kin: partitions by broker, kept as partitions change.
    replica_index: dict[int, set[TopicPartition]] = dataclasses.field(default_factory=dict)
    isr_index: dict[int, set[TopicPartition]] = dataclasses.field(default_factory=dict)
    leader_index: dict[int, set[TopicPartition]] = dataclasses.field(default_factory=dict)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        return iter(self.brokers.values())

    def broker_has_leaderships(self, broker_id: int) -> bool:
        return bool(self.leader_index.get(broker_id))

    def put_partition(self, tp: TopicPartition, partition: PartitionRegistration | None) -> None:
        old = self.partitions.pop(tp, None)
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

    def put_topic(self, topic_id: str, topic: TopicInfo | None) -> None:
        old = self.topics.pop(topic_id, None)
        if old is not None:
            self.topic_ids.pop(old.name, None)
        if topic is not None:
            self.topics[topic_id] = topic
            self.topic_ids[topic.name] = topic_id

    def put_config(self, key: ConfigKey, value: str | None) -> None:
        resource_type, resource_name, name = key
        entries = self.configs.setdefault((resource_type, resource_name), {})
        if value is None:
            entries.pop(name, None)
            if not entries:
                del self.configs[(resource_type, resource_name)]
        else:
            entries[name] = value

    def put_client_quota(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        values = self.client_quotas.setdefault(entity, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.client_quotas[entity]
        else:
            values[key] = value

    def apply(self, delta: MetadataDelta) -> None:
        for broker_id, broker in delta.changed_brokers.items():
            if broker is None:
                self.brokers.pop(broker_id, None)
            else:
                self.brokers[broker_id] = broker
        for acl_id, acl in delta.changed_acls.items():
            if acl is None:
                self.acls.pop(acl_id, None)
            else:
                self.acls[acl_id] = acl
        for topic_id, topic in delta.changed_topics.items():
            self.put_topic(topic_id, topic)
        for tp, partition in delta.changed_partitions.items():
            self.put_partition(tp, partition)
        for key, value in delta.changed_configs.items():
            self.put_config(key, value)
        for (entity, quota_key), quota in delta.changed_client_quotas.items():
            self.put_client_quota(entity, quota_key, quota)
        for token_id, token in delta.changed_delegation_tokens.items():
            if token is None:
                self.delegation_tokens.pop(token_id, None)
            else:
                self.delegation_tokens[token_id] = token
        self.last_offset = delta.last_offset

    def as_comparable(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "last_offset": self.last_offset,
            "brokers": {k: v.as_comparable() for k, v in sorted(self.brokers.items())},
            "acls": {k: v.to_data() for k, v in sorted(self.acls.items())},
            "topics": {k: dataclasses.asdict(v) for k, v in sorted(self.topics.items())},
            "partitions": {
                f"{t}:{p}": v.as_comparable() for (t, p), v in sorted(self.partitions.items())
            },
            "configs": {
                f"{t}:{n}": dict(sorted(v.items())) for (t, n), v in sorted(self.configs.items())
            },
            "client_quotas": {
                ",".join(f"{t}={'<default>' if n is None else repr(n)}" for t, n in e): dict(
                    sorted(v.items())
                )
                for e, v in sorted(self.client_quotas.items(), key=lambda item: repr(item[0]))
            },
            "delegation_tokens": {
                k: v.to_data() for k, v in sorted(self.delegation_tokens.items())
            },
        }


class MetadataDelta:
    """Changes over a base image; reads see the changes first."""

    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.last_offset = base.last_offset
        self.changed_brokers: dict[int, BrokerRegistration | None] = {}
        self.changed_acls: dict[str, AccessControlEntryRecord | None] = {}
        self.changed_topics: dict[str, TopicInfo | None] = {}
        self.changed_topic_names: dict[str, str | None] = {}
        self.changed_partitions: dict[TopicPartition, PartitionRegistration | None] = {}
        self.changed_configs: dict[ConfigKey, str | None] = {}
        self.changed_client_quotas: dict[tuple[QuotaEntity, str], float | None] = {}
        self.changed_delegation_tokens: dict[str, DelegationTokenRecord | None] = {}
        self.replayed: list[tuple[int, Record]] = []
        self.leader_elections = 0  # partition changes that gave a partition a new leader
        self.unclean_leader_elections = 0
        self._replayers: dict[type[Record], Callable[[Any, int], None]] = {
            RegisterBrokerRecord: self._replay_register_broker,
            BrokerRegistrationChangeRecord: self._replay_broker_change,
            UnregisterBrokerRecord: self._replay_unregister_broker,
            AccessControlEntryRecord: self._replay_acl,
            RemoveAccessControlEntryRecord: self._replay_remove_acl,
            TopicRecord: self._replay_topic,
            PartitionRecord: self._replay_partition,
            PartitionChangeRecord: self._replay_partition_change,
            RemoveTopicRecord: self._replay_remove_topic,
            ConfigRecord: self._replay_config,
            ClientQuotaRecord: self._replay_client_quota,
            DelegationTokenRecord: self._replay_delegation_token,
            RemoveDelegationTokenRecord: self._replay_remove_delegation_token,
        }

    @property
    def cluster_id(self) -> str:
        return self.base.cluster_id

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self.changed_brokers:
            return self.changed_brokers[broker_id]
        return self.base.broker(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        for broker_id, broker in self.base.brokers.items():
            if broker_id not in self.changed_brokers:
                yield broker
        for changed in self.changed_brokers.values():
            if changed is not None:
                yield changed

    def broker_has_leaderships(self, broker_id: int) -> bool:
        return bool(self.partitions_led_by(broker_id))

    # --- topics, partitions and configs, read through the changes ----------------------
    def topic(self, topic_id: str) -> TopicInfo | None:
        if topic_id in self.changed_topics:
            return self.changed_topics[topic_id]
        return self.base.topics.get(topic_id)

    def topic_id(self, name: str) -> str | None:
        if name in self.changed_topic_names:
            return self.changed_topic_names[name]
        return self.base.topic_ids.get(name)

    def topic_by_name(self, name: str) -> TopicInfo | None:
        topic_id = self.topic_id(name)
        return None if topic_id is None else self.topic(topic_id)

    def all_topics(self) -> Iterator[TopicInfo]:
        for topic_id, topic in self.base.topics.items():
            if topic_id not in self.changed_topics:
                yield topic
        for changed in self.changed_topics.values():
            if changed is not None:
                yield changed

    def partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        changed = self.changed_partitions
        if tp in changed:
            return changed[tp]
        return self.base.partitions.get(tp)

    def topic_partitions(
        self, topic: TopicInfo
    ) -> Iterator[tuple[TopicPartition, PartitionRegistration]]:
        for index in range(topic.partition_count):
            tp = (topic.topic_id, index)
            partition = self.partition(tp)
            if partition is not None:
                yield tp, partition

    def partitions_with_replica(self, broker_id: int) -> set[TopicPartition]:
        return self._indexed(self.base.replica_index, broker_id, lambda p: broker_id in p.replicas)

    def partitions_with_isr_member(self, broker_id: int) -> set[TopicPartition]:
        return self._indexed(self.base.isr_index, broker_id, lambda p: broker_id in p.isr)

    def partitions_led_by(self, broker_id: int) -> set[TopicPartition]:
        return self._indexed(self.base.leader_index, broker_id, lambda p: p.leader == broker_id)

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

    def config(self, resource_type: str, resource_name: str, name: str) -> str | None:
        key = (resource_type, resource_name, name)
        if key in self.changed_configs:
            return self.changed_configs[key]
        return self.base.configs.get((resource_type, resource_name), {}).get(name)

    def configs_of(self, resource_type: str, resource_name: str) -> dict[str, str]:
        entries = dict(self.base.configs.get((resource_type, resource_name), {}))
        for (rtype, rname, name), value in self.changed_configs.items():
            if rtype == resource_type and rname == resource_name:
                if value is None:
                    entries.pop(name, None)
                else:
                    entries[name] = value
        return entries

    def client_quotas_of(self, entity: QuotaEntity) -> dict[str, float]:
        values = dict(self.base.client_quotas.get(entity, {}))
        for (changed_entity, key), value in self.changed_client_quotas.items():
            if changed_entity == entity:
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
        return values

    def delegation_token(self, token_id: str) -> DelegationTokenRecord | None:
        if token_id in self.changed_delegation_tokens:
            return self.changed_delegation_tokens[token_id]
        return self.base.delegation_tokens.get(token_id)

    def all_delegation_tokens(self) -> Iterator[DelegationTokenRecord]:
        for token_id, token in self.base.delegation_tokens.items():
            if token_id not in self.changed_delegation_tokens:
                yield token
        for changed in self.changed_delegation_tokens.values():
            if changed is not None:
                yield changed

    def acl(self, acl_id: str) -> AccessControlEntryRecord | None:
        if acl_id in self.changed_acls:
            return self.changed_acls[acl_id]
        return self.base.acls.get(acl_id)

    def replay(self, record: Record) -> int:
        """Apply one record at the next offset; returns that offset."""
        offset = self.last_offset + 1
        try:
            replayer = self._replayers[type(record)]
        except KeyError:
            raise ValueError(f"No replay rule for {type(record).__name__}") from None
        replayer(record, offset)
        self.last_offset = offset
        self.replayed.append((offset, record))
        return offset

    def _replay_register_broker(self, record: RegisterBrokerRecord, offset: int) -> None:
        self.changed_brokers[record.broker_id] = BrokerRegistration(
            broker_id=record.broker_id,
            incarnation_id=record.incarnation_id,
            epoch=record.broker_epoch,
            listeners=record.listeners,
            rack=record.rack,
            pod=record.pod,
            log_dirs=record.log_dirs,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
        )

    def _replay_broker_change(self, record: BrokerRegistrationChangeRecord, offset: int) -> None:
        current = self._require_broker(record.broker_id, record.broker_epoch, record.TYPE)
        changes: dict[str, Any] = {}
        if record.fenced == FencingChange.FENCE:
            # A fenced broker is no longer shutting down in a controlled way: it is off.
            changes.update(
                fenced=True, in_controlled_shutdown=False, controlled_shutdown_offset=NO_OFFSET
            )
        elif record.fenced == FencingChange.UNFENCE:
            changes["fenced"] = False
        if record.in_controlled_shutdown == ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN:
            changes.update(in_controlled_shutdown=True, controlled_shutdown_offset=offset)
        self.changed_brokers[record.broker_id] = dataclasses.replace(current, **changes)

    def _replay_unregister_broker(self, record: UnregisterBrokerRecord, offset: int) -> None:
        self._require_broker(record.broker_id, record.broker_epoch, record.TYPE)
        self.changed_brokers[record.broker_id] = None

    def _replay_acl(self, record: AccessControlEntryRecord, offset: int) -> None:
        self.changed_acls[record.id] = record

    def _replay_remove_acl(self, record: RemoveAccessControlEntryRecord, offset: int) -> None:
        if self.acl(record.id) is None:
            raise ValueError(f"RemoveAccessControlEntryRecord for unknown ACL {record.id}")
        self.changed_acls[record.id] = None

    def _replay_topic(self, record: TopicRecord, offset: int) -> None:
        if self.topic_id(record.name) is not None or self.topic(record.topic_id) is not None:
            raise ValueError(f"TopicRecord for existing topic {record.name} ({record.topic_id})")
        self.changed_topics[record.topic_id] = TopicInfo(record.topic_id, record.name)
        self.changed_topic_names[record.name] = record.topic_id

    def _replay_partition(self, record: PartitionRecord, offset: int) -> None:
        topic = self._require_topic(record.topic_id, record.TYPE)
        tp = (record.topic_id, record.partition_id)
        if record.partition_id != topic.partition_count or self.partition(tp) is not None:
            raise ValueError(f"PartitionRecord {tp} out of order or already present")
        self.changed_partitions[tp] = PartitionRegistration.from_record(record)
        self.changed_topics[record.topic_id] = dataclasses.replace(
            topic, partition_count=topic.partition_count + 1
        )

    def _replay_partition_change(self, record: PartitionChangeRecord, offset: int) -> None:
        tp = (record.topic_id, record.partition_id)
        current = self.partition(tp)
        if current is None:
            raise ValueError(f"PartitionChangeRecord for unknown partition {tp}")
        merged = current.merge(record)
        self.changed_partitions[tp] = merged
        if record.leader >= 0:
            self.leader_elections += 1
            if record.leader not in current.isr:
                self.unclean_leader_elections += 1

    def _replay_remove_topic(self, record: RemoveTopicRecord, offset: int) -> None:
        topic = self._require_topic(record.topic_id, record.TYPE)
        for index in range(topic.partition_count):
            self.changed_partitions[(topic.topic_id, index)] = None
        for name in self.configs_of("TOPIC", topic.name):
            self.changed_configs[("TOPIC", topic.name, name)] = None
        self.changed_topics[topic.topic_id] = None
        self.changed_topic_names[topic.name] = None

    def _replay_config(self, record: ConfigRecord, offset: int) -> None:
        key = (record.resource_type, record.resource_name, record.name)
        self.changed_configs[key] = record.value

    def _replay_client_quota(self, record: ClientQuotaRecord, offset: int) -> None:
        entity = record.entity
        types = [entity_type for entity_type, _ in entity]
        if not types or types != sorted(set(types)):
            raise ValueError(f"ClientQuotaRecord with an invalid entity {entity!r}")
        self.changed_client_quotas[(entity, record.key)] = None if record.remove else record.value

    def _replay_delegation_token(self, record: DelegationTokenRecord, offset: int) -> None:
        if record.expiration_timestamp > record.max_timestamp:
            raise ValueError(f"DelegationTokenRecord {record.token_id} expires after its max")
        self.changed_delegation_tokens[record.token_id] = record

    def _replay_remove_delegation_token(
        self, record: RemoveDelegationTokenRecord, offset: int
    ) -> None:
        if self.delegation_token(record.token_id) is None:
            raise ValueError(f"RemoveDelegationTokenRecord for unknown token {record.token_id}")
        self.changed_delegation_tokens[record.token_id] = None

    def _require_topic(self, topic_id: str, record_type: str) -> TopicInfo:
        topic = self.topic(topic_id)
        if topic is None:
            raise ValueError(f"{record_type} for unknown topic {topic_id}")
        return topic

    def _require_broker(self, broker_id: int, epoch: int, record_type: str) -> BrokerRegistration:
        registered = self.broker(broker_id)
        if registered is None or registered.epoch != epoch:
            raise ValueError(f"{record_type} for broker {broker_id} epoch {epoch}: not registered")
        return registered


def replay_log(cluster_id: str, records: list[Record]) -> MetadataImage:
    """Rebuild the image from the whole log, from offset 0."""
    image = MetadataImage(cluster_id=cluster_id)
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    image.apply(delta)
    return image
