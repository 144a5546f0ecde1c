"""A reassignment's new replicas copying their partition (KIP-455), so a simulated move takes
time as a real one does.

A simulated broker holds no data: a follower that fetches is caught up at once (isr.py). A
replica a reassignment adds (`adding_replicas`) starts empty instead, and copies the
partition's `partition_bytes` from its leader at `bytes_per_s`, or slower where Kafka's
throttle configs say so (KIP-73): the follower's `follower.replication.throttled.rate` for a
replica its topic lists in `follower.replication.throttled.replicas`, the leader's
`leader.replication.throttled.rate` for a leader replica listed in
`leader.replication.throttled.replicas` (`*`: every replica of the topic). Only once it has
copied it all does its leader take it into the ISR, with the AlterPartition that completes the
move on the controller.

Progress is added up each time the leaders look (at the rate of that moment, so a throttle set
or removed mid-move counts from then on); a replica no longer being added is forgotten.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from simulator.metadata import MetadataView, PartitionView

DEFAULT_PARTITION_BYTES = 64 * 1024 * 1024  # what each simulated partition holds
DEFAULT_BYTES_PER_S = 256 * 1024 * 1024  # a follower's fetch rate without a throttle

Replica = tuple[str, int, int]  # topic, partition, broker


@dataclasses.dataclass(slots=True)
class _Copy:
    copied: float
    seen: float


class CatchUp:
    """The new replicas' copies in progress: `caught_up(view, partition, replica)` says whether
    a replica may join its ISR."""

    def __init__(
        self,
        *,
        partition_bytes: int = DEFAULT_PARTITION_BYTES,
        bytes_per_s: float = DEFAULT_BYTES_PER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if partition_bytes < 0 or bytes_per_s <= 0:
            raise ValueError("partition_bytes must be >= 0 and bytes_per_s > 0")
        self.partition_bytes = partition_bytes
        self.bytes_per_s = bytes_per_s
        self.clock = clock
        self._copies: dict[Replica, _Copy] = {}
        self._looked_at: set[Replica] = set()

    @property
    def in_progress(self) -> int:
        return len(self._copies)

    def caught_up(self, view: MetadataView, partition: PartitionView, replica: int) -> bool:
        """Whether `replica` of `partition` has the partition's data: at once unless the
        reassignment adds it, else once it copied `partition_bytes`."""
        key = (partition.topic, partition.partition, replica)
        self._looked_at.add(key)
        if replica not in partition.adding_replicas:
            self._copies.pop(key, None)
            return True
        now = self.clock()
        copy = self._copies.get(key)
        if copy is None:
            self._copies[key] = _Copy(0.0, now)
            return self.partition_bytes == 0
        rate = self.rate(view, partition, replica)
        copy.copied += max(0.0, now - copy.seen) * rate
        copy.seen = now
        if copy.copied >= self.partition_bytes:
            del self._copies[key]
            return True
        return False

    def rate(self, view: MetadataView, partition: PartitionView, replica: int) -> float:
        """The replica's copy rate: the fetch rate, or a throttle that applies to it."""
        rate = self.bytes_per_s
        follower = view.replication_throttle("follower", partition, replica)
        leader = view.replication_throttle("leader", partition, partition.leader)
        for throttle in (follower, leader):
            if throttle is not None:
                rate = min(rate, throttle)
        return max(rate, 1.0)  # a rate of 0 still moves, as Kafka's quota lets one fetch in

    def round_done(self) -> None:
        """The leaders looked at every partition that lacks a replica: a copy not looked at
        is of a move cancelled, replaced or gone, and is forgotten."""
        for key in [k for k in self._copies if k not in self._looked_at]:
            del self._copies[key]
        self._looked_at.clear()
