"""The simulated brokers' view of the cluster: the controller's own MetadataImage, fed by the log.

There is no second record interpreter here. Every fetched record is decoded by the core's
`record_from_data` and replayed into a `MetadataDelta` over the view's `MetadataImage`, and the
delta is then applied: what the controller does when it replays its log. So the simulator's
partitions, ISRs, leaders and epochs follow the controller's own rules (a PartitionChangeRecord
bumps the partition epoch, and the leader epoch when it sets a leader, as
`PartitionRegistration.merge` says) and cannot drift from them.

Only this module reads the image's fields: the rest of the simulator asks the view.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from controlplane.controller.image import MetadataDelta, MetadataImage, PartitionRegistration
from controlplane.controller.records import Record, record_from_data
from simulator.state import logger

# `after_offset` of a fetch from the log's first record (offsets start at 0).
LOG_START = -1


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition as the follower replayed it from the metadata log."""

    topic: str
    partition: int
    topic_id: str
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    offline_replicas: tuple[int, ...]
    is_canary: bool
    canary_isolated: bool = False  # every replica on a canary broker (KIP-1095)
    adding_replicas: tuple[int, ...] = ()  # a reassignment in progress (KIP-455)
    removing_replicas: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerView:
    """A broker's registration as the follower replayed it: what a leader checks before taking
    the broker into an ISR (KIP-841: unfenced, not shutting down; KIP-903: this incarnation)."""

    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool


class MetadataView:
    """The image after `last_offset`, and the reads the simulated brokers make of it.

    A `complete` view starts at the log's start and replays every record. One that starts later
    (the follower's `track_partitions=False`) knows nothing of what came before: a record about
    something older (a change to a partition created before it started) cannot be replayed and
    is skipped quietly, as before; in a complete view such a record is a real disagreement with
    the log and counts as a failure.
    """

    def __init__(
        self, cluster_id: str = "", *, after_offset: int = LOG_START, complete: bool = True
    ) -> None:
        self.image = MetadataImage(cluster_id=cluster_id, last_offset=after_offset)
        self.complete = complete

    @classmethod
    def of_image(cls, image: MetadataImage) -> MetadataView:
        """A complete view starting from `image` (a snapshot's): the log goes on after it."""
        view = cls(image.cluster_id)
        view.image = image
        return view

    @property
    def last_offset(self) -> int:
        return self.image.last_offset

    # --- replay -------------------------------------------------------------------------------
    def apply(self, fetched: Iterable[Mapping[str, Any]]) -> int:
        """Replay fetched records (`offset`, `type`, `data`, in log order) into the image.
        Returns how many could not be: malformed, or at odds with what the view holds."""
        delta = MetadataDelta(self.image)
        failures = sum(not self._replay(delta, item) for item in fetched)
        self.image.apply(delta)
        return failures

    def _replay(self, delta: MetadataDelta, item: Mapping[str, Any]) -> bool:
        offset = int(item["offset"])
        if offset <= delta.last_offset:
            return True  # already in the view: replaying it again would apply it twice
        if offset != delta.next_offset:
            # As the controller's own replay does after a gap: the record keeps its offset.
            delta.last_offset = offset - 1
        record_type = str(item.get("type"))
        data = item.get("data") or {}
        record = self._decode(record_type, data)
        if record is None:
            delta.last_offset = offset
            return False
        try:
            delta.replay(record)
        except ValueError as error:
            delta.last_offset = offset  # the view stays as it was; the log moves on
            if not self.complete:
                logger.debug(
                    "skipped a %s about the time before the follower: %s", record_type, error
                )
                return True
            logger.warning("could not replay a %s (%r): %s", record_type, data, error)
            return False
        return True

    @staticmethod
    def _decode(record_type: str, data: Mapping[str, Any]) -> Record | None:
        try:
            return record_from_data(record_type, data)
        except (KeyError, TypeError, ValueError) as error:
            logger.warning("could not replay a %s (%r): %s", record_type, data, error)
            return None

    # --- reads --------------------------------------------------------------------------------
    def topics(self) -> dict[str, str]:
        """Topic name -> topic id."""
        return dict(self.image.topic_ids)

    def topic_count(self) -> int:
        return len(self.image.topics)

    def partition_count(self) -> int:
        return len(self.image.partitions)

    def offline_replica_count(self) -> int:
        """Replicas marked offline (KIP-589), summed over every partition."""
        return sum(len(p.offline_replicas) for p in self.image.partitions.values())

    def broker(self, broker_id: int) -> BrokerView | None:
        registration = self.image.broker(broker_id)
        if registration is None:
            return None
        return BrokerView(
            broker_id,
            registration.epoch,
            registration.fenced,
            registration.in_controlled_shutdown,
        )

    def under_replicated(self, leaders: Collection[int]) -> list[PartitionView]:
        """Partitions led by one of `leaders` whose ISR lacks a replica, by topic and index: one
        pass over the image, a view built only for those."""
        views = [
            self._view(tid, index, registration)
            for (tid, index), registration in self.image.partitions.items()
            if registration.leader in leaders and len(registration.isr) < len(registration.replicas)
        ]
        return sorted(views, key=lambda v: (v.topic, v.partition))

    def partition(self, topic: str, partition: int) -> PartitionView | None:
        topic_id = self.image.topic_ids.get(topic)
        if topic_id is None:
            return None
        registration = self.image.partitions.get((topic_id, partition))
        return None if registration is None else self._view(topic_id, partition, registration)

    def partitions(
        self, topic: str | None = None, *, broker_id: int | None = None
    ) -> list[PartitionView]:
        """Partitions (of `topic`; with a replica on `broker_id`), by topic name and index."""
        topic_id = None if topic is None else self.image.topic_ids.get(topic)
        if topic is not None and topic_id is None:
            return []
        views = [
            self._view(tid, index, registration)
            for (tid, index), registration in self.image.partitions.items()
            if (topic_id is None or tid == topic_id)
            and (broker_id is None or broker_id in registration.replicas)
        ]
        return sorted(views, key=lambda v: (v.topic, v.partition))

    def _view(
        self, topic_id: str, index: int, registration: PartitionRegistration
    ) -> PartitionView:
        topic = self.image.topics.get(topic_id)
        return PartitionView(
            topic=topic_id if topic is None else topic.name,
            partition=index,
            topic_id=topic_id,
            replicas=registration.replicas,
            isr=registration.isr,
            leader=registration.leader,
            leader_epoch=registration.leader_epoch,
            partition_epoch=registration.partition_epoch,
            offline_replicas=registration.offline_replicas,
            is_canary=registration.is_canary,
            canary_isolated=registration.canary_isolated,
            adding_replicas=registration.adding_replicas,
            removing_replicas=registration.removing_replicas,
        )

    def replication_throttle(
        self, side: str, partition: PartitionView, broker_id: int
    ) -> float | None:
        """The replication throttle (bytes/s) on `broker_id`'s replica of `partition` as its
        `side` ("leader" or "follower"), as Kafka's configs set it: the topic lists the replica
        (`partition:broker`, or `*`) and the broker (or the cluster default) has a rate; None
        when it is not throttled."""
        configs = self.image.configs
        listed = configs.get(("TOPIC", partition.topic), {}).get(
            f"{side}.replication.throttled.replicas"
        )
        if not listed:
            return None
        items = {item.strip() for item in listed.split(",")}
        if "*" not in items and f"{partition.partition}:{broker_id}" not in items:
            return None
        key = f"{side}.replication.throttled.rate"
        rate = configs.get(("BROKER", str(broker_id)), {}).get(key)
        if rate is None:
            rate = configs.get(("BROKER", ""), {}).get(key)
        return None if rate is None else float(rate)
