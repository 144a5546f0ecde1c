"""The KRaft record schemas, as data: which fields each record has in which version.

Written from Kafka's `metadata/src/main/resources/common/metadata/*.json` (the metadata records)
and `clients/src/main/resources/common/message/*.json` (the control messages) at Kafka 4.1:
names, types, versions, nullability, tags and defaults as Kafka declares them. Every one of them
is flexible from version 0.
"""

from __future__ import annotations

import dataclasses

from controlplane.controller.kraft.codec import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Array,
    Field,
    Primitive,
    Struct,
)


@dataclasses.dataclass(frozen=True, slots=True)
class MessageSpec:
    """A record type: Kafka's name, its apiKey (metadata records) or control record type, the
    versions Kafka reads, and its fields."""

    name: str
    key: int
    max_version: int
    fields: tuple[Field, ...]
    min_version: int = 0

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def _spec(name: str, key: int, max_version: int, *fields: Field) -> MessageSpec:
    return MessageSpec(name, key, max_version, fields)


_INT32S = Array(INT32)
_UUIDS = Array(UUID)

# --- metadata records (apiKey -> spec) ---------------------------------------------------------

REGISTER_BROKER = _spec(
    "RegisterBrokerRecord",
    0,
    3,
    Field("BrokerId", INT32),
    Field("IsMigratingZkBroker", BOOL, since=2),
    Field("IncarnationId", UUID),
    Field("BrokerEpoch", INT64),
    Field(
        "EndPoints",
        Array(
            Struct(
                "BrokerEndpoint",
                (
                    Field("Name", STRING),
                    Field("Host", STRING),
                    Field("Port", UINT16),
                    Field("SecurityProtocol", INT16),
                ),
            )
        ),
    ),
    Field(
        "Features",
        Array(
            Struct(
                "BrokerFeature",
                (
                    Field("Name", STRING),
                    Field("MinSupportedVersion", INT16),
                    Field("MaxSupportedVersion", INT16),
                ),
            )
        ),
    ),
    Field("Rack", STRING, nullable_since=0),
    Field("Fenced", BOOL, default=True),
    Field("InControlledShutdown", BOOL, since=1),
    Field("LogDirs", _UUIDS, since=3, tag=0),
)
UNREGISTER_BROKER = _spec(
    "UnregisterBrokerRecord", 1, 0, Field("BrokerId", INT32), Field("BrokerEpoch", INT64)
)
TOPIC = _spec("TopicRecord", 2, 0, Field("Name", STRING), Field("TopicId", UUID))
PARTITION = _spec(
    "PartitionRecord",
    3,
    2,
    Field("PartitionId", INT32, default=-1),
    Field("TopicId", UUID),
    Field("Replicas", _INT32S),
    Field("Isr", _INT32S),
    Field("RemovingReplicas", _INT32S),
    Field("AddingReplicas", _INT32S),
    Field("Leader", INT32, default=-1),
    Field("LeaderRecoveryState", INT8, tag=0),
    Field("LeaderEpoch", INT32, default=-1),
    Field("PartitionEpoch", INT32, default=-1),
    Field("Directories", _UUIDS, since=1),
    Field("EligibleLeaderReplicas", _INT32S, since=2, nullable_since=2, tag=1, default=None),
    Field("LastKnownElr", _INT32S, since=2, nullable_since=2, tag=2, default=None),
)
CONFIG = _spec(
    "ConfigRecord",
    4,
    0,
    Field("ResourceType", INT8),
    Field("ResourceName", STRING),
    Field("Name", STRING),
    Field("Value", STRING, nullable_since=0),
)


def _change_list(name: str, tag: int, since: int = 0, element: Primitive = INT32) -> Field:
    """A PartitionChangeRecord list: null (the default, not written) when it did not change."""
    return Field(name, Array(element), since=since, nullable_since=since, tag=tag, default=None)


