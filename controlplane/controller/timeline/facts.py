"""What one write's records did, read against the state before them.

The metadata log says what changed, not what it was before; a timeline must say both (the
previous and the new leader of a partition, the name of a topic that is gone). `CommitWalk`
replays a commit's records in order over the image they were committed on, and gathers, for each
write, the facts a person wants to read: brokers registered, fenced or shut down, log dirs gone
offline, partitions moved (with their state before and after), topics made or removed, configs,
ACLs, quotas and tokens changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from controlplane.controller.config_schema import REDACTED, is_sensitive
from controlplane.controller.image import MetadataImage, PartitionRegistration, TopicPartition
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
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)
from controlplane.controller.scram_records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

# A replay's partitions before and after each PartitionChangeRecord, by offset.
Transitions = Mapping[int, tuple[PartitionRegistration, PartitionRegistration]]


class Move(NamedTuple):
    """One partition change: the partition as it was and as it became. A named tuple, not a
    frozen dataclass: a large commit makes one per changed partition, and a frozen dataclass's
    constructor (one `object.__setattr__` per field) cost several times a tuple's."""

    topic_id: str
    topic_name: str
    partition: int
    previous_leader: int
    leader: int
    previous_isr: tuple[int, ...]
    isr: tuple[int, ...]
    offline_added: tuple[int, ...]  # replicas this change marked offline (a failed log dir)
    offline_cleared: tuple[int, ...]  # offline replicas it brought back (or forgot)

    @property
    def leader_changed(self) -> bool:
        return self.leader != self.previous_leader

    @property
    def unclean(self) -> bool:
        """A new leader from outside the ISR it had: Kafka's unclean leader election."""
        return (
            self.leader_changed
            and self.leader != NO_LEADER
            and (self.leader not in self.previous_isr)
        )

    @property
    def went_leaderless(self) -> bool:
        return self.leader == NO_LEADER and self.previous_leader != NO_LEADER


@dataclasses.dataclass(slots=True)
class WriteFacts:
    """What one write's records did."""

    registered: list[tuple[int, int, bool]] = dataclasses.field(default_factory=list)
    fenced: list[int] = dataclasses.field(default_factory=list)
    shut_down: list[int] = dataclasses.field(default_factory=list)  # fenced after a controlled one
    unfenced: list[int] = dataclasses.field(default_factory=list)
    shutting_down: list[int] = dataclasses.field(default_factory=list)
    unregistered: list[int] = dataclasses.field(default_factory=list)
    # broker -> (offline log dirs before, after)
    log_dirs: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = dataclasses.field(
        default_factory=dict
    )
    # Brokers holding replicas whose heartbeat named a dir offline: AlterReplicaState reports
    # (or reported) that failure's replicas, before or after the heartbeat (the report waits
    # for the controller; the heartbeat does not): the same failure, one incident.
    failure_told: set[int] = dataclasses.field(default_factory=set)
    moves: list[Move] = dataclasses.field(default_factory=list)
    created_topics: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    removed_topics: dict[str, int] = dataclasses.field(default_factory=dict)  # name -> partitions
    added_partitions: dict[str, int] = dataclasses.field(default_factory=dict)
    configs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    acls_created: list[dict[str, str]] = dataclasses.field(default_factory=list)
    acls_deleted: list[dict[str, str]] = dataclasses.field(default_factory=list)
    quotas: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    tokens_created: list[str] = dataclasses.field(default_factory=list)
    tokens_removed: list[str] = dataclasses.field(default_factory=list)
    # SCRAM credentials set or deleted: (user, mechanism, set); never a salt or a key.
    scram: list[tuple[str, str, bool]] = dataclasses.field(default_factory=list)

    # The moves' tally, counted once when first asked (the moves are complete by then).
    tally: MoveTally | None = dataclasses.field(default=None, repr=False, compare=False)

    def counted(self) -> MoveTally:
        if self.tally is None or self.tally.moves != len(self.moves):
            self.tally = MoveTally.of(self.moves)
        return self.tally

    @property
    def leaders_moved(self) -> int:
        return self.counted().leaders_moved

    @property
    def left_leaderless(self) -> int:
        return self.counted().left_leaderless

    @property
    def unclean(self) -> list[Move]:
        return self.counted().unclean

    def isr_departures(self) -> int:
        """Replicas taken out of an ISR."""
        return self.counted().isr_departures


@dataclasses.dataclass(frozen=True, slots=True)
class MoveTally:
    """What a write's moves add up to, in one pass over them (a large commit's write has one
    move per changed partition, and a timeline entry asks for each figure more than once)."""

    moves: int
    leaders_moved: int
    left_leaderless: int
    isr_departures: int
    unclean: list[Move]

    @classmethod
    def of(cls, moves: Sequence[Move]) -> MoveTally:
        leaders_moved = left_leaderless = departures = 0
        unclean: list[Move] = []
        for m in moves:
            previous_isr, isr = m.previous_isr, m.isr
            if previous_isr != isr:
                departures += sum(1 for r in previous_isr if r not in isr)
            if m.leader != m.previous_leader:
                if m.leader != NO_LEADER:
                    leaders_moved += 1
                    if m.leader not in previous_isr:
                        unclean.append(m)
                elif m.previous_leader != NO_LEADER:
                    left_leaderless += 1
        return cls(len(moves), leaders_moved, left_leaderless, departures, unclean)


