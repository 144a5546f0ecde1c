"""House records as their Kafka twins (controlplane.controller.kraft.twins): every house record
type with a twin, at every metadata.version a 4.x broker reads, decodes back to what Kafka's
record says about it; the rest become a NoOpRecord."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.acls.bindings import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.kraft import (
    METADATA_VERSIONS,
    BrokerDirectories,
    decode_metadata_value,
    kafka_record,
    kafka_uuid,
    metadata_version,
)
from controlplane.controller.kraft.twins import (
    MIGRATING_DIRECTORY,
    TWINNED_RECORD_TYPES,
    UNASSIGNED_DIRECTORY,
    spec_kafka_record,
)
from controlplane.controller.kraft.versions import UnsupportedMetadataVersion
from controlplane.controller.mirror_records import MirrorMakerConfigRecord
from controlplane.controller.records import (
    RECORD_TYPES,
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    Record,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)

LEVELS = st.sampled_from(sorted(METADATA_VERSIONS))
IDS = st.uuids().map(str)
TEXT = st.text(max_size=10)
BROKERS = st.integers(0, 2**31 - 1)
EPOCHS = st.integers(0, 2**62)
BROKER_LISTS = st.lists(BROKERS, max_size=4).map(tuple)
PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
LISTENERS = st.builds(
    Listener, TEXT, TEXT, st.integers(0, 65535), st.sampled_from(sorted(PROTOCOLS))
)
REGISTRATIONS = st.builds(
    RegisterBrokerRecord,
    broker_id=BROKERS,
    incarnation_id=IDS,
    broker_epoch=EPOCHS,
    listeners=st.lists(LISTENERS, max_size=3).map(tuple),
    rack=st.none() | TEXT,
    pod=st.sampled_from(["broker", "canary"]),
    log_dirs=st.lists(IDS, max_size=3).map(tuple),
    fenced=st.booleans(),
    in_controlled_shutdown=st.booleans(),
    features=st.lists(
        st.tuples(
            st.sampled_from(["metadata.version", "kraft.version", "group.version"]),
            st.integers(0, 7),
            st.integers(7, 33),
        ),
        max_size=3,
        unique_by=lambda f: f[0],
    ).map(tuple),
)
CHANGES = st.builds(
    BrokerRegistrationChangeRecord,
    broker_id=BROKERS,
    broker_epoch=EPOCHS,
    fenced=st.sampled_from([-1, 0, 1]),
    in_controlled_shutdown=st.sampled_from([0, 1]),
    offline_log_dirs=st.none() | st.lists(IDS, max_size=2).map(tuple),
)


def with_directories(record: Any, unassigned: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`record` as it is (`unassigned` directories) or with a directory per replica (the
    replicas it changes to, or all of them)."""
    replicas = getattr(record, "replicas", None)
    if replicas is None:
        return unassigned.map(lambda dirs: dataclasses.replace(record, directories=dirs))
    assigned = st.lists(IDS, min_size=len(replicas), max_size=len(replicas)).map(tuple)
    return (unassigned | assigned).map(lambda dirs: dataclasses.replace(record, directories=dirs))


