"""The whole image and the whole delta: each made of one part per domain, as Kafka's MetadataImage
and MetadataDelta are (ClusterImage, TopicsImage, ConfigurationsImage, ClientQuotasImage,
AclsImage, DelegationTokenImage, ScramImage), and MirrorMaker 2's (MirrorImage).

`MetadataDelta.replay` is the one place records are applied: it hands each record to the part
that owns its type (one dict lookup), so a new record type is added to its domain's part alone.
Handlers read the state through the delta, so a batch of requests sees its own earlier changes.
Replaying every record of the log into an empty image rebuilds the state exactly;
`verify_metadata` depends on that. So does a snapshot (Kafka's MetadataImage.write): each part
yields the records that rebuild it in an empty image (`snapshot_records`), and
`image_from_records` replays them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Protocol

from controlplane.controller.image.acls import AclsDelta, AclsImage
from controlplane.controller.image.client_quotas import ClientQuotasDelta, ClientQuotasImage
from controlplane.controller.image.cluster import BrokerRegistration, ClusterDelta, ClusterImage
from controlplane.controller.image.configs import (
    ConfigKey,
    ConfigurationsDelta,
    ConfigurationsImage,
)
from controlplane.controller.image.delegation_tokens import (
    DelegationTokenDelta,
    DelegationTokenImage,
)
from controlplane.controller.image.features import FeaturesDelta, FeaturesImage
from controlplane.controller.image.mirror import MirrorDelta, MirrorImage
from controlplane.controller.image.scram import ScramDelta, ScramImage, ScramKey
from controlplane.controller.image.topics import (
    PartitionRegistration,
    TopicInfo,
    TopicPartition,
    TopicsDelta,
    TopicsImage,
)
from controlplane.controller.quorum_records import Voter
from controlplane.controller.records import (
    NO_OFFSET,
    AccessControlEntryRecord,
    DelegationTokenRecord,
    PartitionRecord,
    QuotaEntity,
    Record,
    RemoveTopicRecord,
    TopicRecord,
)
from controlplane.controller.scram_records import UserScramCredentialRecord

Replayer = Callable[[Any, int], None]  # applies one record at its offset


class ImagePart(Protocol):
    """A part of the image: it can say itself as records, for a snapshot."""

    def records(self) -> Iterator[Record]:
        """The records that, replayed in order into an empty image (after the records of the
        parts before it), rebuild the part exactly; in a deterministic order, so that equal
        parts yield equal records."""
        ...


class DerivedIndex(Protocol):
    """An index the layers above build from the image (cluster health) and keep current: the
    image advances it with every delta it applies, so it never needs rebuilding."""

    def advance(self, delta: MetadataDelta) -> None: ...


@dataclasses.dataclass(slots=True)
class MetadataImage:
    """The state after some offset of the log. Its flat attributes (brokers, partitions, ...)
    are its parts' own collections: readers and projections change them in place."""

    cluster_id: str
    last_offset: int = NO_OFFSET
    features_image: FeaturesImage = dataclasses.field(default_factory=FeaturesImage)
    cluster_image: ClusterImage = dataclasses.field(default_factory=ClusterImage)
    topics_image: TopicsImage = dataclasses.field(default_factory=TopicsImage)
    configs_image: ConfigurationsImage = dataclasses.field(default_factory=ConfigurationsImage)
    client_quotas_image: ClientQuotasImage = dataclasses.field(default_factory=ClientQuotasImage)
    acls_image: AclsImage = dataclasses.field(default_factory=AclsImage)
    delegation_tokens_image: DelegationTokenImage = dataclasses.field(
        default_factory=DelegationTokenImage
    )
    mirror_image: MirrorImage = dataclasses.field(default_factory=MirrorImage)
    scram_image: ScramImage = dataclasses.field(default_factory=ScramImage)
    # Indexes built over the image by name (not part of the state: never compared, replayed
    # or projected as such); each is advanced by every delta applied.
    derived: dict[str, DerivedIndex] = dataclasses.field(default_factory=dict)

    @property
    def brokers(self) -> dict[int, BrokerRegistration]:
        return self.cluster_image.brokers

    @property
    def acls(self) -> dict[str, AccessControlEntryRecord]:
        return self.acls_image.acls

    @property
    def topics(self) -> dict[str, TopicInfo]:
        return self.topics_image.topics

    @property
    def topic_ids(self) -> dict[str, str]:
        return self.topics_image.topic_ids

    @property
    def partitions(self) -> dict[TopicPartition, PartitionRegistration]:
        return self.topics_image.partitions

    @property
    def replica_index(self) -> dict[int, set[TopicPartition]]:
        return self.topics_image.replica_index

    @property
    def isr_index(self) -> dict[int, set[TopicPartition]]:
        return self.topics_image.isr_index

    @property
    def leader_index(self) -> dict[int, set[TopicPartition]]:
        return self.topics_image.leader_index

    @property
    def configs(self) -> dict[tuple[str, str], dict[str, str]]:
        return self.configs_image.configs

    @property
    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        return self.client_quotas_image.client_quotas

    @property
    def delegation_tokens(self) -> dict[str, DelegationTokenRecord]:
        return self.delegation_tokens_image.delegation_tokens

    @property
    def scram_credentials(self) -> dict[ScramKey, UserScramCredentialRecord]:
        return self.scram_image.credentials

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.cluster_image.broker(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        return self.cluster_image.all_brokers()

    def broker_has_leaderships(self, broker_id: int) -> bool:
        return self.topics_image.broker_has_leaderships(broker_id)

    def broker_has_replicas(self, broker_id: int) -> bool:
        return self.topics_image.broker_has_replicas(broker_id)

    def put_partition(self, tp: TopicPartition, partition: PartitionRegistration | None) -> None:
        self.topics_image.put_partition(tp, partition)

    def put_topic(self, topic_id: str, topic: TopicInfo | None) -> None:
        self.topics_image.put_topic(topic_id, topic)

    def put_config(self, key: ConfigKey, value: str | None) -> None:
        self.configs_image.put_config(key, value)

    def put_client_quota(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        self.client_quotas_image.put_client_quota(entity, key, value)

    @property
    def metadata_version(self) -> int | None:
        return self.features_image.metadata_version

    @property
    def kraft_version(self) -> int:
        return self.features_image.kraft_version

    @property
    def voters(self) -> tuple[Voter, ...]:
        return self.features_image.voters

    def apply(self, delta: MetadataDelta) -> None:
        self.features_image.apply(delta.features_delta)
        self.cluster_image.apply(delta.cluster_delta)
        self.acls_image.apply(delta.acls_delta)
        self.topics_image.apply(delta.topics_delta)
        self.configs_image.apply(delta.configs_delta)
        self.client_quotas_image.apply(delta.client_quotas_delta)
        self.delegation_tokens_image.apply(delta.delegation_tokens_delta)
        self.mirror_image.apply(delta.mirror_delta)
        self.scram_image.apply(delta.scram_delta)
        self.last_offset = delta.last_offset
        for index in self.derived.values():
            index.advance(delta)

    def parts(self) -> tuple[ImagePart, ...]:
        """Every part, in the order a snapshot writes them: what a part's replay checks or
        reads comes before it (brokers, then topics and their partitions, then configs, some
        of which belong to topics). A new part goes here, or it is missing from snapshots.
        The features come first: every later record is read at their metadata.version."""
        return (
            self.features_image,
            self.cluster_image,
            self.topics_image,
            self.configs_image,
            self.client_quotas_image,
            self.acls_image,
            self.delegation_tokens_image,
            self.mirror_image,
            self.scram_image,
        )

    def snapshot_records(self) -> Iterator[Record]:
        """The records of a snapshot of this image (Kafka's MetadataImage.write): replayed in
        order into an empty image by `image_from_records`, they rebuild it exactly. A
        generator (an image may hold a million partitions); the same records, in the same
        order, for equal images, so two copies can compare checksums of them."""
        for part in self.parts():
            yield from part.records()

    def as_comparable(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "last_offset": self.last_offset,
            **self.features_image.as_comparable(),
            **self.cluster_image.as_comparable(),
            **self.acls_image.as_comparable(),
            **self.topics_image.as_comparable(),
            **self.configs_image.as_comparable(),
            **self.client_quotas_image.as_comparable(),
            **self.delegation_tokens_image.as_comparable(),
            **self.mirror_image.as_comparable(),
            **self.scram_image.as_comparable(),
        }


class MetadataDelta:
    """Changes over a base image, one part per domain; reads see the changes first."""

    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.last_offset = base.last_offset
        self.replayed: list[tuple[int, Record]] = []
        # What the derived indexes make of this delta, by index name, computed once (before
        # the commit, by the projections) and applied with the delta.
        self.derived: dict[str, Any] = {}
        self.features_delta = FeaturesDelta(base.features_image)
        self.cluster_delta = ClusterDelta(base.cluster_image)
        self.topics_delta = TopicsDelta(base.topics_image)
        self.configs_delta = ConfigurationsDelta(base.configs_image)
        self.client_quotas_delta = ClientQuotasDelta(base.client_quotas_image)
        self.acls_delta = AclsDelta(base.acls_image)
        self.delegation_tokens_delta = DelegationTokenDelta(base.delegation_tokens_image)
        self.mirror_delta = MirrorDelta(base.mirror_image)
        self.scram_delta = ScramDelta(base.scram_image)
        self._replayers = self._replayers_by_type()

    def _replayers_by_type(self) -> dict[type[Record], Replayer]:
        replayers: dict[type[Record], Replayer] = {
            # Two parts change when a topic goes (Kafka's MetadataDelta.replay does the same).
            RemoveTopicRecord: self._replay_remove_topic,
        }
        for part in (
            self.features_delta,
            self.cluster_delta,
            self.topics_delta,
            self.configs_delta,
            self.client_quotas_delta,
            self.acls_delta,
            self.delegation_tokens_delta,
            self.mirror_delta,
            self.scram_delta,
        ):
            for record_type, replayer in part.replayers().items():
                if record_type in replayers:
                    raise TypeError(f"{record_type.__name__} is replayed by two parts")
                replayers[record_type] = replayer
        return replayers

    @property
    def cluster_id(self) -> str:
        return self.base.cluster_id

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def replay(self, record: Record) -> int:
        """Apply one record at the next offset; returns that offset."""
        offset = self.last_offset + 1
        try:
            replayer = self._replayers[type(record)]
        except KeyError:
            raise ValueError(f"No replay rule for {type(record).__name__}") from None
        replayer(record, offset)
        self.last_offset = offset
        self.replayed.append((offset, record))
        return offset

    def _replay_remove_topic(self, record: RemoveTopicRecord, offset: int) -> None:
        removed = self.topics_delta.replay_remove_topic(record, offset)
        self.configs_delta.replay_remove_topic(removed.name)

    # --- what changed, by part (the projections persist these) ------------------------------
    @property
    def changed_features(self) -> dict[str, int | None]:
        return self.features_delta.changed_features

    @property
    def changed_producer_ids(self) -> tuple[int, int, int] | None:
        return self.features_delta.producer_ids

    @property
    def changed_brokers(self) -> dict[int, BrokerRegistration | None]:
        return self.cluster_delta.changed_brokers

    @property
    def changed_topics(self) -> dict[str, TopicInfo | None]:
        return self.topics_delta.changed_topics

    @property
    def changed_partitions(self) -> dict[TopicPartition, PartitionRegistration | None]:
        return self.topics_delta.changed_partitions

    @property
    def changed_configs(self) -> dict[ConfigKey, str | None]:
        return self.configs_delta.changed_configs

    @property
    def changed_client_quotas(self) -> dict[tuple[QuotaEntity, str], float | None]:
        return self.client_quotas_delta.changed_client_quotas

    @property
    def changed_acls(self) -> dict[str, AccessControlEntryRecord | None]:
        return self.acls_delta.changed_acls

    @property
    def changed_delegation_tokens(self) -> dict[str, DelegationTokenRecord | None]:
        return self.delegation_tokens_delta.changed_delegation_tokens

    @property
    def changed_scram_credentials(self) -> dict[ScramKey, UserScramCredentialRecord | None]:
        return self.scram_delta.changed_scram_credentials

    @property
    def leader_elections(self) -> int:
        """Partition changes that gave a partition a new leader."""
        return self.topics_delta.leader_elections

    @property
    def unclean_leader_elections(self) -> int:
        return self.topics_delta.unclean_leader_elections

    # --- reads through the changes --------------------------------------------------------
    @property
    def metadata_version(self) -> int | None:
        return self.features_delta.metadata_version

    def feature_level(self, name: str) -> int | None:
        return self.features_delta.feature_level(name)

    @property
    def kraft_version(self) -> int:
        return self.features_delta.current_kraft_version

    @property
    def voters(self) -> tuple[Voter, ...]:
        return self.features_delta.current_voters

    def finalized_features(self) -> dict[str, int]:
        return self.features_delta.finalized_features()

    @property
    def next_producer_id(self) -> int:
        return self.features_delta.next_producer_id

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.cluster_delta.broker(broker_id)

    def all_brokers(self) -> Iterator[BrokerRegistration]:
        return self.cluster_delta.all_brokers()

    def broker_has_leaderships(self, broker_id: int) -> bool:
        return self.topics_delta.broker_has_leaderships(broker_id)

    def topic(self, topic_id: str) -> TopicInfo | None:
        return self.topics_delta.topic(topic_id)

    def topic_id(self, name: str) -> str | None:
        return self.topics_delta.topic_id(name)

    def topic_by_name(self, name: str) -> TopicInfo | None:
        topic_id = self.topics_delta.topic_id(name)
        return None if topic_id is None else self.topics_delta.topic(topic_id)

    def all_topics(self) -> Iterator[TopicInfo]:
        return self.topics_delta.all_topics()

    def partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        return self.topics_delta.partition(tp)

    def topic_partitions(
        self, topic: TopicInfo
    ) -> Iterator[tuple[TopicPartition, PartitionRegistration]]:
        for index in range(topic.partition_count):
            tp = (topic.topic_id, index)
            partition = self.topics_delta.partition(tp)
            if partition is not None:
                yield tp, partition

    def partitions_with_replica(self, broker_id: int) -> set[TopicPartition]:
        return self.topics_delta.partitions_with_replica(broker_id)

    def partitions_with_isr_member(self, broker_id: int) -> set[TopicPartition]:
        return self.topics_delta.partitions_with_isr_member(broker_id)

    def partitions_led_by(self, broker_id: int) -> set[TopicPartition]:
        return self.topics_delta.partitions_led_by(broker_id)

    def topics_off_first_replica(self, or_with_replica_on: Collection[int]) -> set[str]:
        """The topics with a partition not led by its first replica, or with a replica on a
        broker of `or_with_replica_on` (more topics at times, never fewer)."""
        return self.topics_delta.topics_off_first_replica(or_with_replica_on)

    def config(self, resource_type: str, resource_name: str, name: str) -> str | None:
        return self.configs_delta.config(resource_type, resource_name, name)

    def configs_of(self, resource_type: str, resource_name: str) -> dict[str, str]:
        return self.configs_delta.configs_of(resource_type, resource_name)

    def client_quotas_of(self, entity: QuotaEntity) -> dict[str, float]:
        return self.client_quotas_delta.client_quotas_of(entity)

    def acl(self, acl_id: str) -> AccessControlEntryRecord | None:
        return self.acls_delta.acl(acl_id)

    def all_acls(self) -> Iterator[tuple[str, AccessControlEntryRecord]]:
        return self.acls_delta.all_acls()

    def delegation_token(self, token_id: str) -> DelegationTokenRecord | None:
        return self.delegation_tokens_delta.delegation_token(token_id)

    def all_delegation_tokens(self) -> Iterator[DelegationTokenRecord]:
        return self.delegation_tokens_delta.all_delegation_tokens()

    def scram_credential(self, name: str, mechanism: str) -> UserScramCredentialRecord | None:
        return self.scram_delta.scram_credential(name, mechanism)

    def all_scram_credentials(self) -> Iterator[UserScramCredentialRecord]:
        return self.scram_delta.all_scram_credentials()


def replay_log(cluster_id: str, records: list[Record]) -> MetadataImage:
    """Rebuild the image from the whole log, from offset 0."""
    image = MetadataImage(cluster_id=cluster_id)
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    image.apply(delta)
    return image


# A snapshot is loaded in deltas of this many records, as the log's are committed: a delta of a
# million partitions would hold them all a second time until applied.
SNAPSHOT_RECORDS_PER_DELTA = 10_000


def image_from_records(
    *, cluster_id: str, records: Iterable[Record], last_offset: int
) -> MetadataImage:
    """The image a snapshot describes: its records (`MetadataImage.snapshot_records`) replayed
    into an empty image, which is then at `last_offset`, the offset the snapshot was taken at
    (the log goes on from the next one). The records are replayed at offsets of their own
    (0, 1, ...), which no state keeps: every offset the image holds (broker epochs, where a
    controlled shutdown began, the mirror's offsets) is carried in the records."""
    image = MetadataImage(cluster_id=cluster_id)
    delta = MetadataDelta(image)
    topics = image.topics_image
    # A topic and its partitions (a TopicRecord, then its PartitionRecords 0..n-1, as
    # `TopicsImage.records` yields them) go straight into the image, whole (`load_topic`, which
    # checks them as replay would); every other record is replayed through a delta, applied
    # before the next topic so that the records' order holds.
    topic: TopicRecord | None = None
    partitions: list[PartitionRecord] = []
    for record in records:
        if (
            isinstance(record, PartitionRecord)
            and topic is not None
            and record.topic_id == topic.topic_id
        ):
            partitions.append(record)
            continue
        if topic is not None:
            topics.load_topic(topic, partitions)
            topic, partitions = None, []
        if isinstance(record, TopicRecord):
            if delta.replayed:
                image.apply(delta)
                delta = MetadataDelta(image)
            topic = record
            continue
        delta.replay(record)
        if len(delta.replayed) == SNAPSHOT_RECORDS_PER_DELTA:
            image.apply(delta)
            delta = MetadataDelta(image)
    if topic is not None:
        topics.load_topic(topic, partitions)
    image.apply(delta)
    image.last_offset = last_offset
    return image