PARTITION_CHANGE = _spec(
    "PartitionChangeRecord",
    5,
    2,
    Field("PartitionId", INT32, default=-1),
    Field("TopicId", UUID),
    _change_list("Isr", 0),
    Field("Leader", INT32, tag=1, default=-2),
    _change_list("Replicas", 2),
    _change_list("RemovingReplicas", 3),
    _change_list("AddingReplicas", 4),
    Field("LeaderRecoveryState", INT8, tag=5, default=-1),
    _change_list("Directories", 8, since=1, element=UUID),
    _change_list("EligibleLeaderReplicas", 6, since=2),
    _change_list("LastKnownElr", 7, since=2),
)
REMOVE_TOPIC = _spec("RemoveTopicRecord", 9, 0, Field("TopicId", UUID))
DELEGATION_TOKEN = _spec(
    "DelegationTokenRecord",
    10,
    0,
    Field("Owner", STRING),
    Field("Requester", STRING),
    Field("Renewers", Array(STRING)),
    Field("IssueTimestamp", INT64),
    Field("MaxTimestamp", INT64),
    Field("ExpirationTimestamp", INT64),
    Field("TokenId", STRING),
)
FEATURE_LEVEL = _spec(
    "FeatureLevelRecord", 12, 0, Field("Name", STRING), Field("FeatureLevel", INT16)
)
CLIENT_QUOTA = _spec(
    "ClientQuotaRecord",
    14,
    0,
    Field(
        "Entity",
        Array(
            Struct(
                "EntityData",
                (Field("EntityType", STRING), Field("EntityName", STRING, nullable_since=0)),
            )
        ),
    ),
    Field("Key", STRING),
    Field("Value", FLOAT64),
    Field("Remove", BOOL),
)
PRODUCER_IDS = _spec(
    "ProducerIdsRecord",
    15,
    0,
    Field("BrokerId", INT32),
    Field("BrokerEpoch", INT64, default=-1),
    Field("NextProducerId", INT64),
)
BROKER_REGISTRATION_CHANGE = _spec(
    "BrokerRegistrationChangeRecord",
    17,
    2,
    Field("BrokerId", INT32),
    Field("BrokerEpoch", INT64),
    Field("Fenced", INT8, tag=0),
    Field("InControlledShutdown", INT8, since=1, tag=1),
    Field("LogDirs", _UUIDS, since=2, tag=2),
)
ACCESS_CONTROL_ENTRY = _spec(
    "AccessControlEntryRecord",
    18,
    0,
    Field("Id", UUID),
    Field("ResourceType", INT8),
    Field("ResourceName", STRING),
    Field("PatternType", INT8),
    Field("Principal", STRING),
    Field("Host", STRING),
    Field("Operation", INT8),
    Field("PermissionType", INT8),
)
REMOVE_ACCESS_CONTROL_ENTRY = _spec("RemoveAccessControlEntryRecord", 19, 0, Field("Id", UUID))
NO_OP = _spec("NoOpRecord", 20, 0)
BEGIN_TRANSACTION = _spec(
    "BeginTransactionRecord", 23, 0, Field("Name", STRING, nullable_since=0, tag=0, default=None)
)
END_TRANSACTION = _spec("EndTransactionRecord", 24, 0)
ABORT_TRANSACTION = _spec(
    "AbortTransactionRecord", 25, 0, Field("Reason", STRING, nullable_since=0, tag=0, default=None)
)
# apiKey 26, not 11 (11 is UserScramCredentialRecord): it came after the others.
REMOVE_DELEGATION_TOKEN = _spec("RemoveDelegationTokenRecord", 26, 0, Field("TokenId", STRING))
REGISTER_CONTROLLER = _spec(
    "RegisterControllerRecord",
    27,
    0,
    Field("ControllerId", INT32),
    Field("IncarnationId", UUID),
    Field("ZkMigrationReady", BOOL),
    Field(
        "EndPoints",
        Array(
            Struct(
                "ControllerEndpoint",
                (
                    Field("Name", STRING),
                    Field("Host", STRING),
                    Field("Port", UINT16),
                    Field("SecurityProtocol", INT16),
                ),
            )
        ),
    ),
    Field(
        "Features",
        Array(
            Struct(
                "ControllerFeature",
                (
                    Field("Name", STRING),
                    Field("MinSupportedVersion", INT16),
                    Field("MaxSupportedVersion", INT16),
                ),
            )
        ),
    ),
)