PARTITIONS = st.builds(
    PartitionRecord,
    partition_id=st.integers(0, 2**31 - 1),
    topic_id=IDS,
    replicas=BROKER_LISTS,
    isr=BROKER_LISTS,
    leader=st.integers(-1, 2**31 - 1),
    leader_epoch=st.integers(0, 2**31 - 1),
    partition_epoch=st.integers(0, 2**31 - 1),
    offline_replicas=BROKER_LISTS,
    is_canary=st.booleans(),
    canary_isolated=st.booleans(),
    adding_replicas=BROKER_LISTS,
    removing_replicas=BROKER_LISTS,
).flatmap(lambda record: with_directories(record, st.just(())))
PARTITION_CHANGES = st.builds(
    PartitionChangeRecord,
    partition_id=st.integers(0, 2**31 - 1),
    topic_id=IDS,
    isr=st.none() | BROKER_LISTS,
    leader=st.integers(-2, 2**31 - 1),
    replicas=st.none() | BROKER_LISTS,
    offline_replicas=st.none() | BROKER_LISTS,
    canary_isolated=st.none() | st.booleans(),
    adding_replicas=st.none() | BROKER_LISTS,
    removing_replicas=st.none() | BROKER_LISTS,
).flatmap(lambda record: with_directories(record, st.none()))
ACLS = st.builds(
    AccessControlEntryRecord,
    id=IDS,
    resource_type=st.sampled_from([t.name for t in ResourceType]),
    resource_name=TEXT,
    pattern_type=st.sampled_from([t.name for t in PatternType]),
    principal=TEXT,
    host=TEXT,
    operation=st.sampled_from([t.name for t in AclOperation]),
    permission_type=st.sampled_from([t.name for t in AclPermissionType]),
)
TOKENS = st.builds(
    DelegationTokenRecord,
    token_id=IDS,
    owner=TEXT,
    requester=TEXT,
    renewers=st.lists(TEXT, max_size=3).map(tuple),
    issue_timestamp=EPOCHS,
    max_timestamp=EPOCHS,
    expiration_timestamp=EPOCHS,
)
QUOTAS = st.builds(
    ClientQuotaRecord,
    entity=st.lists(
        st.tuples(st.sampled_from(["user", "client-id", "ip"]), st.none() | TEXT), max_size=2
    ).map(tuple),
    key=TEXT,
    value=st.floats(allow_nan=False),
    remove=st.booleans(),
)
HOUSE_RECORDS: st.SearchStrategy[Record] = st.one_of(
    REGISTRATIONS,
    CHANGES,
    st.builds(UnregisterBrokerRecord, BROKERS, EPOCHS),
    st.builds(TopicRecord, TEXT, IDS),
    PARTITIONS,
    PARTITION_CHANGES,
    st.builds(RemoveTopicRecord, IDS),
    st.builds(ConfigRecord, st.sampled_from(["TOPIC", "BROKER"]), TEXT, TEXT, st.none() | TEXT),
    QUOTAS,
    TOKENS,
    st.builds(RemoveDelegationTokenRecord, IDS),
    st.builds(FeatureLevelRecord, TEXT, st.integers(0, 2**15 - 1)),
    st.builds(ProducerIdsRecord, BROKERS, EPOCHS, st.integers(0, 2**62)),
    ACLS,
    st.builds(RemoveAccessControlEntryRecord, IDS),
)


