"""A kafka-python partitioner for canary isolation (KIP-1095).

A canary producer (a producer service instance in its canary environment) sends only to the
topic's canary partitions; a regular producer only to the others. Keyed records are hashed with
Kafka's murmur2 over that set alone, so a key always lands on the same partition of its set while
the topic does not change (canary keys on canary partitions). Unkeyed records go to a random
partition of the set that has a leader. When the set is empty, the producer uses every partition
(availability over isolation: a canary producer of a topic without canary partitions still
produces, as the KIP says).
"""

from __future__ import annotations

import random
from typing import Any

from kafka.partitioner import Partitioner, murmur2

from canary.clients.directory import CanaryDirectory


class CanaryPartitioner(Partitioner):  # type: ignore[misc]
    def __init__(self, directory: CanaryDirectory, *, canary: bool) -> None:
        self.directory = directory
        self.canary = canary

    def pool(self, topic: str, all_partitions: list[int]) -> list[int]:
        """The partitions this producer may send to, in order."""
        canary = self.directory.canary_partitions(topic, len(all_partitions))
        pool = [p for p in all_partitions if (p in canary) is self.canary]
        return pool or all_partitions

    def partition(
        self,
        topic: str,
        key: Any,
        serialized_key: bytes | None,
        value: Any,
        serialized_value: bytes | None,
        cluster: Any,
    ) -> int:
        if topic not in cluster.topics():
            raise ValueError(f"Topic {topic} not found in ClusterMetadata")
        pool = self.pool(topic, sorted(cluster.partitions_for_topic(topic)))
        if serialized_key is not None:
            return int(pool[(murmur2(serialized_key) & 0x7FFFFFFF) % len(pool)])
        available = cluster.available_partitions_for_topic(topic) or set()
        live = [p for p in pool if p in available]
        return int(random.choice(live or pool))
