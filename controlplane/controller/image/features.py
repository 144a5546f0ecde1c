"""The finalized features, the quorum's version and voters, and the producer id blocks (Kafka's
FeaturesImage and ProducerIdsImage, with their deltas, and what Kafka's Raft client keeps of
its control records).

Replays FeatureLevelRecord (a feature's finalized level; level 0 removes it), KRaftVersionRecord
and VotersRecord (KIP-853: the quorum's version only moves up; a voter set replaces the last)
and ProducerIdsRecord (the next producer id block; it only moves forward).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.quorum_records import KRaftVersionRecord, Voter, VotersRecord
from controlplane.controller.records import FeatureLevelRecord, ProducerIdsRecord, Record

METADATA_VERSION = "metadata.version"
NO_PRODUCER_IDS = 0  # Kafka's first block starts at producer id 0


@dataclasses.dataclass(slots=True)
class FeaturesImage:
    finalized_features: dict[str, int] = dataclasses.field(default_factory=dict)
    # The start of the next producer id block AllocateProducerIds hands out.
    next_producer_id: int = NO_PRODUCER_IDS
    # Who was handed the block that ends at next_producer_id, at which broker epoch (what
    # rebuilds the image exactly from a snapshot).
    producer_ids_owner: tuple[int, int] | None = None
    # KIP-853: the quorum's kraft.version (0: static voters) and its voters (none at 0).
    kraft_version: int = 0
    voters: tuple[Voter, ...] = ()

    @property
    def metadata_version(self) -> int | None:
        return self.finalized_features.get(METADATA_VERSION)

    def apply(self, delta: FeaturesDelta) -> None:
        if delta.kraft_version is not None:
            self.kraft_version = delta.kraft_version
        if delta.voters is not None:
            self.voters = delta.voters
        for name, level in delta.changed_features.items():
            if level is None:
                self.finalized_features.pop(name, None)
            else:
                self.finalized_features[name] = level
        if delta.producer_ids is not None:
            self.producer_ids_owner = delta.producer_ids[:2]
            self.next_producer_id = delta.producer_ids[2]

    def as_comparable(self) -> dict[str, Any]:
        return {
            "finalized_features": dict(sorted(self.finalized_features.items())),
            "next_producer_id": self.next_producer_id,
            "producer_ids_owner": self.producer_ids_owner,
            "kraft_version": self.kraft_version,
            "voters": [dataclasses.asdict(v) for v in self.voters],
        }

    def records(self) -> Iterator[Record]:
        """The quorum's version and voters first (Kafka's snapshot carries them in its
        header's control batch), then metadata.version (every later record is read at it),
        then the other features by name, then the producer id block."""
        if self.kraft_version:
            yield KRaftVersionRecord(self.kraft_version)
        if self.voters:
            yield VotersRecord(self.voters)
        levels = self.finalized_features
        if METADATA_VERSION in levels:
            yield FeatureLevelRecord(METADATA_VERSION, levels[METADATA_VERSION])
        for name in sorted(levels.keys() - {METADATA_VERSION}):
            yield FeatureLevelRecord(name, levels[name])
        if self.producer_ids_owner is not None:
            broker_id, broker_epoch = self.producer_ids_owner
            yield ProducerIdsRecord(broker_id, broker_epoch, self.next_producer_id)


class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self.image = image
        self.changed_features: dict[str, int | None] = {}
        self.producer_ids: tuple[int, int, int] | None = None  # (broker, epoch, next id)
        self.kraft_version: int | None = None
        self.voters: tuple[Voter, ...] | None = None

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            FeatureLevelRecord: self.replay_feature_level,
            ProducerIdsRecord: self.replay_producer_ids,
            KRaftVersionRecord: self.replay_kraft_version,
            VotersRecord: self.replay_voters,
        }

    @property
    def current_kraft_version(self) -> int:
        return self.image.kraft_version if self.kraft_version is None else self.kraft_version

    @property
    def current_voters(self) -> tuple[Voter, ...]:
        return self.image.voters if self.voters is None else self.voters

    def replay_kraft_version(self, record: KRaftVersionRecord, offset: int) -> None:
        if record.kraft_version < self.current_kraft_version:
            raise ValueError(
                f"KRaftVersionRecord moves kraft.version down to {record.kraft_version}"
            )
        self.kraft_version = record.kraft_version

    def replay_voters(self, record: VotersRecord, offset: int) -> None:
        if self.current_kraft_version < 1:
            raise ValueError("a VotersRecord before kraft.version 1")
        if len({v.voter_id for v in record.voters}) != len(record.voters):
            raise ValueError("a VotersRecord names a voter twice")
        self.voters = record.voters

    def feature_level(self, name: str) -> int | None:
        if name in self.changed_features:
            return self.changed_features[name]
        return self.image.finalized_features.get(name)

    @property
    def metadata_version(self) -> int | None:
        return self.feature_level(METADATA_VERSION)

    def finalized_features(self) -> dict[str, int]:
        levels = dict(self.image.finalized_features)
        for name, level in self.changed_features.items():
            if level is None:
                levels.pop(name, None)
            else:
                levels[name] = level
        return levels

    @property
    def next_producer_id(self) -> int:
        if self.producer_ids is not None:
            return self.producer_ids[2]
        return self.image.next_producer_id

    def replay_feature_level(self, record: FeatureLevelRecord, offset: int) -> None:
        if record.feature_level < 0:
            raise ValueError(f"FeatureLevelRecord {record.name} at level {record.feature_level}")
        self.changed_features[record.name] = record.feature_level or None

    def replay_producer_ids(self, record: ProducerIdsRecord, offset: int) -> None:
        if record.next_producer_id <= self.next_producer_id and self.has_producer_ids():
            raise ValueError(
                f"ProducerIdsRecord moves the next producer id back to {record.next_producer_id}"
            )
        self.producer_ids = (record.broker_id, record.broker_epoch, record.next_producer_id)

    def has_producer_ids(self) -> bool:
        return self.producer_ids is not None or self.image.producer_ids_owner is not None
