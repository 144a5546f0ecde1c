"""The features a cluster's log starts with, as Kafka's bootstrap writes them.

A new cluster's first commit begins with FeatureLevelRecords: `metadata.version` at the level
stock Kafka 4.x brokers format by default (4.0-IV3, level 25: the highest a mixed 4.0/4.1
cluster may run), then `group.version` 1 and `transaction.version` 2, as `kafka-storage.sh
format` finalizes them for 4.0. A cluster whose log predates them gains them the same way, in
the first commit after the upgrade (appended, never rewritten into its history): from that
offset on its log says which metadata.version every later record is read at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image.features import METADATA_VERSION
from controlplane.controller.records import FeatureLevelRecord

BOOTSTRAP_METADATA_VERSION = 25  # MetadataVersion.IBP_4_0_IV3
MINIMUM_METADATA_VERSION = 7  # MetadataVersion.IBP_3_3_IV3, the oldest KRaft brokers run
# IBP_3_7_IV2 (KIP-858): registrations carry log dirs, partitions a directory per replica, and
# brokers with several dirs send AssignReplicasToDirs.
DIRECTORY_ASSIGNMENT_METADATA_VERSION = 17
BOOTSTRAP_FEATURES: tuple[tuple[str, int], ...] = (
    (METADATA_VERSION, BOOTSTRAP_METADATA_VERSION),
    ("group.version", 1),
    ("transaction.version", 2),
)


class FeatureView(Protocol):
    @property
    def metadata_version(self) -> int | None: ...


def bootstrap_records(view: FeatureView) -> list[FeatureLevelRecord]:
    """The FeatureLevelRecords a log without metadata.version needs first; none otherwise."""
    if view.metadata_version is not None:
        return []
    return [FeatureLevelRecord(name, level) for name, level in BOOTSTRAP_FEATURES]


SupportedFeature = tuple[str, int, int]  # (name, min supported level, max supported level)


def check_supported_features(
    finalized: Mapping[str, int], supported: Iterable[SupportedFeature]
) -> None:
    """A broker registers only if it supports every finalized feature's level (Kafka's
    ClusterControlManager: UNSUPPORTED_VERSION otherwise); a feature it does not name it
    supports at level 0 only. A broker that names no features at all (this project's own
    simulated brokers, on REST) is not checked."""
    ranges = {name: (low, high) for name, low, high in supported}
    if not ranges:
        return
    for name, level in sorted(finalized.items()):
        low, high = ranges.get(name, (0, 0))
        if not low <= level <= high:
            raise ApiError(
                Errors.UNSUPPORTED_VERSION,
                f"Unable to register because the broker does not support finalized version "
                f"{level} of {name}. The broker wants a version between {low} and {high}, "
                "inclusive.",
            )
