"""Where leadership goes when brokers leave or come back: a fenced, shutting down, unregistered
or restarted broker leaves every ISR and what it led is re-elected; an unfenced broker may lead
leaderless partitions again (Kafka's ReplicationControlManager.handleBrokerFenced, -Unfenced,
-InControlledShutdown and generateLeaderAndIsrUpdates).

Pure: each function adds the records to a PartitionChanges. The brokers domain calls these when
a broker changes state; the unclean-election policy is shared with the replication RPCs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from controlplane.controller.canary.rules import canary_brokers_of
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.image import MetadataDelta, PartitionRegistration, TopicPartition
from controlplane.controller.partitions.changes import (
    AcceptableLeader,
    Election,
    PartitionChanges,
    acceptable_leaders,
    change_partition,
)
from controlplane.controller.records import NO_LEADER, PartitionChangeRecord


def config_view(view: MetadataDelta, static: Mapping[str, str] | None = None) -> ConfigView:
    """The effective configs of a view, with `static` broker configs (none by default)."""
    return ConfigView(view.config, static or {})


class UncleanPolicy:
    """unclean.leader.election.enable per topic id, read once per handler."""

    def __init__(self, view: MetadataDelta, configs: ConfigView) -> None:
        self.view = view
        self.configs = configs
        self._by_topic: dict[str, bool] = {}

    def election(self, topic_id: str) -> Election:
        enabled = self._by_topic.get(topic_id)
        if enabled is None:
            topic = self.view.topic(topic_id)
            enabled = topic is not None and self.configs.unclean_election_enabled(topic.name)
            self._by_topic[topic_id] = enabled
        return Election.UNCLEAN if enabled else Election.ONLINE


def _sorted(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(tps)


def remove_from_isrs(
    changes: PartitionChanges,
    broker_ids: Sequence[int],
    *,
    configs: ConfigView,
    clear_offline: bool = False,
    limit: int | None = None,
) -> bool:
    """Take brokers out of every ISR and re-elect what they led (fencing, controlled shutdown,
    unregistration, a new incarnation). `clear_offline` forgets their offline replicas too: a
    restarted broker reports its log dirs afresh (KIP-589).

    With `limit`, at most that many partitions change (what they led first, so leadership
    returns soonest), and the answer says whether it stopped there (more may be left: the
    caller goes on in another commit, as Kafka bounds one operation's records); the rest are
    found again from the brokers' state then."""
    view = changes.view
    acceptable = acceptable_leaders(view, excluded=broker_ids)
    policy = UncleanPolicy(view, configs)
    leaving = frozenset(broker_ids)
    canary = canary_brokers_of(view)
    touched: set[TopicPartition] = set()
    for broker_id in broker_ids:
        touched |= view.partitions_with_isr_member(broker_id)
        if clear_offline:
            touched |= {
                tp
                for tp in view.partitions_with_replica(broker_id)
                if broker_id in (view.partition(tp) or _EMPTY).offline_replicas
            }
    led: set[TopicPartition] = set()
    if limit is not None:
        for broker_id in broker_ids:
            led |= view.partitions_led_by(broker_id)
    for tp in sorted(touched, key=lambda tp: (tp not in led, tp)) if limit else _sorted(touched):
        if limit is not None and len(changes.records) >= limit:
            return True
        partition = changes.get(tp)
        if partition is None:
            continue
        offline = (
            tuple(r for r in partition.offline_replicas if r not in leaving)
            if clear_offline
            else None
        )
        changes.add(
            change_partition(
                tp,
                partition,
                acceptable=acceptable,
                target_isr=tuple(r for r in partition.isr if r not in leaving),
                target_offline=offline,
                election=policy.election(tp[0]),
                canary_brokers=canary,
            )
        )
    return False


class ReplicaOffline:
    """One broker's replicas as OfflineReplica (KIP-589's AlterReplicaState, KIP-858's failed log
    dir): each out of the ISR (which never empties) and its leadership, a new leader elected
    among the others; what every election reads (the acceptable leaders, the unclean policy, the
    canary brokers) read once, at the first change."""

    def __init__(self, view: MetadataDelta, broker_id: int, configs: ConfigView) -> None:
        self.view = view
        self.broker_id = broker_id
        self.configs = configs
        self._reads: tuple[AcceptableLeader, UncleanPolicy, frozenset[int]] | None = None

    def change(
        self, tp: TopicPartition, partition: PartitionRegistration
    ) -> PartitionChangeRecord | None:
        if self._reads is None:
            self._reads = (
                acceptable_leaders(self.view, excluded=(self.broker_id,)),
                UncleanPolicy(self.view, self.configs),
                canary_brokers_of(self.view),
            )
        acceptable, policy, canary = self._reads
        broker_id = self.broker_id
        return change_partition(
            tp,
            partition,
            acceptable=acceptable,
            target_isr=tuple(r for r in partition.isr if r != broker_id),
            target_offline=tuple(sorted({*partition.offline_replicas, broker_id})),
            election=policy.election(tp[0]),
            canary_brokers=canary,
        )


def elect_leaderless(
    changes: PartitionChanges,
    *,
    configs: ConfigView,
    unfenced: Sequence[int] = (),
    limit: int | None = None,
) -> bool:
    """Partitions left without a leader get one when a replica can lead again (an unfenced
    broker, as Kafka's handleBrokerUnfenced). `unfenced`: only partitions with a replica on
    these brokers, which may lead though their unfencing is not applied yet. With `limit`, at
    most that many partitions change in all (the changes' records count); the answer says
    whether it stopped there (more may be left for another commit)."""
    view = changes.view
    acceptable = acceptable_leaders(view)
    newly: set[int] = set(unfenced)

    def can_lead(broker_id: int) -> bool:
        return broker_id in newly or acceptable(broker_id)

    policy = UncleanPolicy(view, configs)
    canary = canary_brokers_of(view)
    for tp in _sorted(view.partitions_led_by(NO_LEADER)):
        partition = changes.get(tp)
        if partition is None or partition.has_leader():
            continue
        if newly and not newly.intersection(partition.replicas):
            continue
        if not any(can_lead(r) for r in partition.replicas):
            continue  # no replica may lead: nothing to elect (and nothing left for later)
        if limit is not None and len(changes.records) >= limit:
            return True
        changes.add(
            change_partition(
                tp,
                partition,
                acceptable=can_lead,
                election=policy.election(tp[0]),
                canary_brokers=canary,
            )
        )
    return False


def has_leaderless_replica(view: MetadataDelta, broker_id: int) -> bool:
    """Whether a leaderless partition has a replica on `broker_id` (it may lead it now)."""
    return any(
        broker_id in (view.partition(tp) or _EMPTY).replicas
        for tp in view.partitions_led_by(NO_LEADER)
    )


_EMPTY = PartitionRegistration(replicas=(), isr=(), leader=NO_LEADER)
