"""The features a cluster's log starts with, the features this controller supports, and the
check a registering broker passes.

A new cluster's first commit begins with FeatureLevelRecords: `metadata.version` at the level
stock Kafka 4.x brokers format by default (4.0-IV3, level 25: the highest a mixed 4.0/4.1
cluster may run), then `group.version` 1 and `transaction.version` 2, as `kafka-storage.sh
format` finalizes them for 4.0. A cluster whose log predates them gains them the same way, in
the first commit after the upgrade (appended, never rewritten into its history): from that
offset on its log says which metadata.version every later record is read at.

What the controller supports (Kafka's QuorumFeatures: the range of each feature it can run):
every metadata.version it writes records for (7 to 33, 4.4-IV2), and the other production
features of Kafka 4.4 up to their newest level, but `eligible.leader.replicas.version` at 0
alone: KIP-966's eligible leader replicas change how the controller elects and what its
partition records carry, which this controller does not write yet, so finalizing it would
leave brokers trusting fields nobody keeps. UpdateFeatures refuses it as Kafka refuses a level
its controller does not support.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Protocol

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image.features import METADATA_VERSION
from controlplane.controller.metadata_versions import (
    DIRECTORY_ASSIGNMENT_METADATA_VERSION,
    LATEST_METADATA_VERSION,
    MINIMUM_METADATA_VERSION,
)
from controlplane.controller.records import FeatureLevelRecord

logger = logging.getLogger("controlplane.controller")

__all__ = [
    "BOOTSTRAP_FEATURES",
    "BOOTSTRAP_METADATA_VERSION",
    "DIRECTORY_ASSIGNMENT_METADATA_VERSION",
    "KRAFT_VERSION",
    "MINIMUM_METADATA_VERSION",
    "SUPPORTED_FEATURES",
    "bootstrap_records",
    "check_supported_features",
]

BOOTSTRAP_METADATA_VERSION = 25  # MetadataVersion.IBP_4_0_IV3
BOOTSTRAP_FEATURES: tuple[tuple[str, int], ...] = (
    (METADATA_VERSION, BOOTSTRAP_METADATA_VERSION),
    ("group.version", 1),
    ("transaction.version", 2),
)

KRAFT_VERSION = "kraft.version"  # the quorum's own version: control records, not a FeatureLevel
ELIGIBLE_LEADER_REPLICAS = "eligible.leader.replicas.version"

# Kafka 4.4's production features (server-common's Feature) and the levels this controller
# runs, each as (min, max): Kafka's QuorumFeatures.defaultSupportedFeatureMap, less what it
# does not write (eligible leader replicas, see above).
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (MINIMUM_METADATA_VERSION, LATEST_METADATA_VERSION),
    KRAFT_VERSION: (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    ELIGIBLE_LEADER_REPLICAS: (0, 0),
    "share.version": (0, 2),
    "streams.version": (0, 1),
}
# Why a feature is held at a level below Kafka's, said with the refusal.
NOT_WRITTEN_YET: dict[str, str] = {
    ELIGIBLE_LEADER_REPLICAS: (
        "This controller does not write KIP-966's eligible leader replicas (ELR and "
        "LastKnownElr in partition records, elections from them), so it cannot finalize "
        "eligible.leader.replicas.version above 0."
    ),
}
# A feature level's dependencies on other features (Kafka's FeatureVersion.dependencies).
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {
    (ELIGIBLE_LEADER_REPLICAS, 1): {METADATA_VERSION: 23},
}


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
    finalized: Mapping[str, int], supported: Iterable[SupportedFeature], broker_id: int = -1
) -> None:
    """A broker registers only if it supports every finalized feature's level (Kafka's
    ClusterControlManager: UNSUPPORTED_VERSION otherwise); a feature it does not name it
    supports at level 0 only. A broker that names no features at all (this project's own
    simulated brokers, on REST) is not checked. A refusal is logged: a broker of a release
    too old for the cluster's levels retries its registration until it gives up, and its
    operator looks here for why."""
    ranges = {name: (low, high) for name, low, high in supported}
    if not ranges:
        return
    if METADATA_VERSION not in finalized:  # a new cluster: the bootstrap commits with this
        finalized = {**dict(BOOTSTRAP_FEATURES), **finalized}
    for name in sorted(ranges.keys() | finalized.keys()):
        level = finalized.get(name, 0)  # a feature not finalized runs at level 0
        low, high = ranges.get(name, (0, 0))
        if not low <= level <= high:
            message = (
                f"Unable to register because the broker does not support finalized version "
                f"{level} of {name}. The broker wants a version between {low} and {high}, "
                "inclusive."
            )
            logger.warning("refused the registration of broker %d: %s", broker_id, message)
            raise ApiError(Errors.UNSUPPORTED_VERSION, message)