def expected(
    record: Record, level: int, dirs: BrokerDirectories
) -> tuple[str, int, dict[str, Any]]:
    """What Kafka's record at `level` says about `record` (the fields that carry it)."""
    mv = METADATA_VERSIONS[level]
    u = kafka_uuid
    match record:
        case RegisterBrokerRecord():
            fields: dict[str, Any] = {
                "BrokerId": record.broker_id,
                "IncarnationId": u(record.incarnation_id),
                "BrokerEpoch": record.broker_epoch,
                "EndPoints": [
                    {"Name": x.name, "Host": x.host, "Port": x.port}
                    | {"SecurityProtocol": PROTOCOLS[x.security_protocol]}
                    for x in record.listeners
                ],
                "Features": [
                    {"Name": name, "MinSupportedVersion": low, "MaxSupportedVersion": high}
                    for name, low, high in record.features or (("metadata.version", 7, level),)
                ],
                "Rack": record.rack,
                "Fenced": record.fenced,
                "InControlledShutdown": record.in_controlled_shutdown,
            }
            if level >= 17:
                fields["LogDirs"] = [u(d) for d in record.log_dirs]
            version = 4 if level >= 30 else 3 if level >= 17 else 2 if level >= 8 else 1
            return "RegisterBrokerRecord", version, fields
        case BrokerRegistrationChangeRecord():
            fields = {"BrokerId": record.broker_id, "BrokerEpoch": record.broker_epoch}
            fields["Fenced"] = int(record.fenced)
            version = 0
            if record.in_controlled_shutdown:
                fields["InControlledShutdown"] = 1
                version = 1
            return "BrokerRegistrationChangeRecord", version, fields  # no registration: no dirs
        case PartitionRecord():
            fields = {
                "PartitionId": record.partition_id,
                "TopicId": u(record.topic_id),
                "Replicas": list(record.replicas),
                "Isr": list(record.isr),
                "RemovingReplicas": list(record.removing_replicas),
                "AddingReplicas": list(record.adding_replicas),
                "Leader": record.leader,
                "LeaderRecoveryState": 0,
                "LeaderEpoch": record.leader_epoch,
                "PartitionEpoch": record.partition_epoch,
            }
            if level >= 17:
                fields["Directories"] = [u(d) for d in record.directories] or [
                    UNASSIGNED_DIRECTORY
                ] * len(record.replicas)
            return "PartitionRecord", mv.partition, fields
        case PartitionChangeRecord():
            fields = {
                "PartitionId": record.partition_id,
                "TopicId": u(record.topic_id),
                "Isr": None if record.isr is None else list(record.isr),
                "Leader": record.leader,
                "Replicas": None if record.replicas is None else list(record.replicas),
                "RemovingReplicas": None
                if record.removing_replicas is None
                else list(record.removing_replicas),
                "AddingReplicas": None
                if record.adding_replicas is None
                else list(record.adding_replicas),
                "LeaderRecoveryState": -1,
            }
            if level >= 17 and record.directories is not None:
                fields["Directories"] = [u(d) for d in record.directories]
            elif level >= 17:
                n = None if record.replicas is None else len(record.replicas)
                fields["Directories"] = None if n is None else [UNASSIGNED_DIRECTORY] * n
            return "PartitionChangeRecord", mv.partition, fields
        case ConfigRecord():
            code = {"TOPIC": 2, "BROKER": 4}[record.resource_type]
            fields = {"ResourceType": code, "ResourceName": record.resource_name}
            return "ConfigRecord", 0, fields | {"Name": record.name, "Value": record.value}
        case AccessControlEntryRecord():
            fields = {
                "Id": u(record.id),
                "ResourceType": ResourceType[record.resource_type].value,
                "ResourceName": record.resource_name,
                "PatternType": PatternType[record.pattern_type].value,
                "Principal": record.principal,
                "Host": record.host,
                "Operation": AclOperation[record.operation].value,
                "PermissionType": AclPermissionType[record.permission_type].value,
            }
            return "AccessControlEntryRecord", 0, fields
        case DelegationTokenRecord() | RemoveDelegationTokenRecord() if level < 14:
            return "NoOpRecord", 0, {}
        case DelegationTokenRecord():
            fields = {"Owner": record.owner, "Requester": record.requester}
            fields |= {"Renewers": list(record.renewers), "TokenId": record.token_id}
            fields |= {
                "IssueTimestamp": record.issue_timestamp,
                "MaxTimestamp": record.max_timestamp,
                "ExpirationTimestamp": record.expiration_timestamp,
            }
            return "DelegationTokenRecord", 0, fields
        case ClientQuotaRecord():
            entity = [{"EntityType": t, "EntityName": n} for t, n in record.entity]
            fields = {"Entity": entity, "Key": record.key, "Value": record.value}
            return "ClientQuotaRecord", 0, fields | {"Remove": record.remove}
    simple: dict[type[Record], tuple[str, dict[str, Any]]] = {
        UnregisterBrokerRecord: ("UnregisterBrokerRecord", {"BrokerId": 0, "BrokerEpoch": 0}),
        TopicRecord: ("TopicRecord", {"Name": 0, "TopicId": 0}),
        RemoveTopicRecord: ("RemoveTopicRecord", {"TopicId": 0}),
        RemoveDelegationTokenRecord: ("RemoveDelegationTokenRecord", {"TokenId": 0}),
        FeatureLevelRecord: ("FeatureLevelRecord", {"Name": 0, "FeatureLevel": 0}),
        ProducerIdsRecord: ("ProducerIdsRecord", {"BrokerId": 0, "BrokerEpoch": 0}),
        RemoveAccessControlEntryRecord: ("RemoveAccessControlEntryRecord", {"Id": 0}),
    }
    name, _ = simple[type(record)]
    values = list(record.to_data().values())
    decoded = decode_metadata_value(kafka_record(record, level, dirs).value).fields
    # Field by field in declaration order: ours and Kafka's follow the same order.
    kafka_values = [
        v if not isinstance(v, uuid.UUID) else str(v)
        for k, v in decoded.items()
        if k != "IsMigratingZkBroker"
    ]
    assert kafka_values == values
    return name, 0, {}


