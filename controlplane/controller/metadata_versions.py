"""Kafka's metadata.version levels and the record versions each one writes.

From `server-common/.../MetadataVersion.java` of Kafka 4.0 to 4.4 (the newest release's jar
decides where two disagree; `tests/kafka/test_kafka_versions.py` reads every level's answers
from the jars and compares them with this table):

- `registerBrokerRecordVersion()`: 4 from 4.3-IV0 (KIP-1066's CordonedLogDirs), 3 from 3.7-IV2
  (brokers register their log dirs), 2 from 3.4-IV0, else 1;
- `partitionRecordVersion()` and `partitionChangeRecordVersion()`: 2 from 4.0-IV1 (KIP-966's
  eligible leader replicas), 1 from 3.7-IV2 (directories), else 0;
- `isMetadataTransactionSupported()` (3.6-IV1), `isDelegationTokenSupported()` (3.6-IV2),
  `isCidrAclSupported()` (4.4-IV1: an ACL's host may be a CIDR block);
- `didMetadataChange()`: whether the level changed what the log may hold; a downgrade across a
  level that did may lose metadata, and is refused.

BrokerRegistrationChangeRecord is written at the lowest version that carries its fields (as
Kafka's ReplicationControlManager writes it: v0 for a fence or an unfence, v1 for controlled
shutdown, v2 for log dirs), up to the table's maximum (3 from 4.3-IV0, CordonedLogDirs, which
this controller never writes: brokers whose heartbeats carry none keep it null).

Kafka 4.x reads levels from 7 (3.3-IV3, its MINIMUM_VERSION) up. Each release formats new
clusters at its newest production level and supports levels up to it: 4.0 at 25 (4.0-IV3), 4.1
at 27 (4.1-IV1), 4.2 at 29 (4.2-IV1), 4.3 at 30 (4.3-IV0), 4.4 at 33 (4.4-IV2). A cluster may
run no level above what its oldest broker supports.
"""

from __future__ import annotations

import dataclasses

METADATA_VERSION_FEATURE = "metadata.version"
MINIMUM_METADATA_VERSION = 7  # 3.3-IV3: the oldest level a Kafka 4.x broker reads
DEFAULT_METADATA_VERSION = 25  # 4.0-IV3: what a stock Kafka 4.0 formats by default
# 3.7-IV2 (KIP-858): registrations carry log dirs, partitions a directory per replica, and
# brokers with several dirs send AssignReplicasToDirs.
DIRECTORY_ASSIGNMENT_METADATA_VERSION = 17
# 3.5-IV2 (KIP-554, isScramSupported): UserScramCredentialRecord and its removal.
SCRAM_METADATA_VERSION = 11
ELIGIBLE_LEADER_REPLICAS_METADATA_VERSION = 23  # 4.0-IV1: PartitionRecord v2 (KIP-966)
CORDONED_LOG_DIRS_METADATA_VERSION = 30  # 4.3-IV0: RegisterBrokerRecord v4 (KIP-1066)
CIDR_ACLS_METADATA_VERSION = 32  # 4.4-IV1: an ACL's host may be a CIDR block


@dataclasses.dataclass(frozen=True, slots=True)
class MetadataVersion:
    level: int
    name: str  # Kafka's release-IV name, "4.0-IV3"
    register_broker: int  # RegisterBrokerRecord version
    partition: int  # PartitionRecord and PartitionChangeRecord version
    registration_change: int  # the highest BrokerRegistrationChangeRecord version
    transactions: bool  # Begin/End/AbortTransactionRecord may be written
    delegation_tokens: bool  # DelegationTokenRecord and RemoveDelegationTokenRecord
    metadata_changed: bool  # Kafka's didMetadataChange()

    @property
    def directory_assignment(self) -> bool:
        """KIP-858: registrations carry log dirs, partitions carry a directory per replica."""
        return self.level >= DIRECTORY_ASSIGNMENT_METADATA_VERSION

    @property
    def scram(self) -> bool:
        """KIP-554: UserScramCredentialRecord and its removal may be written."""
        return self.level >= SCRAM_METADATA_VERSION

    @property
    def cidr_acls(self) -> bool:
        return self.level >= CIDR_ACLS_METADATA_VERSION

    @property
    def release(self) -> str:
        """The release the level belongs to ("4.0" for 4.0-IV3), as `--release-version` names
        it."""
        return self.name.split("-", 1)[0]