def _acl_text(acl: AccessControlEntryRecord) -> dict[str, str]:
    return {
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation,
        "permission_type": acl.permission_type,
        "resource": f"{acl.resource_type}:{acl.resource_name} ({acl.pattern_type})",
        "resource_type": acl.resource_type,
        "resource_name": acl.resource_name,
    }


class CommitWalk:
    """Replays a commit's records over the image they were committed on, write by write."""

    def __init__(
        self,
        base: MetadataImage,
        replayed: Sequence[tuple[int, Record]],
        transitions: Transitions | None = None,
    ) -> None:
        self.base = base
        self.replayed = replayed
        self.transitions = transitions or {}
        self.offset = -1  # of the record being noted
        self.first_offset = replayed[0][0] if replayed else base.last_offset + 1
        self.partitions: dict[TopicPartition, PartitionRegistration | None] = {}
        # Partitions the walk created and did not change since: their registrations are built
        # only when a later change without a known transition asks (a topic's creation is
        # most of a large commit, and the replay built each registration already).
        self.created: dict[TopicPartition, PartitionRecord] = {}
        self.topic_names: dict[str, str] = {}  # topic id -> name, as of now in the walk
        self.partition_counts: dict[str, int] = {}
        self.offline_dirs: dict[int, tuple[str, ...]] = {}
        self.acls: dict[str, AccessControlEntryRecord | None] = {}

    def records(self, first_offset: int, last_offset: int) -> Sequence[tuple[int, Record]]:
        start = first_offset - self.first_offset
        return self.replayed[max(0, start) : max(0, last_offset - self.first_offset + 1)]

    def facts(self, first_offset: int, last_offset: int) -> WriteFacts:
        facts = WriteFacts()
        for offset, record in self.records(first_offset, last_offset):
            self.offset = offset
            self._note(record, facts)
        return facts

    # --- state as of the walk ---------------------------------------------------------------
    def partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        if tp in self.partitions:
            return self.partitions[tp]
        record = self.created.get(tp)
        if record is not None:
            return PartitionRegistration.from_record(record)
        return self.base.partitions.get(tp)

    def topic_name(self, topic_id: str) -> str:
        if topic_id in self.topic_names:
            return self.topic_names[topic_id]
        topic = self.base.topics.get(topic_id)
        return topic.name if topic is not None else topic_id

    def partition_count(self, topic_id: str) -> int:
        if topic_id in self.partition_counts:
            return self.partition_counts[topic_id]
        topic = self.base.topics.get(topic_id)
        return topic.partition_count if topic is not None else 0

    def broker_offline_dirs(self, broker_id: int) -> tuple[str, ...]:
        if broker_id in self.offline_dirs:
            return self.offline_dirs[broker_id]
        broker = self.base.brokers.get(broker_id)
        return broker.offline_log_dirs if broker is not None else ()

    def acl(self, acl_id: str) -> AccessControlEntryRecord | None:
        if acl_id in self.acls:
            return self.acls[acl_id]
        return self.base.acls.get(acl_id)

    # --- one record ---------------------------------------------------------------------
    def _note(self, record: Record, facts: WriteFacts) -> None:
        handler = _NOTES.get(type(record))
        if handler is not None:
            handler(self, record, facts)

    def _register(self, record: RegisterBrokerRecord, facts: WriteFacts) -> None:
        again = record.broker_id in self.base.brokers or record.broker_id in self.offline_dirs
        facts.registered.append((record.broker_id, record.broker_epoch, again))
        before = self.broker_offline_dirs(record.broker_id)
        if before:
            facts.log_dirs[record.broker_id] = (before, ())
        self.offline_dirs[record.broker_id] = ()

    def _broker_change(self, record: BrokerRegistrationChangeRecord, facts: WriteFacts) -> None:
        broker_id = record.broker_id
        if record.fenced == FencingChange.FENCE:
            facts.fenced.append(broker_id)
            registration = self.base.brokers.get(broker_id)
            if registration is not None and registration.in_controlled_shutdown:
                facts.shut_down.append(broker_id)
        elif record.fenced == FencingChange.UNFENCE:
            facts.unfenced.append(broker_id)
        if record.in_controlled_shutdown == ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN:
            facts.shutting_down.append(broker_id)
        if record.offline_log_dirs is not None:
            dirs_before = facts.log_dirs.get(broker_id, (self.broker_offline_dirs(broker_id), ()))[
                0
            ]
            facts.log_dirs[broker_id] = (dirs_before, tuple(record.offline_log_dirs))
            self.offline_dirs[broker_id] = tuple(record.offline_log_dirs)
            if self.base.broker_has_replicas(broker_id):  # not the whole index: O(1)
                facts.failure_told.add(broker_id)

    def _unregister(self, record: UnregisterBrokerRecord, facts: WriteFacts) -> None:
        facts.unregistered.append(record.broker_id)
        self.offline_dirs[record.broker_id] = ()

    def _topic(self, record: TopicRecord, facts: WriteFacts) -> None:
        self.topic_names[record.topic_id] = record.name
        self.partition_counts[record.topic_id] = 0
        facts.created_topics[record.name] = [0, 0]  # partitions, replication factor

    def _new_partition(self, record: PartitionRecord, facts: WriteFacts) -> None:
        tp = (record.topic_id, record.partition_id)
        self.partitions.pop(tp, None)
        self.created[tp] = record
        self.partition_counts[record.topic_id] = record.partition_id + 1
        name = self.topic_name(record.topic_id)
        created = facts.created_topics.get(name)
        if created is not None:
            created[0] += 1
            created[1] = max(created[1], len(record.replicas))
        else:
            facts.added_partitions[name] = facts.added_partitions.get(name, 0) + 1

    def _partition_change(self, record: PartitionChangeRecord, facts: WriteFacts) -> None:
        tp = (record.topic_id, record.partition_id)
        known = self.transitions.get(self.offset)
        if known is not None:
            before, after = known
        else:
            found = self.partition(tp)
            if found is None:
                return
            before, after = found, found.merge(record)
        self.partitions[tp] = after
        was_offline, offline = before.offline_replicas, after.offline_replicas
        added: tuple[int, ...] = ()
        cleared: tuple[int, ...] = ()
        if was_offline != offline:  # most moves: nothing went offline or came back
            added = tuple(b for b in offline if b not in was_offline)
            cleared = tuple(b for b in was_offline if b not in offline)
        # By position: a large commit makes one per changed partition, and keywords cost more.
        facts.moves.append(
            Move(
                record.topic_id,
                self.topic_name(record.topic_id),
                record.partition_id,
                before.leader,
                after.leader if record.leader != NO_LEADER_CHANGE else before.leader,
                before.isr,
                after.isr,
                added,
                cleared,
            )
        )

    def _remove_topic(self, record: RemoveTopicRecord, facts: WriteFacts) -> None:
        name = self.topic_name(record.topic_id)
        facts.removed_topics[name] = self.partition_count(record.topic_id)
        for index in range(self.partition_count(record.topic_id)):
            self.partitions[(record.topic_id, index)] = None

    def _config(self, record: ConfigRecord, facts: WriteFacts) -> None:
        value = record.value
        if value is not None and is_sensitive(record.resource_type, record.name):
            value = REDACTED
        facts.configs.append(
            {
                "resource_type": record.resource_type,
                "resource_name": record.resource_name,
                "name": record.name,
                "value": value,
            }
        )

    def _acl(self, record: AccessControlEntryRecord, facts: WriteFacts) -> None:
        self.acls[record.id] = record
        facts.acls_created.append(_acl_text(record))

    def _remove_acl(self, record: RemoveAccessControlEntryRecord, facts: WriteFacts) -> None:
        acl = self.acl(record.id)
        self.acls[record.id] = None
        if acl is not None:
            facts.acls_deleted.append(_acl_text(acl))

    def _quota(self, record: ClientQuotaRecord, facts: WriteFacts) -> None:
        entity = ", ".join(
            f"{kind}={'<default>' if name is None else name}" for kind, name in record.entity
        )
        facts.quotas.append(
            {"entity": entity, "key": record.key, "value": None if record.remove else record.value}
        )

    def _token(self, record: DelegationTokenRecord, facts: WriteFacts) -> None:
        facts.tokens_created.append(record.token_id)

    def _remove_token(self, record: RemoveDelegationTokenRecord, facts: WriteFacts) -> None:
        facts.tokens_removed.append(record.token_id)

    def _scram(self, record: UserScramCredentialRecord, facts: WriteFacts) -> None:
        facts.scram.append((record.name, record.mechanism, True))

    def _remove_scram(self, record: RemoveUserScramCredentialRecord, facts: WriteFacts) -> None:
        facts.scram.append((record.name, record.mechanism, False))


_NOTES: dict[type[Record], Any] = {
    RegisterBrokerRecord: CommitWalk._register,
    BrokerRegistrationChangeRecord: CommitWalk._broker_change,
    UnregisterBrokerRecord: CommitWalk._unregister,
    TopicRecord: CommitWalk._topic,
    PartitionRecord: CommitWalk._new_partition,
    PartitionChangeRecord: CommitWalk._partition_change,
    RemoveTopicRecord: CommitWalk._remove_topic,
    ConfigRecord: CommitWalk._config,
    AccessControlEntryRecord: CommitWalk._acl,
    RemoveAccessControlEntryRecord: CommitWalk._remove_acl,
    ClientQuotaRecord: CommitWalk._quota,
    DelegationTokenRecord: CommitWalk._token,
    RemoveDelegationTokenRecord: CommitWalk._remove_token,
    UserScramCredentialRecord: CommitWalk._scram,
    RemoveUserScramCredentialRecord: CommitWalk._remove_scram,
}
