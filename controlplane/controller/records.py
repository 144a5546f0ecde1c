"""Metadata records: the typed changes the controller writes to the metadata log.

Names and fields follow Kafka's KRaft metadata records (snake_case). A record is pure data; the
log adds its offset, the controller epoch, a timestamp and who asked for it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import msgspec

from controlplane.controller.frozen import quick_init
from controlplane.controller.int_lists import json_array


class FencingChange(enum.IntEnum):
    """Kafka's BrokerRegistrationFencingChange."""

    UNFENCE = -1
    NONE = 0
    FENCE = 1


class ControlledShutdownChange(enum.IntEnum):
    """Kafka's BrokerRegistrationInControlledShutdownChange."""

    NONE = 0
    IN_CONTROLLED_SHUTDOWN = 1


NO_OFFSET = -1  # no offset yet: an empty log, a broker that is not shutting down


@dataclasses.dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    TYPE: ClassVar[str] = ""

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = _jsonable(dataclasses.asdict(self))
        return data

    def to_json(self) -> str:
        """The record's data as compact JSON (what the metadata log stores), encoded by msgspec
        straight from the fields: no dict is built per record (`to_data` is the same data as
        Python values; `tests/unit/test_record_encoding.py` holds them equal)."""
        return _ENCODE_FIELDS(self).decode()


@dataclasses.dataclass(frozen=True, slots=True)
class RegisterBrokerRecord(Record):
    TYPE: ClassVar[str] = "RegisterBrokerRecord"
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    listeners: tuple[Listener, ...]
    rack: str | None
    pod: str
    log_dirs: tuple[str, ...]
    fenced: bool = True
    in_controlled_shutdown: bool = False
    software_version: str | None = None  # what the broker reported running (KIP-1095 rollouts)
    # Where its controlled shutdown began, when a snapshot registers a broker that is shutting
    # down (the log's registrations never are: NO_OFFSET).
    controlled_shutdown_offset: int = NO_OFFSET
    # The feature levels the broker supports, (name, min, max), as its registration listed them
    # (Kafka's RegisterBrokerRecord.Features): what UpdateFeatures checks a new level against.
    features: tuple[tuple[str, int, int], ...] = ()
    # KIP-1066: its cordoned log dirs (None until its heartbeats name them; a snapshot's
    # registration carries them).
    cordoned_log_dirs: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord(Record):
    TYPE: ClassVar[str] = "BrokerRegistrationChangeRecord"
    broker_id: int
    broker_epoch: int
    fenced: int = FencingChange.NONE
    in_controlled_shutdown: int = ControlledShutdownChange.NONE
    # The log dirs the broker's heartbeats report offline (Kafka's OfflineLogDirs, KIP-858),
    # sorted; None leaves them unchanged. Kafka's v2 record keeps the online ones instead.
    offline_log_dirs: tuple[str, ...] | None = None
    # KIP-1066 (metadata.version 4.3-IV0): the log dirs the broker's heartbeats say are
    # cordoned (no new replica goes there), sorted; None leaves them unchanged.
    cordoned_log_dirs: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord(Record):
    TYPE: ClassVar[str] = "UnregisterBrokerRecord"
    broker_id: int
    broker_epoch: int


@dataclasses.dataclass(frozen=True, slots=True)
class AccessControlEntryRecord(Record):
    TYPE: ClassVar[str] = "AccessControlEntryRecord"
    id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord(Record):
    TYPE: ClassVar[str] = "RemoveAccessControlEntryRecord"
    id: str


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
_ENCODE_FIELDS = msgspec.json.Encoder().encode


def _int_list(values: tuple[int, ...] | None) -> str:
    return "null" if values is None else json_array(values)


