"""Each house record as its Kafka twin at a metadata.version; a NoOpRecord when it has none.

One log, one set of offsets: a house record Kafka has no twin for (MirrorMaker's records, a
BROKER_LOGGER config, anything registered later without a mapping here) is served to brokers as
a NoOpRecord at the same offset, which brokers replay as nothing.

What Kafka's records carry that ours do not, or the other way round:

- Ids: ours are UUID strings (canonical, as `ControllerEnv.new_uuid` makes them; Kafka's
  URL-safe base64 form is read too); Kafka's are 16 bytes.
- RegisterBrokerRecord: Features is the metadata.version range a broker supports (from 7, the
  oldest a 4.x broker reads, to the cluster's level: the house's brokers report none, and Kafka's
  controller records a missing range as the broker's); `pod`, `software_version` and the
  controlled shutdown offset have no twin fields.
- PartitionRecord: Kafka has no offline replicas and no canary flags (KIP-1095): dropped.
  A reassignment's adding and removing replicas (KIP-455) are Kafka's own fields, on both
  partition records.
  Directories, one per replica, as Kafka's controller picks them (ClusterControlManager
  .defaultDir): the broker's only log dir when its registration lists one, UNASSIGNED when it
  lists several (the broker chooses and answers with AssignReplicasToDirs) or is not registered,
  MIGRATING when it lists none; once a broker assigned its replicas (AssignReplicasToDirs, our
  records' `directories`), the assigned ones.
- BrokerRegistrationChangeRecord: ours carries the broker's offline log dirs; Kafka's v2
  LogDirs carries the ONLINE ones (replacing the registration's list; empty means unchanged).
  So online = the dirs its current registration lists, less the offline ones, in the
  registration's order; `BrokerDirectories` knows the registrations as the log goes. When every
  dir is offline nothing can be said in Kafka's terms (Kafka's broker halts then): no LogDirs.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import Any

from controlplane.controller import records
from controlplane.controller.acls.bindings import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.kraft import partition_frames, schemas
from controlplane.controller.kraft.directories import BrokerDirectories, kafka_uuid
from controlplane.controller.kraft.frames import KafkaRecord, control_record, metadata_record
from controlplane.controller.kraft.versions import (
    METADATA_VERSION_FEATURE,
    MINIMUM_METADATA_VERSION,
    MetadataVersion,
    metadata_version,
)
from controlplane.controller.quorum_records import KRaftVersionRecord, VotersRecord
from controlplane.controller.records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    ControlledShutdownChange,
    DelegationTokenRecord,
    FeatureLevelRecord,
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
from controlplane.controller.scram_records import (
    MECHANISM_TYPES,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

# Kafka's DirectoryId: reserved ids a replica's directory may hold instead of a real one.
MIGRATING_DIRECTORY = uuid.UUID(records.MIGRATING_DIRECTORY)  # placed before 3.7-IV2
UNASSIGNED_DIRECTORY = uuid.UUID(records.UNASSIGNED_DIRECTORY)  # the broker picks one
LOST_DIRECTORY = uuid.UUID(int=2)  # an unspecified offline dir

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
# Kafka's ConfigResource.Type. BROKER_LOGGER (8) is left out: Kafka's brokers apply logger
# levels themselves and its controller never writes them to the log.
CONFIG_RESOURCE_TYPE_IDS = {"TOPIC": 2, "BROKER": 4, "CLIENT_METRICS": 16, "GROUP": 32}


Twin = tuple[int, int, dict[str, Any]]  # apiKey, version, fields
_Mapper = Callable[[Any, MetadataVersion, BrokerDirectories], Twin | None]


def kafka_record(
    record: Record, metadata_version_level: int, directories: BrokerDirectories | None = None
) -> KafkaRecord:
    """`record` as its Kafka twin written at `metadata_version_level`, or a NoOpRecord.

    `directories` (the registrations so far) decides PartitionRecord directories and
    BrokerRegistrationChangeRecord LogDirs; without it every replica is UNASSIGNED and log dir
    changes are left out. It is read, never advanced: `BrokerDirectories.observe` does that.
    The partition records, most of any large log, are framed by `partition_frames`; the rest
    by their field specs (`spec_kafka_record`)."""
    framed = _FRAMED.get(type(record))
    if framed is None:
        return spec_kafka_record(record, metadata_version_level, directories)
    mv = metadata_version(metadata_version_level)
    return framed(record, mv, directories or BrokerDirectories())


def spec_kafka_record(
    record: Record, metadata_version_level: int, directories: BrokerDirectories | None = None
) -> KafkaRecord:
    """`kafka_record` through the field specs alone (`frames.metadata_record`): the reference
    the partition records' own writers are held to."""
    mv = metadata_version(metadata_version_level)
    control = _CONTROL_MAPPERS.get(type(record))
    if control is not None:
        return control_record(*control(record))
    mapper = _MAPPERS.get(type(record))
    twin = None if mapper is None else mapper(record, mv, directories or BrokerDirectories())
    if twin is None:
        return no_op_record()
    api_key, version, fields = twin
    return metadata_record(api_key, version, fields)