_T, _F = True, False
# level  name     RegisterBroker Partition(+Change) RegistrationChange(max) txns tokens changed
_TABLE = [
    (7, "3.3-IV3", 1, 0, 1, _F, _F, _T),
    (8, "3.4-IV0", 2, 0, 1, _F, _F, _T),
    (9, "3.5-IV0", 2, 0, 1, _F, _F, _F),
    (10, "3.5-IV1", 2, 0, 1, _F, _F, _F),
    (11, "3.5-IV2", 2, 0, 1, _F, _F, _T),
    (12, "3.6-IV0", 2, 0, 1, _F, _F, _F),
    (13, "3.6-IV1", 2, 0, 1, _T, _F, _T),
    (14, "3.6-IV2", 2, 0, 1, _T, _T, _T),
    (15, "3.7-IV0", 2, 0, 1, _T, _T, _T),
    (16, "3.7-IV1", 2, 0, 1, _T, _T, _F),
    (17, "3.7-IV2", 3, 1, 2, _T, _T, _T),
    (18, "3.7-IV3", 3, 1, 2, _T, _T, _F),
    (19, "3.7-IV4", 3, 1, 2, _T, _T, _F),
    (20, "3.8-IV0", 3, 1, 2, _T, _T, _F),
    (21, "3.9-IV0", 3, 1, 2, _T, _T, _F),
    (22, "4.0-IV0", 3, 1, 2, _T, _T, _F),
    (23, "4.0-IV1", 3, 2, 2, _T, _T, _T),
    (24, "4.0-IV2", 3, 2, 2, _T, _T, _F),
    (25, "4.0-IV3", 3, 2, 2, _T, _T, _F),
    (26, "4.1-IV0", 3, 2, 2, _T, _T, _F),
    (27, "4.1-IV1", 3, 2, 2, _T, _T, _F),
    (28, "4.2-IV0", 3, 2, 2, _T, _T, _F),
    (29, "4.2-IV1", 3, 2, 2, _T, _T, _F),
    (30, "4.3-IV0", 4, 2, 3, _T, _T, _T),
    (31, "4.4-IV0", 4, 2, 3, _T, _T, _F),
    (32, "4.4-IV1", 4, 2, 3, _T, _T, _T),
    (33, "4.4-IV2", 4, 2, 3, _T, _T, _T),
]
METADATA_VERSIONS: dict[int, MetadataVersion] = {row[0]: MetadataVersion(*row) for row in _TABLE}
LATEST_METADATA_VERSION = max(METADATA_VERSIONS)
# The newest production level of each release: what `--release-version 4.1` means.
RELEASE_LEVELS: dict[str, int] = {mv.release: level for level, mv in METADATA_VERSIONS.items()}


class UnsupportedMetadataVersion(ValueError):
    pass


def metadata_version(level: int) -> MetadataVersion:
    try:
        return METADATA_VERSIONS[level]
    except KeyError:
        known = f"{min(METADATA_VERSIONS)}-{max(METADATA_VERSIONS)}"
        raise UnsupportedMetadataVersion(
            f"metadata.version {level} is not one this controller writes ({known})"
        ) from None


def metadata_version_named(name: str) -> MetadataVersion:
    """A level by Kafka's name: "4.0-IV3", or a release ("4.1"), its newest level."""
    for mv in METADATA_VERSIONS.values():
        if mv.name == name:
            return mv
    level = RELEASE_LEVELS.get(name)
    if level is None:
        raise UnsupportedMetadataVersion(f"Unknown metadata.version {name!r}")
    return METADATA_VERSIONS[level]


def metadata_changed_between(current: int, target: int) -> bool:
    """Kafka's MetadataVersion.checkIfMetadataChanged: whether a level after the lower one, up
    to and including the higher one, changed what the log holds (a downgrade across it may
    lose metadata)."""
    low, high = sorted((current, target))
    return any(METADATA_VERSIONS[level].metadata_changed for level in range(low + 1, high + 1))