@settings(max_examples=400, deadline=None)
@given(HOUSE_RECORDS, LEVELS)
def test_every_twinned_house_record_says_the_same_in_kafkas_record(
    record: Record, level: int
) -> None:
    dirs = BrokerDirectories()
    name, version, fields = expected(record, level, dirs)
    decoded = decode_metadata_value(kafka_record(record, level, dirs).value)
    assert (decoded.name, decoded.version) == (name, version)
    assert {k: v for k, v in decoded.fields.items() if k in fields} == fields


SMALL_BROKERS = st.integers(0, 5)
DIRECTORY_STATES = st.dictionaries(
    SMALL_BROKERS, st.tuples(EPOCHS, st.lists(IDS, max_size=3).map(tuple)), max_size=6
)
SMALL_BROKER_LISTS = st.lists(SMALL_BROKERS, max_size=4).map(tuple)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        PARTITIONS,
        PARTITION_CHANGES,
        st.builds(
            PartitionRecord, st.integers(0, 9), IDS, SMALL_BROKER_LISTS, st.just(()), st.just(-1)
        ),
        st.builds(PartitionChangeRecord, st.integers(0, 9), IDS, replicas=SMALL_BROKER_LISTS),
    ),
    LEVELS,
    DIRECTORY_STATES,
)
def test_partition_records_are_framed_byte_for_byte_as_their_field_specs_frame_them(
    record: Record, level: int, registrations: dict[int, tuple[int, tuple[str, ...]]]
) -> None:
    """The partition records' own writers (kraft.partition_frames) against the spec-driven
    writer, with brokers registered with no, one or several dirs (a replica's default dir)."""
    dirs = BrokerDirectories(registrations)
    framed = kafka_record(record, level, dirs)
    assert framed == spec_kafka_record(record, level, dirs)


@pytest.mark.parametrize(
    "record",
    [
        PartitionRecord(0, str(uuid.uuid4()), (2**31,), (), 0),
        PartitionRecord(0, str(uuid.uuid4()), (1,), (1,), 1, leader_epoch=-(2**31) - 1),
        PartitionChangeRecord(0, str(uuid.uuid4()), isr=(2**31,)),
        PartitionChangeRecord(2**31, str(uuid.uuid4()), leader=1),
        PartitionChangeRecord(0, "not-an-id", leader=1),
    ],
)
def test_partition_records_out_of_kafkas_range_are_refused_as_the_specs_refuse_them(
    record: Record,
) -> None:
    with pytest.raises(ValueError):
        spec_kafka_record(record, 25)
    with pytest.raises(ValueError):
        kafka_record(record, 25)


def test_every_house_record_type_of_the_kafka_kind_has_a_twin() -> None:
    """A new house record type fails this until it is mapped in kraft.twins, or named here as
    house-only (served to brokers as a NoOpRecord)."""
    kafka_kinds = {name for name in RECORD_TYPES if not name.startswith("Mirror")}
    assert kafka_kinds - TWINNED_RECORD_TYPES == set()
    assert {"FeatureLevelRecord", "ProducerIdsRecord"} <= TWINNED_RECORD_TYPES


@pytest.mark.parametrize(
    "record",
    [
        MirrorMakerConfigRecord(text="clusters = a, b"),
        ConfigRecord("BROKER_LOGGER", "1", "kafka.server", "DEBUG"),
    ],
)
def test_records_without_a_twin_are_no_ops(record: Record) -> None:
    decoded = decode_metadata_value(kafka_record(record, 25).value)
    assert (decoded.name, decoded.api_key, decoded.fields) == ("NoOpRecord", 20, {})


def test_the_record_versions_follow_kafkas_metadata_versions() -> None:
    table = {
        level: (mv.name, mv.register_broker, mv.partition, mv.registration_change)
        for level, mv in METADATA_VERSIONS.items()
    }
    assert table[7] == ("3.3-IV3", 1, 0, 1)
    assert table[8] == ("3.4-IV0", 2, 0, 1)
    assert table[16] == ("3.7-IV1", 2, 0, 1)
    assert table[17] == ("3.7-IV2", 3, 1, 2)
    assert table[22] == ("4.0-IV0", 3, 1, 2)
    assert table[23] == ("4.0-IV1", 3, 2, 2)
    assert table[25] == ("4.0-IV3", 3, 2, 2)
    assert table[27] == ("4.1-IV1", 3, 2, 2)
    assert table[29] == ("4.2-IV1", 3, 2, 2)
    assert table[30] == ("4.3-IV0", 4, 2, 3)
    assert table[33] == ("4.4-IV2", 4, 2, 3)
    assert sorted(table) == list(range(7, 34))
    with pytest.raises(UnsupportedMetadataVersion):
        metadata_version(6)
    with pytest.raises(UnsupportedMetadataVersion):
        kafka_record(TopicRecord("t", str(uuid.uuid4())), 34)