def no_op_record() -> KafkaRecord:
    return metadata_record(schemas.NO_OP.key, 0, {})


def _register_broker(
    record: RegisterBrokerRecord, mv: MetadataVersion, _dirs: BrokerDirectories
) -> Twin:
    fields: dict[str, Any] = {
        "BrokerId": record.broker_id,
        "IncarnationId": kafka_uuid(record.incarnation_id),
        "BrokerEpoch": record.broker_epoch,
        "EndPoints": [
            {
                "Name": listener.name,
                "Host": listener.host,
                "Port": listener.port,
                "SecurityProtocol": _security_protocol_id(listener.security_protocol),
            }
            for listener in record.listeners
        ],
        "Features": _broker_features(record, mv),
        "Rack": record.rack,
        "Fenced": record.fenced,
        "InControlledShutdown": record.in_controlled_shutdown,
    }
    if mv.directory_assignment:
        fields["LogDirs"] = [kafka_uuid(d) for d in record.log_dirs]
    if mv.register_broker >= 4 and record.cordoned_log_dirs is not None:  # KIP-1066
        fields["CordonedLogDirs"] = [kafka_uuid(d) for d in record.cordoned_log_dirs]
    return schemas.REGISTER_BROKER.key, mv.register_broker, fields


def _broker_features(record: RegisterBrokerRecord, mv: MetadataVersion) -> list[dict[str, Any]]:
    """The feature levels the broker supports, as its registration listed them; a broker that
    listed none (a simulated one) supports metadata.version from 7 to the cluster's level."""
    features = record.features or ((METADATA_VERSION_FEATURE, MINIMUM_METADATA_VERSION, mv.level),)
    return [
        {"Name": name, "MinSupportedVersion": low, "MaxSupportedVersion": high}
        for name, low, high in features
    ]