def _optional_bool(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")


def _directories_field(directories: tuple[str, ...]) -> str:
    """`,"directories":[...]`, for a record that has them to say (see `to_data`)."""
    return f',"directories":{_ENCODE(list(directories))}'


def _reassignment_fields(adding: tuple[int, ...], removing: tuple[int, ...]) -> str:
    """A PartitionRecord's reassignment, for one that has one in progress (see `to_data`)."""
    if not adding and not removing:
        return ""
    return f',"adding_replicas":{_int_list(adding)},"removing_replicas":{_int_list(removing)}'


def _optional_list_field(name: str, values: tuple[int, ...] | None) -> str:
    return "" if values is None else f',"{name}":{_int_list(values)}'


NO_LEADER = -1
# Kafka's DirectoryId.LOST, Uuid(0, 2) (KIP-858; 1 is UNASSIGNED, 0 MIGRATING): the failed dir
# of an AlterReplicaState that names none.
LOST_DIRECTORY = "00000000-0000-0000-0000-000000000002"
MIGRATING_DIRECTORY = "00000000-0000-0000-0000-000000000000"  # placed before 3.7-IV2: unknown
UNASSIGNED_DIRECTORY = "00000000-0000-0000-0000-000000000001"  # the broker picks one


def default_log_dir(log_dirs: tuple[str, ...] | None) -> str:
    """Where a new replica on a broker registered with `log_dirs` (None: not registered) goes
    until it says otherwise, as Kafka's ClusterControlManager.defaultDir decides: its only dir;
    UNASSIGNED when it has several (it answers with AssignReplicasToDirs) or is not registered;
    MIGRATING when it listed none."""
    if log_dirs is None or len(log_dirs) > 1:
        return UNASSIGNED_DIRECTORY
    return log_dirs[0] if log_dirs else MIGRATING_DIRECTORY


NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader when the leader stays


@dataclasses.dataclass(frozen=True, slots=True)
class TopicRecord(Record):
    TYPE: ClassVar[str] = "TopicRecord"
    name: str
    topic_id: str


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRecord(Record):
    """A new partition. `offline_replicas` are replicas in OfflineReplica state (KIP-589);
    `is_canary` is fixed at creation and `canary_isolated` says every replica is on a canary
    broker (KIP-1095); `adding_replicas` and `removing_replicas` are a reassignment in progress
    (KIP-455: `replicas` is then the target and the replicas leaving), as a snapshot holds it."""

    TYPE: ClassVar[str] = "PartitionRecord"
    partition_id: int
    topic_id: str
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    offline_replicas: tuple[int, ...] = ()
    is_canary: bool = False
    canary_isolated: bool = False
    # The log dir of each replica, in `replicas`' order, once brokers assigned them
    # (AssignReplicasToDirs); () until then: each replica in its broker's default dir.
    directories: tuple[str, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    def to_data(self) -> dict[str, Any]:
        # Hot: a large topic writes thousands of these; dataclasses.asdict is too slow.
        data = {
            "partition_id": self.partition_id,
            "topic_id": self.topic_id,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "offline_replicas": list(self.offline_replicas),
            "is_canary": self.is_canary,
            "canary_isolated": self.canary_isolated,
        }
        if self.directories:  # written only when assigned: a million new partitions stay small
            data["directories"] = list(self.directories)
        if self.adding_replicas or self.removing_replicas:  # only while a reassignment runs
            data["adding_replicas"] = list(self.adding_replicas)
            data["removing_replicas"] = list(self.removing_replicas)
        return data

    def to_json(self) -> str:
        # Hot (thousands per large topic); the same text json would write, built directly.
        return (
            f'{{"partition_id":{self.partition_id},"topic_id":{_ENCODE(self.topic_id)},'
            f'"replicas":{_int_list(self.replicas)},"isr":{_int_list(self.isr)},'
            f'"leader":{self.leader},"leader_epoch":{self.leader_epoch},'
            f'"partition_epoch":{self.partition_epoch},'
            f'"offline_replicas":{_int_list(self.offline_replicas)},'
            f'"is_canary":{"true" if self.is_canary else "false"},'
            f'"canary_isolated":{"true" if self.canary_isolated else "false"}'
            f"{_directories_field(self.directories) if self.directories else ''}"
            f"{_reassignment_fields(self.adding_replicas, self.removing_replicas)}}}"
        )


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class PartitionChangeRecord(Record):
    """A change to a partition; None (or NO_LEADER_CHANGE) means "unchanged".

    Replaying it bumps the partition epoch, and the leader epoch when `leader` is set.
    """

    TYPE: ClassVar[str] = "PartitionChangeRecord"
    partition_id: int
    topic_id: str
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    offline_replicas: tuple[int, ...] | None = None
    canary_isolated: bool | None = None  # set when the replicas' brokers change (KIP-1095)
    # Every replica's log dir, in the (new) replicas' order, as Kafka's PartitionChangeRecord
    # carries them; None: unchanged (a change of `replicas` without them: the default dirs).
    directories: tuple[str, ...] | None = None
    # A reassignment's replicas being added and removed (KIP-455), as Kafka's record carries
    # them; None: unchanged, () when a reassignment completes or is cancelled.
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None

    def to_data(self) -> dict[str, Any]:
        data = {
            "partition_id": self.partition_id,
            "topic_id": self.topic_id,
            "isr": None if self.isr is None else list(self.isr),
            "leader": self.leader,
            "replicas": None if self.replicas is None else list(self.replicas),
            "offline_replicas": None
            if self.offline_replicas is None
            else list(self.offline_replicas),
            "canary_isolated": self.canary_isolated,
        }
        if self.directories is not None:  # only when they change: elections stay small
            data["directories"] = list(self.directories)
        if self.adding_replicas is not None:  # only when a reassignment changes them
            data["adding_replicas"] = list(self.adding_replicas)
        if self.removing_replicas is not None:
            data["removing_replicas"] = list(self.removing_replicas)
        return data

    def to_json(self) -> str:
        return (
            f'{{"partition_id":{self.partition_id},"topic_id":{_ENCODE(self.topic_id)},'
            f'"isr":{_int_list(self.isr)},"leader":{self.leader},'
            f'"replicas":{_int_list(self.replicas)},'
            f'"offline_replicas":{_int_list(self.offline_replicas)},'
            f'"canary_isolated":{_optional_bool(self.canary_isolated)}'
            f"{'' if self.directories is None else _directories_field(self.directories)}"
            f"{_optional_list_field('adding_replicas', self.adding_replicas)}"
            f"{_optional_list_field('removing_replicas', self.removing_replicas)}}}"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveTopicRecord(Record):
    TYPE: ClassVar[str] = "RemoveTopicRecord"
    topic_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigRecord(Record):
    """A dynamic config; `value` None deletes it. Resource types by Kafka's name (TOPIC, BROKER)."""

    TYPE: ClassVar[str] = "ConfigRecord"
    resource_type: str
    resource_name: str
    name: str
    value: str | None


QuotaEntity = tuple[tuple[str, str | None], ...]  # ((entity type, name or None), ...)


@dataclasses.dataclass(frozen=True, slots=True)
class ClientQuotaRecord(Record):
    """Kafka's ClientQuotaRecord: one quota key of one entity; `remove` deletes the key.

    `entity` pairs an entity type ("user", "client-id", "ip") with a name, None for the default
    entity, sorted by type."""

    TYPE: ClassVar[str] = "ClientQuotaRecord"
    entity: QuotaEntity
    key: str
    value: float = 0.0
    remove: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class DelegationTokenRecord(Record):
    """Kafka's DelegationTokenRecord: a token created or renewed. Principals are "Type:name".

    The HMAC is not stored: it is HMAC-SHA512(token id) keyed with delegation.token.secret.key,
    recomputable (as Kafka's DelegationTokenManager does)."""

    TYPE: ClassVar[str] = "DelegationTokenRecord"
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveDelegationTokenRecord(Record):
    """Kafka's RemoveDelegationTokenRecord: a token expired (or was expired) and is gone."""

    TYPE: ClassVar[str] = "RemoveDelegationTokenRecord"
    token_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class FeatureLevelRecord(Record):
    """Kafka's FeatureLevelRecord: a finalized feature's level (`metadata.version` first); level
    0 removes the feature. A new cluster's log starts with them, as Kafka's bootstrap does."""

    TYPE: ClassVar[str] = "FeatureLevelRecord"
    name: str
    feature_level: int


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerIdsRecord(Record):
    """Kafka's ProducerIdsRecord: the next producer id block starts at `next_producer_id`,
    handed to `broker_id` at `broker_epoch` (AllocateProducerIds)."""

    TYPE: ClassVar[str] = "ProducerIdsRecord"
    broker_id: int
    broker_epoch: int
    next_producer_id: int


RECORD_TYPES: dict[str, type[Record]] = {
    cls.TYPE: cls
    for cls in (
        RegisterBrokerRecord,
        BrokerRegistrationChangeRecord,
        UnregisterBrokerRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        RemoveTopicRecord,
        ConfigRecord,
        ClientQuotaRecord,
        DelegationTokenRecord,
        RemoveDelegationTokenRecord,
        FeatureLevelRecord,
        ProducerIdsRecord,
    )
}

R = TypeVar("R", bound=Record)


class UnknownRecordType(ValueError):
    pass


def register_record_type(cls: type[R]) -> type[R]:
    """Later capabilities (topics, configs, ...) add their record types here."""
    RECORD_TYPES[cls.TYPE] = cls
    return cls


def record_from_data(record_type: str, data: Mapping[str, Any]) -> Record:
    try:
        cls = RECORD_TYPES[record_type]
    except KeyError:
        raise UnknownRecordType(f"Unknown metadata record type {record_type!r}") from None
    decode = getattr(cls, "from_data", None)  # a record type with nested fields decodes itself
    if decode is not None:
        return decode(data)  # type: ignore[no-any-return]
    if cls is RegisterBrokerRecord:
        fields = dict(data)
        fields["listeners"] = tuple(Listener(**item) for item in data["listeners"])
        fields["log_dirs"] = tuple(data["log_dirs"])
        fields["features"] = tuple(
            (str(name), int(low), int(high)) for name, low, high in data.get("features", ())
        )
        cordoned = data.get("cordoned_log_dirs")
        fields["cordoned_log_dirs"] = None if cordoned is None else tuple(cordoned)
        return RegisterBrokerRecord(**fields)
    if cls is ClientQuotaRecord:
        fields = dict(data)
        fields["entity"] = tuple((str(t), n) for t, n in data["entity"])
        fields["value"] = float(data.get("value", 0.0))
        return ClientQuotaRecord(**fields)
    # JSON carries tuples as lists.
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value