# --- SCRAM credentials (KIP-554) ---------------------------------------------------------------
USER_SCRAM_CREDENTIAL = _spec(
    "UserScramCredentialRecord",
    11,
    0,
    Field("Name", STRING),
    Field("Mechanism", INT8),
    Field("Salt", BYTES),
    Field("StoredKey", BYTES),
    Field("ServerKey", BYTES),
    Field("Iterations", INT32),
)
REMOVE_USER_SCRAM_CREDENTIAL = _spec(
    "RemoveUserScramCredentialRecord", 22, 0, Field("Name", STRING), Field("Mechanism", INT8)
)
SCRAM_RECORDS = (USER_SCRAM_CREDENTIAL, REMOVE_USER_SCRAM_CREDENTIAL)

METADATA_RECORDS: dict[int, MessageSpec] = {
    spec.key: spec
    for spec in (
        REGISTER_BROKER,
        UNREGISTER_BROKER,
        TOPIC,
        PARTITION,
        CONFIG,
        PARTITION_CHANGE,
        REMOVE_TOPIC,
        DELEGATION_TOKEN,
        FEATURE_LEVEL,
        CLIENT_QUOTA,
        PRODUCER_IDS,
        BROKER_REGISTRATION_CHANGE,
        ACCESS_CONTROL_ENTRY,
        REMOVE_ACCESS_CONTROL_ENTRY,
        NO_OP,
        BEGIN_TRANSACTION,
        END_TRANSACTION,
        ABORT_TRANSACTION,
        REMOVE_DELEGATION_TOKEN,
        REGISTER_CONTROLLER,
        *SCRAM_RECORDS,
    )
}

# --- control records (ControlRecordType -> spec; the value is the message at v0) ---------------

_VOTER = Struct("Voter", (Field("VoterId", INT32), Field("VoterDirectoryId", UUID, since=1)))

LEADER_CHANGE = _spec(
    "LeaderChangeMessage",
    2,
    1,
    Field("Version", INT16),
    Field("LeaderId", INT32),
    Field("Voters", Array(_VOTER)),
    Field("GrantingVoters", Array(_VOTER)),
)
SNAPSHOT_HEADER = _spec(
    "SnapshotHeaderRecord",
    3,
    0,
    Field("Version", INT16),
    Field("LastContainedLogTimestamp", INT64),
)
SNAPSHOT_FOOTER = _spec("SnapshotFooterRecord", 4, 0, Field("Version", INT16))
KRAFT_VERSION = _spec(
    "KRaftVersionRecord", 5, 0, Field("Version", INT16), Field("KRaftVersion", INT16)
)
VOTERS = _spec(
    "VotersRecord",
    6,
    0,
    Field("Version", INT16),
    Field(
        "Voters",
        Array(
            Struct(
                "Voter",
                (
                    Field("VoterId", INT32),
                    Field("VoterDirectoryId", UUID),
                    Field(
                        "Endpoints",
                        Array(
                            Struct(
                                "Endpoint",
                                (
                                    Field("Name", STRING),
                                    Field("Host", STRING),
                                    Field("Port", UINT16),
                                ),
                            )
                        ),
                    ),
                    Field(
                        "KRaftVersionFeature",
                        Struct(
                            "KRaftVersionFeature",
                            (
                                Field("MinSupportedVersion", INT16),
                                Field("MaxSupportedVersion", INT16),
                            ),
                        ),
                    ),
                ),
            )
        ),
    ),
)

CONTROL_RECORDS: dict[int, MessageSpec] = {
    spec.key: spec
    for spec in (LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, VOTERS)
}
