"""Which partitions are canary, and where canary partitions may live (KIP-1095).

The stride rule (the contract's): with p = percent.canary.partition > 0, n = floor(100 / p);
partition i of a topic with at least n partitions is canary when i % n == 0. So at 3.125 %
(n = 32) a 128-partition topic has canary partitions 0, 32, 64 and 96, and a 16-partition one
has none. A partition's canary status is decided once, when it is created, and kept in its
PartitionRecord; expanding a topic classifies only the new partitions, by the same rule over
the topic's new partition count.

A canary partition is *isolated* when every replica is on a canary broker (pod
`canary-broker`). Elections keep a canary partition's leadership on canary brokers where its
ISR allows: `leader_order` puts the canary replicas first.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from controlplane.controller.config_schema import TOPIC_CONFIGS, ConfigView
from controlplane.controller.image import BrokerRegistration, MetadataDelta, PartitionRegistration

BROKER_POD = "broker"
CANARY_BROKER_POD = "canary-broker"
BROKER_PODS = frozenset({BROKER_POD, CANARY_BROKER_POD})
PERCENT_CANARY_PARTITION = "percent.canary.partition"


def canary_stride(percent: float) -> int | None:
    """n = floor(100 / p): every n-th partition is canary; None when p is 0 (no canary
    partitions) or so small that no topic could ever reach n partitions."""
    if not percent > 0:  # also NaN
        return None
    ratio = 100.0 / percent
    if not math.isfinite(ratio):
        return None
    return max(1, math.floor(ratio))


def is_canary_partition(index: int, partition_count: int, percent: float) -> bool:
    """Whether partition `index` of a topic with `partition_count` partitions is canary."""
    stride = canary_stride(percent)
    return stride is not None and partition_count >= stride and index % stride == 0


def canary_partitions(first: int, partition_count: int, percent: float) -> list[int]:
    """The canary partitions among `first .. partition_count - 1`: a new topic's (first 0) or
    the ones an expansion to `partition_count` adds (first = the old count)."""
    stride = canary_stride(percent)
    if stride is None or partition_count < stride:
        return []
    start = -(-first // stride) * stride  # the first multiple of the stride at or after `first`
    return list(range(start, partition_count, stride))


def topic_canary_percent(
    configs: ConfigView, topic_name: str, given: Mapping[str, str | None] | None = None
) -> float:
    """The topic's effective percent.canary.partition: `given` (a CreateTopics request's
    configs, already validated) first, then the topic's override, then the cluster default."""
    if given is not None and given.get(PERCENT_CANARY_PARTITION) is not None:
        return float(
            TOPIC_CONFIGS[PERCENT_CANARY_PARTITION].parse(str(given[PERCENT_CANARY_PARTITION]))
        )
    return float(configs.topic_value(topic_name, PERCENT_CANARY_PARTITION))


def canary_broker_ids(brokers: Iterable[BrokerRegistration]) -> frozenset[int]:
    """Every registered canary broker, fenced or not."""
    return frozenset(b.broker_id for b in brokers if b.pod == CANARY_BROKER_POD)


def canary_brokers_of(view: MetadataDelta) -> frozenset[int]:
    return canary_broker_ids(view.all_brokers())


def isolated(replicas: Sequence[int], canary_brokers: Collection[int]) -> bool:
    """All replicas on canary brokers (an empty replica list is not isolated)."""
    return bool(replicas) and all(r in canary_brokers for r in replicas)


def leader_order(
    partition: PartitionRegistration, canary_brokers: Collection[int]
) -> tuple[int, ...]:
    """The order in which replicas are tried as leader: replica order, except that a canary
    partition tries its canary replicas first (KIP-1095: canary traffic stays on canary
    brokers while its ISR allows)."""
    return replicas_leader_order(partition.replicas, partition.is_canary, canary_brokers)


def replicas_leader_order(
    replicas: tuple[int, ...], is_canary: bool, canary_brokers: Collection[int]
) -> tuple[int, ...]:
    """`leader_order` of a partition with these replicas (one whose replicas are about to
    change, without building the changed registration)."""
    if not is_canary or not canary_brokers:
        return replicas
    first = [r for r in replicas if r in canary_brokers]
    if not first or len(first) == len(replicas):
        return replicas
    return (*first, *(r for r in replicas if r not in canary_brokers))


def preferred_leader(partition: PartitionRegistration, canary_brokers: Collection[int]) -> int:
    """The replica a preferred election moves leadership to: the first of `leader_order`."""
    order = leader_order(partition, canary_brokers)
    return order[0] if order else partition.preferred_leader
