"""Property tests of the health index and the timeline: any sequence of broker, topic, partition,
config and log dir events (the replication machine's, plus min.insync.replicas changes on topics
and the cluster default, and heartbeats reporting offline log dirs).

After every step: the index advanced delta by delta equals one counted afresh from the image, and
both equal a naive count straight from the partitions (the definitions of
docs/architecture/health-timeline.md, written out again); every commit's timeline tells each of its
partition changes once, with the leader and ISR the partition had before it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.health import INDEX_NAME, HealthIndex
from controlplane.controller.image import MetadataDelta, PartitionRegistration
from controlplane.controller.records import NO_LEADER, PartitionChangeRecord
from controlplane.controller.timeline import Kind, TimelineEntry, WriteSummary, describe_commit
from tests.unit.test_replication_properties import BROKER_IDS, PICK, ReplicationMachine

STATIC = {"min.insync.replicas": "1"}
DIRS = ["11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"]


def naive_counts(machine: HealthMachine) -> dict[str, int]:
    image = machine.image
    counts = dict.fromkeys(
        (
            "partitions",
            "under_replicated_partitions",
            "under_min_isr_partitions",
            "at_min_isr_partitions",
            "leaderless_partitions",
            "preferred_replica_imbalance",
            "offline_replicas",
            "canary_partitions_not_isolated",
        ),
        0,
    )
    cluster_min = image.configs.get(("BROKER", ""), {}).get("min.insync.replicas", "1")
    live = {b.broker_id for b in image.all_brokers() if not b.fenced}
    for (topic_id, _), p in image.partitions.items():
        name = image.topics[topic_id].name
        min_isr = int(
            image.configs.get(("TOPIC", name), {}).get("min.insync.replicas", cluster_min)
        )
        counts["partitions"] += 1
        counts["under_replicated_partitions"] += len(p.isr) < len(p.replicas)
        counts["under_min_isr_partitions"] += len(p.isr) < min_isr
        counts["at_min_isr_partitions"] += len(p.isr) == min_isr
        counts["leaderless_partitions"] += p.leader == NO_LEADER
        counts["preferred_replica_imbalance"] += p.leader != p.replicas[0]
        # Offline: marked by AlterReplicaState, or on a fenced (or gone) broker, as Kafka's
        # MetadataResponse counts them.
        counts["offline_replicas"] += len(
            set(p.offline_replicas) | {r for r in p.replicas if r not in live}
        )
        counts["canary_partitions_not_isolated"] += p.is_canary and not p.canary_isolated
    return counts


def naive_offline_log_dirs(machine: HealthMachine) -> int:
    """The dirs the brokers' latest heartbeats name (AlterReplicaState names replicas)."""
    return sum(len(set(broker.offline_log_dirs)) for broker in machine.image.all_brokers())


class HealthMachine(ReplicationMachine):
    def __init__(self) -> None:
        super().__init__()
        self.health = HealthIndex.build(self.image, STATIC)
        self.image.derived[INDEX_NAME] = self.health
        self.entries: list[TimelineEntry] = []
        self.last_commit: tuple[list[Any], list[TimelineEntry], dict[Any, PartitionRegistration]]
        self.last_commit = ([], [], {})

    def run(self, api: str, payload: dict[str, Any]) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        env = ControllerEnv(
            now_ms=self.now, activated_ms=self.now, sessions=self.sessions, static_configs=STATIC
        )
        response = run_event(delta, api, payload, env)
        # As the projections do, before the commit: the health changes, the timeline entries.
        self.health.changes(delta)
        writes = [WriteSummary(api, delta.base.last_offset + 1, delta.last_offset)]
        entries = describe_commit(self.image, delta.replayed, writes if delta.replayed else [])
        # What the projection does: the replay's own before/after of each change, not merged
        # again; the entries must be the very same.
        kept = delta.topics_delta.transitions
        assert describe_commit(self.image, delta.replayed, writes, kept) == entries
        self.last_commit = (list(delta.replayed), entries, dict(self.image.partitions))
        self.entries.extend(entries)
        self.records.extend(delta.replayed)
        self.image.apply(delta)
        return response

    def took_over(self) -> None:
        # The standby counts its health afresh from its image, as a controller taking over does.
        self.health = HealthIndex.build(self.image, STATIC)
        self.image.derived[INDEX_NAME] = self.health

    # --- what the replication machine does not do ------------------------------------------
    @rule(pick=PICK, value=st.integers(1, 4), cluster=st.booleans(), delete=st.booleans())
    def min_isr_changes(self, pick: int, value: int, cluster: bool, delete: bool) -> None:
        name = "" if cluster else self.pick_topic(pick)
        if name is None:
            return
        operation = "DELETE" if delete else "SET"
        resource_type = "BROKER" if cluster else "TOPIC"
        config = {"name": "min.insync.replicas", "config_operation": operation, "value": str(value)}
        response = self.run(
            "IncrementalAlterConfigs",
            {
                "resources": [
                    {"resource_type": resource_type, "resource_name": name, "configs": [config]}
                ]
            },
        )
        assert response["responses"][0]["error_code"] == 0, response

    @rule(broker_id=BROKER_IDS, which=st.sampled_from([(), (0,), (1,), (0, 1)]))
    def log_dirs_reported(self, broker_id: int, which: tuple[int, ...]) -> None:
        broker = self.image.broker(broker_id)
        if broker is None:
            return
        dirs = [DIRS[i] for i in which]
        response = self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": broker.epoch,
                "current_metadata_offset": self.image.last_offset,
                "offline_log_dirs": list(reversed(dirs)),
            },
        )
        assert response["error_code"] == 0, response
        after = self.image.broker(broker_id)
        assert after is not None and after.offline_log_dirs == tuple(sorted(dirs))

    # --- invariants ----------------------------------------------------------------------------
    @invariant()
    def the_advanced_index_is_the_counted_one(self) -> None:
        fresh = HealthIndex.build(self.image, STATIC)
        assert self.health.topics == fresh.topics
        assert self.health.brokers == fresh.brokers
        assert self.health.totals == fresh.totals

    @invariant()
    def the_counts_are_kafkas(self) -> None:
        totals = self.health.totals.as_dict()
        assert {k: totals[k] for k in naive_counts(self)} == naive_counts(self)
        assert totals["offline_log_dirs"] == naive_offline_log_dirs(self)
        leaders = {b: len(tps) for b, tps in self.image.leader_index.items() if b != NO_LEADER}
        assert {
            b: load.leaders for b, load in self.health.brokers.items() if load.leaders
        } == leaders

    @invariant()
    def the_timeline_tells_every_partition_change_with_the_state_before(self) -> None:
        records, entries, before = self.last_commit
        changes = [r for _, r in records if isinstance(r, PartitionChangeRecord)]
        moves = [m for e in entries for m in e.moves]
        assert len(moves) == len(changes)
        seen: dict[Any, PartitionRegistration] = dict(before)
        for record, move in zip(changes, moves, strict=True):
            tp = (record.topic_id, record.partition_id)
            previous = seen[tp]
            assert (move.previous_leader, move.previous_isr) == (previous.leader, previous.isr)
            seen[tp] = previous.merge(record)
            assert (move.leader, move.isr) == (seen[tp].leader, seen[tp].isr)
            if move.unclean:
                assert any(e.kind is Kind.UNCLEAN_ELECTION or e.unclean for e in entries)
        for entry in entries:
            assert entry.title
            if entry.unclean:
                assert entry.title.startswith("UNCLEAN leader election")


HealthMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
TestHealthProperties = HealthMachine.TestCase
