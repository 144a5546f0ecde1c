"""Kafka's metadata.version levels and the record versions each one writes.

From Kafka 4.1's `server-common/.../MetadataVersion.java`: `registerBrokerRecordVersion()`
(3 from 3.7-IV2, when brokers register their log dirs; 2 from 3.4-IV0; else 1),
`partitionRecordVersion()` and `partitionChangeRecordVersion()` (2 from 4.0-IV1, ELR; 1 from
3.7-IV2, directories; else 0), `isMetadataTransactionSupported()` (3.6-IV1) and
`isDelegationTokenSupported()` (3.6-IV2). BrokerRegistrationChangeRecord is written at the
lowest version that carries its fields (as Kafka's ReplicationControlManager writes it: v0 for a
fence or an unfence, v1 for controlled shutdown, v2 for log dirs), up to the table's maximum.

Kafka 4.x reads levels from 7 (3.3-IV3, its MINIMUM_VERSION) up; 4.0 brokers format new
clusters at 25 (4.0-IV3), 4.1 brokers at 27 (4.1-IV1). A cluster mixing 4.0 and 4.1 brokers
must stay at 25 or below.
"""

from __future__ import annotations

import dataclasses

from controlplane.controller.features import DIRECTORY_ASSIGNMENT_METADATA_VERSION
from controlplane.controller.scram_records import SCRAM_METADATA_VERSION

METADATA_VERSION_FEATURE = "metadata.version"
MINIMUM_METADATA_VERSION = 7  # 3.3-IV3: the oldest level a Kafka 4.x broker reads
DEFAULT_METADATA_VERSION = 25  # 4.0-IV3: what a stock Kafka 4.0 formats by default


@dataclasses.dataclass(frozen=True, slots=True)
class MetadataVersion:
    level: int
    name: str  # Kafka's release-IV name, "4.0-IV3"
    register_broker: int  # RegisterBrokerRecord version
    partition: int  # PartitionRecord and PartitionChangeRecord version
    registration_change: int  # the highest BrokerRegistrationChangeRecord version
    transactions: bool  # Begin/End/AbortTransactionRecord may be written
    delegation_tokens: bool  # DelegationTokenRecord and RemoveDelegationTokenRecord

    @property
    def directory_assignment(self) -> bool:
        """KIP-858: registrations carry log dirs, partitions carry a directory per replica."""
        return self.level >= DIRECTORY_ASSIGNMENT_METADATA_VERSION

    @property
    def scram(self) -> bool:
        """KIP-554: UserScramCredentialRecord and its removal (isScramSupported, 3.5-IV2)."""
        return self.level >= SCRAM_METADATA_VERSION


_T, _F = True, False
# level  name        RegisterBroker Partition(+Change) RegistrationChange(max) txns tokens
_TABLE = [
    (7, "3.3-IV3", 1, 0, 1, _F, _F),
    (8, "3.4-IV0", 2, 0, 1, _F, _F),
    (9, "3.5-IV0", 2, 0, 1, _F, _F),
    (10, "3.5-IV1", 2, 0, 1, _F, _F),
    (11, "3.5-IV2", 2, 0, 1, _F, _F),
    (12, "3.6-IV0", 2, 0, 1, _F, _F),
    (13, "3.6-IV1", 2, 0, 1, _T, _F),
    (14, "3.6-IV2", 2, 0, 1, _T, _T),
    (15, "3.7-IV0", 2, 0, 1, _T, _T),
    (16, "3.7-IV1", 2, 0, 1, _T, _T),
    (17, "3.7-IV2", 3, 1, 2, _T, _T),
    (18, "3.7-IV3", 3, 1, 2, _T, _T),
    (19, "3.7-IV4", 3, 1, 2, _T, _T),
    (20, "3.8-IV0", 3, 1, 2, _T, _T),
    (21, "3.9-IV0", 3, 1, 2, _T, _T),
    (22, "4.0-IV0", 3, 1, 2, _T, _T),
    (23, "4.0-IV1", 3, 2, 2, _T, _T),
    (24, "4.0-IV2", 3, 2, 2, _T, _T),
    (25, "4.0-IV3", 3, 2, 2, _T, _T),
    (26, "4.1-IV0", 3, 2, 2, _T, _T),
    (27, "4.1-IV1", 3, 2, 2, _T, _T),
]
METADATA_VERSIONS: dict[int, MetadataVersion] = {row[0]: MetadataVersion(*row) for row in _TABLE}


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
