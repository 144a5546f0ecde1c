"""Cluster health the Kafka way, kept current from the controller's own state.

What Kafka's brokers and controller report as MBeans, for the whole cluster, per topic and per
broker: under-replicated partitions (ISR smaller than the replicas: ReplicaManager's
UnderReplicatedPartitions), under and at min ISR (ISR smaller than, or equal to, the topic's
effective `min.insync.replicas`: UnderMinIsrPartitionCount, AtMinIsrPartitionCount), leaderless
partitions (the controller's OfflinePartitionsCount), partitions off their preferred leader
(PreferredReplicaImbalanceCount: the leader is not the first replica, as Kafka's
ControllerMetricsChanges counts it, leaderless ones included) and offline log dirs
(LogManager's OfflineLogDirectoryCount).

One model of a log dir's and a replica's state, for every reader (the API, the pages, /metrics):

- A log dir is offline while the broker's latest heartbeat names it (`offline_log_dirs`); a
  heartbeat that no longer names it, or a new incarnation (registration clears the list), brings
  it back online. A fenced broker does not heartbeat: its other dirs are unknown, not online.
  AlterReplicaState (KIP-589) names replicas, not dirs: what it reports are offline replicas,
  and the broker's next heartbeat names the dir. Counting an unnamed dir from offline replicas
  alone would outlive a repair (replicas stay offline until a leader takes them back), and the
  image, all this index may depend on, keeps no history to tell the two apart.
- A replica is offline when AlterReplicaState marked it (until it is back in the ISR or its
  broker registers anew) or its broker is fenced or gone, as Kafka's MetadataResponse counts
  `offline_replicas` (KRaftMetadataCache.getOfflineReplicas).

`HealthIndex` is built once from the image, then advanced by each delta: only the partitions
a delta changed are counted again (and every partition of a topic whose effective
`min.insync.replicas` changed), so a commit costs what it changed, never a scan of the cluster.
The projection writes what changed (`HealthChanges`); pages read those rows.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from controlplane.controller.config_schema import (
    BROKER,
    CLUSTER_DEFAULT,
    TOPIC,
    ConfigView,
)
from controlplane.controller.image import (
    BrokerRegistration,
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicPartition,
)
from controlplane.controller.records import NO_LEADER

MIN_ISR = "min.insync.replicas"
# GET /api/v1/cluster's `health` (docs/architecture/health-timeline.md), in the documented order.
CONTRACT_FIELDS = (
    "under_replicated_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
    "leaderless_partitions",
    "preferred_replica_imbalance",
    "offline_log_dirs",
)
ConfigLookup = Callable[[str, str, str], str | None]
INDEX_NAME = "health"  # its key in MetadataImage.derived and MetadataDelta.derived

# Positions in a topic's counts.
PARTITIONS, UNDER_REPLICATED, UNDER_MIN_ISR, AT_MIN_ISR = 0, 1, 2, 3
LEADERLESS, IMBALANCED, OFFLINE_REPLICAS, ALL_REPLICAS_OFFLINE = 4, 5, 6, 7
CANARY_NOT_ISOLATED = 8
TOPIC_FIELDS = 9
# Positions in a broker's load.
LEADERS, REPLICAS, IN_SYNC, OFFLINE, PREFERRED = 0, 1, 2, 3, 4
LED_UNDER_REPLICATED, LED_UNDER_MIN_ISR = 5, 6
BROKER_FIELDS = 7


@dataclasses.dataclass(frozen=True, slots=True)
class HealthCounts:
    """Partition counts of a topic or of the whole cluster."""

    partitions: int = 0
    under_replicated_partitions: int = 0
    under_min_isr_partitions: int = 0
    at_min_isr_partitions: int = 0
    leaderless_partitions: int = 0
    preferred_replica_imbalance: int = 0
    offline_replicas: int = 0
    offline_partitions: int = 0  # every replica offline (KIP-589 log dir failures)
    # KIP-1095: canary partitions with a replica off the canary brokers (the metric
    # kafka_controller_canary_partitions_not_isolated)
    canary_not_isolated: int = 0

    @classmethod
    def of(cls, values: Iterable[int]) -> HealthCounts:
        return cls(*values)

    def values(self) -> tuple[int, ...]:
        # Read field by field: dataclasses.astuple deep-copies each value, and the health
        # figures read these for every topic a commit touches (500 topics created at once).
        values: tuple[int, ...] = _COUNTS(self)
        return values


@dataclasses.dataclass(frozen=True, slots=True)
class TopicHealth:
    topic_id: str
    min_insync_replicas: int
    counts: HealthCounts


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerLoad:
    """What one broker holds: its replicas, how many it leads, how many are in sync or offline,
    how many it is the preferred leader of, and of the partitions it leads, how many are
    under-replicated or under min ISR (Kafka's per-broker ReplicaManager gauges). Offline
    replicas: marked by AlterReplicaState, or every one it holds while it is fenced. Offline log
    dirs: those its latest heartbeat names (`log_dir_states`)."""

    broker_id: int
    leaders: int = 0
    replicas: int = 0
    in_sync_replicas: int = 0
    offline_replicas: int = 0
    preferred_leaders: int = 0
    under_replicated_partitions: int = 0
    under_min_isr_partitions: int = 0
    offline_log_dirs: int = 0

    def is_empty(self) -> bool:
        return not any(_LOAD_FIGURES(self))


_COUNTS = operator.attrgetter(*(f.name for f in dataclasses.fields(HealthCounts)))
_LOAD_FIGURES = operator.attrgetter(
    *(f.name for f in dataclasses.fields(BrokerLoad) if f.name != "broker_id")
)


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterHealth:
    counts: HealthCounts
    offline_log_dirs: int = 0

    def as_dict(self) -> dict[str, int]:
        """The contract's `health` object (GET /api/v1/cluster) and the rest of the counts."""
        c = self.counts
        return {
            "under_replicated_partitions": c.under_replicated_partitions,
            "under_min_isr_partitions": c.under_min_isr_partitions,
            "at_min_isr_partitions": c.at_min_isr_partitions,
            "leaderless_partitions": c.leaderless_partitions,
            "preferred_replica_imbalance": c.preferred_replica_imbalance,
            "offline_log_dirs": self.offline_log_dirs,
            "partitions": c.partitions,
            "offline_replicas": c.offline_replicas,
            "offline_partitions": c.offline_partitions,
            "canary_partitions_not_isolated": c.canary_not_isolated,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class HealthChanges:
    """What a delta did to health: the topics and brokers whose figures changed (None: gone)
    and the cluster's totals after it."""

    topics: dict[str, TopicHealth | None]
    brokers: dict[int, BrokerLoad | None]
    totals: ClusterHealth
    changed: bool


class LogDirState(enum.StrEnum):
    ONLINE = "online"
    OFFLINE = "offline"
    UNKNOWN = "unknown"  # its broker is fenced: no heartbeat says how it is


def log_dir_states(
    log_dirs: Sequence[str], offline_log_dirs: Collection[str], fenced: bool
) -> list[tuple[str, LogDirState]]:
    """Each of a broker's log dirs and its state (the module's model): offline while the latest
    heartbeat names it, unknown when the broker is fenced (not heartbeating), else online. A dir
    a heartbeat names that the registration does not list is offline too (listed last)."""
    offline = set(offline_log_dirs)
    states = [
        (
            d,
            LogDirState.OFFLINE
            if d in offline
            else LogDirState.UNKNOWN
            if fenced
            else LogDirState.ONLINE,
        )
        for d in log_dirs
    ]
    listed = set(log_dirs)
    states.extend((d, LogDirState.OFFLINE) for d in sorted(offline - listed))
    return states


def offline_log_dirs_of(registration: BrokerRegistration | None) -> int:
    """A broker's offline log dirs: those its latest heartbeat names (a new incarnation starts
    with none)."""
    if registration is None:
        return 0
    return len(set(registration.offline_log_dirs))


def live_brokers(brokers: Iterable[BrokerRegistration]) -> frozenset[int]:
    """The brokers whose replicas are not offline for being on a fenced (or gone) broker."""
    return frozenset(b.broker_id for b in brokers if not b.fenced)


def offline_replicas_of(p: PartitionRegistration, live: Collection[int]) -> tuple[int, ...]:
    """A partition's offline replicas: marked by AlterReplicaState, or on a broker not live."""
    down = [r for r in p.replicas if r not in live]
    if not down:
        return p.offline_replicas
    return tuple(sorted({*p.offline_replicas, *down}))


def _count(
    p: PartitionRegistration,
    min_isr: int,
    sign: int,
    topic: list[int],
    brokers: dict[int, list[int]],
    live: Collection[int],
) -> None:
    """Add (sign 1) or take away (-1) one partition's share of its topic's counts and of its
    brokers' loads, with `live` the brokers not fenced at that moment. Hot: a large commit
    calls it twice per changed partition."""
    replicas, isr, leader = p.replicas, p.isr, p.leader
    in_sync = len(isr)
    under_replicated = in_sync < len(replicas)
    under_min = in_sync < min_isr
    topic[PARTITIONS] += sign
    if under_replicated:
        topic[UNDER_REPLICATED] += sign
    if under_min:
        topic[UNDER_MIN_ISR] += sign
    elif in_sync == min_isr:
        topic[AT_MIN_ISR] += sign
    if leader == NO_LEADER:
        topic[LEADERLESS] += sign
    if not replicas or leader != replicas[0]:
        topic[IMBALANCED] += sign
    if p.is_canary and not p.canary_isolated:
        topic[CANARY_NOT_ISOLATED] += sign
    offline = offline_replicas_of(p, live)
    if offline:
        topic[OFFLINE_REPLICAS] += sign * len(offline)
        if replicas and set(replicas) <= set(offline):
            topic[ALL_REPLICAS_OFFLINE] += sign
        for broker_id in offline:
            _load(brokers, broker_id)[OFFLINE] += sign
    for position, broker_id in enumerate(replicas):
        load = _load(brokers, broker_id)
        load[REPLICAS] += sign
        if broker_id in isr:
            load[IN_SYNC] += sign
        if position == 0:
            load[PREFERRED] += sign
        if broker_id == leader:
            load[LEADERS] += sign
            if under_replicated:
                load[LED_UNDER_REPLICATED] += sign
            if under_min:
                load[LED_UNDER_MIN_ISR] += sign


def _load(brokers: dict[int, list[int]], broker_id: int) -> list[int]:
    load = brokers.get(broker_id)
    if load is None:
        load = brokers[broker_id] = [0] * BROKER_FIELDS
    return load


class HealthIndex:
    """Health figures of the image it was built from, advanced delta by delta."""

    def __init__(self, static_configs: Mapping[str, str]) -> None:
        self.static_configs = dict(static_configs)
        self.topics: dict[str, TopicHealth] = {}
        self.brokers: dict[int, BrokerLoad] = {}
        self.totals = ClusterHealth(HealthCounts())
        # Until a commit wrote it whole, the tables may hold another controller's figures.
        self.unwritten = True
        self.last_sample_minute: int | None = None  # the projection's note, to prune once

    # --- building and advancing -----------------------------------------------------------
    @classmethod
    def build(cls, image: MetadataImage, static_configs: Mapping[str, str]) -> HealthIndex:
        """Count everything once (a controller taking over)."""
        index = cls(static_configs)
        configs = ConfigView(_image_lookup(image), index.static_configs)
        counts: dict[str, list[int]] = {}
        loads: dict[int, list[int]] = {}
        live = live_brokers(image.all_brokers())
        min_isr = {
            topic_id: _min_isr(configs, topic.name) for topic_id, topic in image.topics.items()
        }
        for (topic_id, _), partition in image.partitions.items():
            topic = counts.get(topic_id)
            if topic is None:
                topic = counts[topic_id] = [0] * TOPIC_FIELDS
            _count(partition, min_isr[topic_id], 1, topic, loads, live)
        for topic_id in image.topics:
            values = counts.get(topic_id) or [0] * TOPIC_FIELDS
            index.topics[topic_id] = TopicHealth(
                topic_id, min_isr[topic_id], HealthCounts.of(values)
            )
        broker_ids = set(loads) | set(image.brokers)
        for broker_id in broker_ids:
            load = _broker_load(broker_id, loads.get(broker_id), image.brokers.get(broker_id))
            if not load.is_empty():
                index.brokers[broker_id] = load
        index.totals = _totals(index.topics.values(), index.brokers.values())
        return index

    def changes(self, delta: MetadataDelta) -> HealthChanges:
        """What `delta` does to the figures (computed once per delta, kept on it)."""
        known = delta.derived.get(INDEX_NAME)
        if isinstance(known, HealthChanges):
            return known
        computed = _changes(self, delta)
        delta.derived[INDEX_NAME] = computed
        return computed

    def advance(self, delta: MetadataDelta) -> None:
        """Apply a committed delta (MetadataImage.apply calls this)."""
        changes = self.changes(delta)
        for topic_id, topic in changes.topics.items():
            if topic is None:
                self.topics.pop(topic_id, None)
            else:
                self.topics[topic_id] = topic
        for broker_id, load in changes.brokers.items():
            if load is None:
                self.brokers.pop(broker_id, None)
            else:
                self.brokers[broker_id] = load
        self.totals = changes.totals
        self.unwritten = False


def _image_lookup(image: MetadataImage) -> ConfigLookup:
    def lookup(resource_type: str, resource_name: str, name: str) -> str | None:
        return image.configs.get((resource_type, resource_name), {}).get(name)

    return lookup


def _min_isr(configs: ConfigView, topic_name: str) -> int:
    return int(configs.topic_value(topic_name, MIN_ISR))


def _broker_load(
    broker_id: int, values: list[int] | None, registration: BrokerRegistration | None
) -> BrokerLoad:
    v = values or [0] * BROKER_FIELDS
    return BrokerLoad(
        broker_id=broker_id,
        leaders=v[LEADERS],
        replicas=v[REPLICAS],
        in_sync_replicas=v[IN_SYNC],
        offline_replicas=v[OFFLINE],
        preferred_leaders=v[PREFERRED],
        under_replicated_partitions=v[LED_UNDER_REPLICATED],
        under_min_isr_partitions=v[LED_UNDER_MIN_ISR],
        offline_log_dirs=offline_log_dirs_of(registration),
    )


def _load_values(load: BrokerLoad | None) -> list[int]:
    if load is None:
        return [0] * BROKER_FIELDS
    return [
        load.leaders,
        load.replicas,
        load.in_sync_replicas,
        load.offline_replicas,
        load.preferred_leaders,
        load.under_replicated_partitions,
        load.under_min_isr_partitions,
    ]


def _totals(topics: Iterable[TopicHealth], brokers: Iterable[BrokerLoad]) -> ClusterHealth:
    sums = [0] * TOPIC_FIELDS
    for topic in topics:
        for i, value in enumerate(topic.counts.values()):
            sums[i] += value
    return ClusterHealth(HealthCounts.of(sums), sum(b.offline_log_dirs for b in brokers))


def _min_isr_rechecked(index: HealthIndex, delta: MetadataDelta) -> set[str]:
    """Topics whose effective min.insync.replicas may have changed: every topic when the
    cluster default changed, else those whose own config did."""
    names: set[str] = set()
    for resource_type, resource_name, name in delta.changed_configs:
        if name != MIN_ISR:
            continue
        if resource_type == BROKER and resource_name == CLUSTER_DEFAULT:
            return {t.topic_id for t in delta.all_topics()}
        if resource_type == TOPIC:
            names.add(resource_name)
    return {topic_id for n in names if (topic_id := delta.topic_id(n)) is not None}


def _topic_partitions(
    partitions: Mapping[TopicPartition, PartitionRegistration | None],
    topic_id: str,
    count: int,
) -> Iterator[PartitionRegistration]:
    for index in range(count):
        partition = partitions.get((topic_id, index))
        if partition is not None:
            yield partition


@dataclasses.dataclass(frozen=True, slots=True)
class _Liveness:
    """The live brokers before a delta and after it."""

    before: frozenset[int]
    after: frozenset[int]

    def changed(self) -> frozenset[int]:
        return self.before ^ self.after


def _recount_topic(
    index: HealthIndex,
    delta: MetadataDelta,
    topic_id: str,
    new_min: Mapping[str, int],
    values: list[int],
    loads: dict[int, list[int]],
    live: _Liveness,
) -> None:
    """Take away every partition of the topic as it was, add every one as it is."""
    base = delta.base
    base_topic = base.topics.get(topic_id)
    old_min = index.topics[topic_id].min_insync_replicas
    count = base_topic.partition_count if base_topic else 0
    for before in _topic_partitions(base.partitions, topic_id, count):
        _count(before, old_min, -1, values, loads, live.before)
    topic = delta.topic(topic_id)
    if topic is not None:
        for _, after in delta.topic_partitions(topic):
            _count(after, new_min[topic_id], 1, values, loads, live.after)


def _recount_partition(
    index: HealthIndex,
    delta: MetadataDelta,
    tp: TopicPartition,
    after: PartitionRegistration | None,
    new_min: Mapping[str, int],
    values: list[int],
    loads: dict[int, list[int]],
    live: _Liveness,
) -> None:
    before = delta.base.partitions.get(tp)
    if before is not None:
        old_topic = index.topics.get(tp[0])
        old_min = old_topic.min_insync_replicas if old_topic else new_min.get(tp[0], 1)
        _count(before, old_min, -1, values, loads, live.before)
    if after is not None:
        _count(after, new_min[tp[0]], 1, values, loads, live.after)


def _liveness_recounted(
    delta: MetadataDelta, live: _Liveness
) -> dict[TopicPartition, PartitionRegistration | None]:
    """The partitions a delta changed, and every partition with a replica on a broker fenced or
    unfenced by it (its replicas went offline or came back): those are counted again."""
    changed = delta.changed_partitions
    flipped = live.changed()
    if not flipped:
        return changed
    recounted = dict(changed)
    for broker_id in flipped:
        # One broker's partitions (its groups), never the whole image's replica index, which is
        # computed for every broker: that made fencing a broker cost O(cluster) (690 ms at 1M
        # partitions). What the delta took the broker off is among `changed` already.
        for tp in delta.partitions_with_replica(broker_id):
            if tp not in recounted:
                recounted[tp] = delta.partition(tp)
    return recounted


def _changes(index: HealthIndex, delta: MetadataDelta) -> HealthChanges:
    configs = ConfigView(delta.config, index.static_configs)
    live = _Liveness(live_brokers(delta.base.all_brokers()), live_brokers(delta.all_brokers()))
    changed = _liveness_recounted(delta, live)
    rechecked = _min_isr_rechecked(index, delta)
    touched_topics = {tp[0] for tp in changed} | rechecked | set(delta.changed_topics)
    topic_values: dict[str, list[int]] = {}
    new_min: dict[str, int] = {}
    loads: dict[int, list[int]] = {}
    for topic_id in touched_topics:
        old = index.topics.get(topic_id)
        topic = delta.topic(topic_id)
        topic_values[topic_id] = list(old.counts.values()) if old else [0] * TOPIC_FIELDS
        if topic is None:
            continue
        if old is None or topic_id in rechecked:
            new_min[topic_id] = _min_isr(configs, topic.name)
        else:
            new_min[topic_id] = old.min_insync_replicas
    # Topics whose min ISR moved are counted again whole; the rest, partition by partition.
    whole = {
        topic_id
        for topic_id in rechecked
        if topic_id in index.topics
        and new_min.get(topic_id) != index.topics[topic_id].min_insync_replicas
    }
    for topic_id in whole:
        _recount_topic(index, delta, topic_id, new_min, topic_values[topic_id], loads, live)
    for tp, partition in changed.items():
        if tp[0] not in whole:
            _recount_partition(
                index, delta, tp, partition, new_min, topic_values[tp[0]], loads, live
            )

    topics: dict[str, TopicHealth | None] = {}
    for topic_id, values in topic_values.items():
        if delta.topic(topic_id) is None:
            if topic_id in index.topics:
                topics[topic_id] = None
            continue
        health = TopicHealth(topic_id, new_min[topic_id], HealthCounts.of(values))
        if index.topics.get(topic_id) != health:
            topics[topic_id] = health

    brokers: dict[int, BrokerLoad | None] = {}
    for broker_id in set(loads) | set(delta.changed_brokers):
        values = _load_values(index.brokers.get(broker_id))
        for i, diff in enumerate(loads.get(broker_id, ())):
            values[i] += diff
        load = _broker_load(broker_id, values, delta.broker(broker_id))
        old_load = index.brokers.get(broker_id)
        if load.is_empty():
            if old_load is not None:
                brokers[broker_id] = None
        elif load != old_load:
            brokers[broker_id] = load

    totals = _advanced_totals(index, topics, brokers)
    return HealthChanges(topics, brokers, totals, changed=bool(topics or brokers))


def _advanced_totals(
    index: HealthIndex,
    topics: Mapping[str, TopicHealth | None],
    brokers: Mapping[int, BrokerLoad | None],
) -> ClusterHealth:
    sums = list(index.totals.counts.values())
    for topic_id, topic in topics.items():
        old = index.topics.get(topic_id)
        if old is not None:
            for i, value in enumerate(old.counts.values()):
                sums[i] -= value
        if topic is not None:
            for i, value in enumerate(topic.counts.values()):
                sums[i] += value
    dirs = index.totals.offline_log_dirs
    for broker_id, load in brokers.items():
        old_load = index.brokers.get(broker_id)
        dirs -= old_load.offline_log_dirs if old_load else 0
        dirs += load.offline_log_dirs if load else 0
    return ClusterHealth(HealthCounts.of(sums), dirs)