def registered(broker_id: int, epoch: int, dirs: tuple[str, ...]) -> RegisterBrokerRecord:
    listener = Listener("PLAINTEXT", "h", 9092, "PLAINTEXT")
    return RegisterBrokerRecord(
        broker_id, str(uuid.uuid4()), epoch, (listener,), None, "broker", dirs
    )


def test_replica_directories_are_picked_as_kafkas_controller_picks_them() -> None:
    one, two = str(uuid.uuid4()), (str(uuid.uuid4()), str(uuid.uuid4()))
    dirs = BrokerDirectories()
    for record in (registered(1, 10, (one,)), registered(2, 11, two), registered(3, 12, ())):
        dirs.observe(record)
    partition = PartitionRecord(0, str(uuid.uuid4()), (1, 2, 3, 4), (1,), 1)
    decoded = decode_metadata_value(kafka_record(partition, 25, dirs).value).fields
    # the only dir; several: the broker picks; none listed; not registered
    assert decoded["Directories"] == [
        uuid.UUID(one),
        UNASSIGNED_DIRECTORY,
        MIGRATING_DIRECTORY,
        UNASSIGNED_DIRECTORY,
    ]
    change = PartitionChangeRecord(0, partition.topic_id, replicas=(3, 1))
    decoded = decode_metadata_value(kafka_record(change, 25, dirs).value).fields
    assert decoded["Directories"] == [MIGRATING_DIRECTORY, uuid.UUID(one)]
    dirs.observe(UnregisterBrokerRecord(1, 10))
    assert dirs.default_directory(1) == UNASSIGNED_DIRECTORY
    old = decode_metadata_value(kafka_record(partition, 16, dirs).value)
    assert old.version == 0 and "Directories" not in old.fields


def test_offline_log_dirs_become_the_online_ones() -> None:
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    dirs = BrokerDirectories({5: (40, (a, b, c))})

    def log_dirs(record: BrokerRegistrationChangeRecord, level: int = 25) -> Any:
        decoded = decode_metadata_value(kafka_record(record, level, dirs).value)
        return decoded.version, decoded.fields.get("LogDirs", [])

    assert log_dirs(BrokerRegistrationChangeRecord(5, 40, offline_log_dirs=(b,))) == (
        2,
        [uuid.UUID(a), uuid.UUID(c)],
    )
    # all back online: the whole list again (empty would mean "unchanged" to Kafka)
    assert log_dirs(BrokerRegistrationChangeRecord(5, 40, offline_log_dirs=())) == (
        2,
        [uuid.UUID(a), uuid.UUID(b), uuid.UUID(c)],
    )
    # every dir offline, another epoch's change, before 3.7-IV2: nothing Kafka can say
    assert log_dirs(BrokerRegistrationChangeRecord(5, 40, offline_log_dirs=(a, b, c))) == (0, [])
    assert log_dirs(BrokerRegistrationChangeRecord(5, 39, offline_log_dirs=(b,))) == (0, [])
    assert log_dirs(BrokerRegistrationChangeRecord(5, 40, offline_log_dirs=(b,)), 16) == (0, [])


def test_fencing_and_controlled_shutdown_keep_kafkas_codes() -> None:
    for fenced in (-1, 0, 1):
        record = BrokerRegistrationChangeRecord(1, 2, fenced=fenced, in_controlled_shutdown=1)
        decoded = decode_metadata_value(kafka_record(record, 25).value)
        assert decoded.version == 1
        assert (decoded.fields["Fenced"], decoded.fields["InControlledShutdown"]) == (fenced, 1)


def test_kafka_style_uuids_are_read_too() -> None:
    value = uuid.uuid4()
    kafka_form = base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    assert kafka_uuid(kafka_form) == kafka_uuid(str(value)) == value
    assert kafka_uuid("AAAAAAAAAAAAAAAAAAAAAQ") == UNASSIGNED_DIRECTORY
    with pytest.raises(ValueError, match="neither"):
        kafka_uuid("orders")