def _security_protocol_id(name: str) -> int:
    try:
        return SECURITY_PROTOCOL_IDS[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a security protocol Kafka knows") from None


def _unregister_broker(record: UnregisterBrokerRecord, _mv: Any, _dirs: Any) -> Twin:
    fields = {"BrokerId": record.broker_id, "BrokerEpoch": record.broker_epoch}
    return schemas.UNREGISTER_BROKER.key, 0, fields


def _registration_change(
    record: BrokerRegistrationChangeRecord, mv: MetadataVersion, dirs: BrokerDirectories
) -> Twin:
    fields: dict[str, Any] = {
        "BrokerId": record.broker_id,
        "BrokerEpoch": record.broker_epoch,
        "Fenced": int(record.fenced),  # FencingChange carries Kafka's codes: -1, 0, 1
        "InControlledShutdown": int(record.in_controlled_shutdown),
    }
    version = 0 if record.in_controlled_shutdown == ControlledShutdownChange.NONE else 1
    registered = dirs.log_dirs(record.broker_id, record.broker_epoch)
    if record.offline_log_dirs is not None and mv.directory_assignment and registered:
        offline = set(record.offline_log_dirs)
        online = [kafka_uuid(d) for d in registered if d not in offline]
        if online:
            fields["LogDirs"] = online
            version = 2
    if record.cordoned_log_dirs is not None and mv.registration_change >= 3:  # KIP-1066
        fields["CordonedLogDirs"] = [kafka_uuid(d) for d in record.cordoned_log_dirs]
        version = 3
    return schemas.BROKER_REGISTRATION_CHANGE.key, min(version, mv.registration_change), fields


def _topic(record: TopicRecord, _mv: Any, _dirs: Any) -> Twin:
    return schemas.TOPIC.key, 0, {"Name": record.name, "TopicId": kafka_uuid(record.topic_id)}


def _partition(record: PartitionRecord, mv: MetadataVersion, dirs: BrokerDirectories) -> Twin:
    fields: dict[str, Any] = {
        "PartitionId": record.partition_id,
        "TopicId": kafka_uuid(record.topic_id),
        "Replicas": list(record.replicas),
        "Isr": list(record.isr),
        "RemovingReplicas": list(record.removing_replicas),
        "AddingReplicas": list(record.adding_replicas),
        "Leader": record.leader,
        "LeaderEpoch": record.leader_epoch,
        "PartitionEpoch": record.partition_epoch,
    }
    if mv.partition >= 1:
        fields["Directories"] = (
            [kafka_uuid(d) for d in record.directories]
            if record.directories
            else [dirs.default_directory(b) for b in record.replicas]
        )
    return schemas.PARTITION.key, mv.partition, fields


def _partition_change(
    record: PartitionChangeRecord, mv: MetadataVersion, dirs: BrokerDirectories
) -> Twin:
    fields: dict[str, Any] = {
        "PartitionId": record.partition_id,
        "TopicId": kafka_uuid(record.topic_id),
        "Isr": None if record.isr is None else list(record.isr),
        "Leader": record.leader,
        "Replicas": None if record.replicas is None else list(record.replicas),
        "RemovingReplicas": _optional_list(record.removing_replicas),
        "AddingReplicas": _optional_list(record.adding_replicas),
    }
    if mv.partition >= 1 and record.directories is not None:
        # AssignReplicasToDirs: every replica's dir, in the replicas' order.
        fields["Directories"] = [kafka_uuid(d) for d in record.directories]
    elif mv.partition >= 1 and record.replicas is not None:
        # New replicas need a directory each, and the list must stay as long as Replicas.
        fields["Directories"] = [dirs.default_directory(b) for b in record.replicas]
    return schemas.PARTITION_CHANGE.key, mv.partition, fields


def _optional_list(values: tuple[int, ...] | None) -> list[int] | None:
    return None if values is None else list(values)


def _remove_topic(record: RemoveTopicRecord, _mv: Any, _dirs: Any) -> Twin:
    return schemas.REMOVE_TOPIC.key, 0, {"TopicId": kafka_uuid(record.topic_id)}


def _config(record: ConfigRecord, _mv: Any, _dirs: Any) -> Twin | None:
    resource_type = CONFIG_RESOURCE_TYPE_IDS.get(record.resource_type)
    if resource_type is None:
        return None
    fields = {
        "ResourceType": resource_type,
        "ResourceName": record.resource_name,
        "Name": record.name,
        "Value": record.value,
    }
    return schemas.CONFIG.key, 0, fields


def _client_quota(record: ClientQuotaRecord, _mv: Any, _dirs: Any) -> Twin:
    fields = {
        "Entity": [{"EntityType": kind, "EntityName": name} for kind, name in record.entity],
        "Key": record.key,
        "Value": float(record.value),
        "Remove": record.remove,
    }
    return schemas.CLIENT_QUOTA.key, 0, fields


def _delegation_token(
    record: DelegationTokenRecord, mv: MetadataVersion, _dirs: Any
) -> Twin | None:
    if not mv.delegation_tokens:
        return None
    fields = {
        "Owner": record.owner,
        "Requester": record.requester,
        "Renewers": list(record.renewers),
        "IssueTimestamp": record.issue_timestamp,
        "MaxTimestamp": record.max_timestamp,
        "ExpirationTimestamp": record.expiration_timestamp,
        "TokenId": record.token_id,
    }
    return schemas.DELEGATION_TOKEN.key, 0, fields


def _remove_delegation_token(
    record: RemoveDelegationTokenRecord, mv: MetadataVersion, _dirs: Any
) -> Twin | None:
    if not mv.delegation_tokens:
        return None
    return schemas.REMOVE_DELEGATION_TOKEN.key, 0, {"TokenId": record.token_id}


def _feature_level(record: FeatureLevelRecord, _mv: Any, _dirs: Any) -> Twin:
    fields = {"Name": record.name, "FeatureLevel": record.feature_level}
    return schemas.FEATURE_LEVEL.key, 0, fields


def _producer_ids(record: ProducerIdsRecord, _mv: Any, _dirs: Any) -> Twin:
    fields = {
        "BrokerId": record.broker_id,
        "BrokerEpoch": record.broker_epoch,
        "NextProducerId": record.next_producer_id,
    }
    return schemas.PRODUCER_IDS.key, 0, fields


def _acl(record: AccessControlEntryRecord, _mv: Any, _dirs: Any) -> Twin:
    fields = {
        "Id": kafka_uuid(record.id),
        "ResourceType": int(ResourceType.from_name(record.resource_type)),
        "ResourceName": record.resource_name,
        "PatternType": int(PatternType.from_name(record.pattern_type)),
        "Principal": record.principal,
        "Host": record.host,
        "Operation": int(AclOperation.from_name(record.operation)),
        "PermissionType": int(AclPermissionType.from_name(record.permission_type)),
    }
    return schemas.ACCESS_CONTROL_ENTRY.key, 0, fields


def _remove_acl(record: RemoveAccessControlEntryRecord, _mv: Any, _dirs: Any) -> Twin:
    return schemas.REMOVE_ACCESS_CONTROL_ENTRY.key, 0, {"Id": kafka_uuid(record.id)}


# --- SCRAM credentials (KIP-554): the salt and the keys as the bytes brokers log users in with --


def _user_scram_credential(
    record: UserScramCredentialRecord, mv: MetadataVersion, _dirs: Any
) -> Twin | None:
    if not mv.scram:
        return None
    fields = {
        "Name": record.name,
        "Mechanism": MECHANISM_TYPES[record.mechanism],
        "Salt": base64.b64decode(record.salt),
        "StoredKey": base64.b64decode(record.stored_key),
        "ServerKey": base64.b64decode(record.server_key),
        "Iterations": record.iterations,
    }
    return schemas.USER_SCRAM_CREDENTIAL.key, 0, fields


def _remove_user_scram_credential(
    record: RemoveUserScramCredentialRecord, mv: MetadataVersion, _dirs: Any
) -> Twin | None:
    if not mv.scram:
        return None
    fields = {"Name": record.name, "Mechanism": MECHANISM_TYPES[record.mechanism]}
    return schemas.REMOVE_USER_SCRAM_CREDENTIAL.key, 0, fields


_SCRAM_MAPPERS: dict[type[Record], _Mapper] = {
    UserScramCredentialRecord: _user_scram_credential,
    RemoveUserScramCredentialRecord: _remove_user_scram_credential,
}

_MAPPERS: dict[type[Record], _Mapper] = {
    RegisterBrokerRecord: _register_broker,
    UnregisterBrokerRecord: _unregister_broker,
    BrokerRegistrationChangeRecord: _registration_change,
    TopicRecord: _topic,
    PartitionRecord: _partition,
    PartitionChangeRecord: _partition_change,
    RemoveTopicRecord: _remove_topic,
    ConfigRecord: _config,
    ClientQuotaRecord: _client_quota,
    DelegationTokenRecord: _delegation_token,
    RemoveDelegationTokenRecord: _remove_delegation_token,
    FeatureLevelRecord: _feature_level,
    ProducerIdsRecord: _producer_ids,
    AccessControlEntryRecord: _acl,
    RemoveAccessControlEntryRecord: _remove_acl,
    **_SCRAM_MAPPERS,
}
_FRAMED: dict[type[Record], Callable[[Any, MetadataVersion, BrokerDirectories], KafkaRecord]] = {
    PartitionRecord: partition_frames.partition_record,
    PartitionChangeRecord: partition_frames.partition_change_record,
}


# --- the quorum's records: Kafka's control records (KIP-853) ---------------------------------

KRAFT_VERSION_CONTROL = 5  # ControlRecordType.KRAFT_VERSION
KRAFT_VOTERS_CONTROL = 6  # ControlRecordType.KRAFT_VOTERS


def _kraft_version(record: KRaftVersionRecord) -> tuple[int, dict[str, Any]]:
    return KRAFT_VERSION_CONTROL, {"Version": 0, "KRaftVersion": record.kraft_version}


def _voters(record: VotersRecord) -> tuple[int, dict[str, Any]]:
    voters = [
        {
            "VoterId": voter.voter_id,
            "VoterDirectoryId": kafka_uuid(voter.directory_id),
            "Endpoints": [
                {"Name": e.name, "Host": e.host, "Port": e.port} for e in voter.endpoints
            ],
            "KRaftVersionFeature": {
                "MinSupportedVersion": voter.min_kraft_version,
                "MaxSupportedVersion": voter.max_kraft_version,
            },
        }
        for voter in record.voters
    ]
    return KRAFT_VOTERS_CONTROL, {"Version": 0, "Voters": voters}


_CONTROL_MAPPERS: dict[type[Record], Callable[[Any], tuple[int, dict[str, Any]]]] = {
    KRaftVersionRecord: _kraft_version,
    VotersRecord: _voters,
}
TWINNED_RECORD_TYPES = frozenset(cls.TYPE for cls in (*_MAPPERS, *_CONTROL_MAPPERS))
