"""Property tests of canary isolation (KIP-1095) over random clusters and topics.

Brokers 0..3 are regular, 10..13 canary (a re-registration may move one to the other pod).
Topics come with random canary percentages, sizes and replication factors, placed or assigned
by hand; brokers fence, unfence, shut down, lose sessions, re-register and go; replicas go
offline; leaders are elected (preferred, unclean) and rebalanced; the ISR grows back by
AlterPartition. After every step:

* a canary partition is marked isolated exactly when every replica is on a registered canary
  broker (so an isolated one has every replica there), and a regular one never is;
* a canary partition's leader is a canary broker whenever a canary broker in its ISR can lead;
* when a topic is created, its canary partitions are isolated whenever enough unfenced canary
  brokers existed, and its other partitions stay off canary brokers while enough unfenced
  regular brokers existed;
* replaying the log from offset 0 rebuilds the image.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controlplane.controller.canary.rules import canary_brokers_of, isolated
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import DEFAULT_SESSION_TIMEOUT_MS, BrokerSession, ControllerEnv
from controlplane.controller.image import MetadataDelta, MetadataImage, replay_log
from controlplane.controller.records import NO_LEADER, Record, record_from_data
from tests.unit.rebalance_cover import assert_rebalance_candidates_cover

CLUSTER = "canary-properties"
REGULAR = (0, 1, 2, 3)
CANARY = (10, 11, 12, 13)
BROKER_IDS = st.sampled_from(REGULAR + CANARY)
PICK = st.integers(min_value=0, max_value=1000)


class CanaryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.records: list[tuple[int, Record]] = []
        self.sessions: dict[int, BrokerSession] = {}
        self.incarnations: dict[int, str] = {}
        self.now = 1_000_000
        self.serial = 0

    def run(self, api: str, payload: dict[str, Any]) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        env = ControllerEnv(now_ms=self.now, activated_ms=self.now, sessions=self.sessions)
        response = run_event(delta, api, payload, env)
        assert_rebalance_candidates_cover(delta)  # the changes over the image, not yet applied
        self.records.extend(delta.replayed)
        self.image.apply(delta)
        return response

    def active(self, broker_id: int) -> bool:
        broker = self.image.broker(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    def can_lead(self, broker_id: int, offline: tuple[int, ...]) -> bool:
        return self.active(broker_id) and broker_id not in offline

    # --- brokers -----------------------------------------------------------------------------
    @initialize(regular=st.integers(0, 4), canary=st.integers(0, 4), racks=st.booleans())
    def cluster_starts(self, regular: int, canary: int, racks: bool) -> None:
        for broker_id in (*REGULAR[:regular], *CANARY[:canary]):
            self.register(broker_id, False, False, racks)

    @rule(
        broker_id=BROKER_IDS, new_incarnation=st.booleans(), flip=st.booleans(), racks=st.booleans()
    )
    def register(self, broker_id: int, new_incarnation: bool, flip: bool, racks: bool) -> None:
        if new_incarnation or broker_id not in self.incarnations:
            self.incarnations[broker_id] = str(uuid.uuid4())
            self.sessions.pop(broker_id, None)  # the old process is gone
        canary = (broker_id in CANARY) != (flip and new_incarnation)
        response = self.run(
            "BrokerRegistration",
            {
                "broker_id": broker_id,
                "cluster_id": CLUSTER,
                "incarnation_id": self.incarnations[broker_id],
                "listeners": [],
                "rack": f"r{broker_id % 2}" if racks else None,
                "pod": "canary-broker" if canary else "broker",
                "log_dirs": [],
            },
        )
        assert response["error_code"] == 0, response
        self.heartbeat(broker_id, False, False)

    @rule(
        broker_id=BROKER_IDS,
        want_fence=st.sampled_from([False, False, True]),
        want_shut_down=st.sampled_from([False, False, False, True]),
    )
    def heartbeat(self, broker_id: int, want_fence: bool, want_shut_down: bool) -> None:
        registered = self.image.broker(broker_id)
        if registered is None:
            return
        self.sessions[broker_id] = BrokerSession(self.now, self.image.last_offset)
        self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": registered.epoch,
                "current_metadata_offset": self.image.last_offset,
                "want_fence": want_fence,
                "want_shut_down": want_shut_down,
            },
        )

    @rule(pick=PICK)
    def a_canary_leader_fails(self, pick: int) -> None:
        led = sorted(
            {p.leader for p in self.image.partitions.values() if p.is_canary} - {NO_LEADER}
        )
        if led:
            self.heartbeat(led[pick % len(led)], True, False)

    @rule(lapsing=BROKER_IDS)
    def a_session_lapses(self, lapsing: int) -> None:
        self.now += 2 * DEFAULT_SESSION_TIMEOUT_MS
        for broker_id, session in list(self.sessions.items()):
            if broker_id != lapsing:
                self.sessions[broker_id] = BrokerSession(self.now, session.metadata_offset)
        self.run("FenceStaleBrokers", {})

    @rule(broker_id=BROKER_IDS, rarely=st.integers(0, 3))
    def unregister(self, broker_id: int, rarely: int) -> None:
        if not rarely:
            self.run("UnregisterBroker", {"broker_id": broker_id})

    # --- topics ------------------------------------------------------------------------------
    @rule(
        partitions=st.integers(1, 9),
        rf=st.integers(1, 3),
        percent=st.sampled_from(["0", "12.5", "25", "50", "100"]),
        manual=st.none() | st.lists(BROKER_IDS, min_size=1, max_size=3, unique=True),
    )
    def create_topic(
        self, partitions: int, rf: int, percent: str, manual: list[int] | None
    ) -> None:
        self.serial += 1
        name = f"t{self.serial}"
        topic: dict[str, Any] = {
            "name": name,
            "configs": [{"name": "percent.canary.partition", "value": percent}],
        }
        if manual is None:
            topic.update(num_partitions=partitions, replication_factor=rf)
        else:
            rotated = [manual[i:] + manual[:i] for i in range(len(manual))]
            topic["assignments"] = [
                {"partition_index": i, "broker_ids": ids} for i, ids in enumerate(rotated)
            ]
        usable = [b for b in self.image.all_brokers() if self.active(b.broker_id)]
        canary_ready = sum(1 for b in usable if b.pod == "canary-broker") >= rf
        regular_ready = sum(1 for b in usable if b.pod == "broker") >= rf
        canary_brokers = canary_brokers_of(self.image)
        (answer,) = self.run("CreateTopics", {"topics": [topic]})["topics"]
        if answer["error_code"] != 0:
            return
        topic_id = self.image.topic_ids[name]
        made = [self.image.partitions[(topic_id, i)] for i in range(answer["num_partitions"])]
        if any(p.is_canary for p in made):
            assert answer["canary_isolated"] == all(p.canary_isolated for p in made if p.is_canary)
        if manual is not None:
            return
        for p in made:
            if p.is_canary and canary_ready:
                assert p.canary_isolated, (p, canary_ready)
            if not p.is_canary and regular_ready:
                assert not set(p.replicas) & canary_brokers, (p, regular_ready)

    @rule(pick=PICK, extra=st.integers(1, 8))
    def create_partitions(self, pick: int, extra: int) -> None:
        names = sorted(self.image.topic_ids)
        if not names:
            return
        name = names[pick % len(names)]
        count = self.image.topics[self.image.topic_ids[name]].partition_count + extra
        self.run("CreatePartitions", {"topics": [{"name": name, "count": count}]})

    # --- replicas and leaders ----------------------------------------------------------------
    @rule(pick=PICK)
    def the_isr_grows_back(self, pick: int) -> None:
        """A leader takes an active replica outside the ISR back in (AlterPartition)."""
        candidates = sorted(
            tp
            for tp, p in self.image.partitions.items()
            if p.leader != NO_LEADER and any(r not in p.isr and self.active(r) for r in p.replicas)
        )
        if not candidates:
            return
        tp = candidates[pick % len(candidates)]
        p = self.image.partitions[tp]
        joining = next(r for r in p.replicas if r not in p.isr and self.active(r))
        leader = self.image.broker(p.leader)
        assert leader is not None
        self.run(
            "AlterPartition",
            {
                "broker_id": p.leader,
                "broker_epoch": leader.epoch,
                "topics": [
                    {
                        "topic_name": self.image.topics[tp[0]].name,
                        "partitions": [
                            {
                                "partition_index": tp[1],
                                "leader_epoch": p.leader_epoch,
                                "partition_epoch": p.partition_epoch,
                                "new_isr": [*p.isr, joining],
                            }
                        ],
                    }
                ],
            },
        )

    @rule(broker_id=BROKER_IDS, pick=PICK)
    def replicas_go_offline(self, broker_id: int, pick: int) -> None:
        broker = self.image.broker(broker_id)
        names = sorted(self.image.topic_ids)
        if broker is None or not names:
            return
        name = names[pick % len(names)]
        count = self.image.topics[self.image.topic_ids[name]].partition_count
        self.run(
            "AlterReplicaState",
            {
                "broker_id": broker_id,
                "broker_epoch": broker.epoch,
                "new_state": 1,
                "reason": "test",
                "topics": [{"name": name, "partitions": list(range(count))}],
            },
        )

    @rule(election=st.sampled_from(["PREFERRED", "UNCLEAN"]))
    def elect_leaders(self, election: str) -> None:
        self.run("ElectLeaders", {"election_type": election, "topic_partitions": None})

    @rule()
    def rebalance(self) -> None:
        self.run("RebalanceLeaders", {})

    # --- invariants --------------------------------------------------------------------------
    @invariant()
    def the_rebalance_candidates_cover_every_partition_off_its_preferred_leader(self) -> None:
        assert_rebalance_candidates_cover(MetadataDelta(self.image))

    @invariant()
    def isolation_is_every_replica_on_a_canary_broker(self) -> None:
        canary = canary_brokers_of(self.image)
        for tp, p in self.image.partitions.items():
            assert p.canary_isolated == (p.is_canary and isolated(p.replicas, canary)), (tp, p)
            if p.canary_isolated:
                assert all(r in canary for r in p.replicas)

    @invariant()
    def canary_partitions_are_led_by_canary_brokers_where_the_isr_allows(self) -> None:
        canary = canary_brokers_of(self.image)
        for tp, p in self.image.partitions.items():
            if not p.is_canary or p.leader == NO_LEADER:
                continue
            if any(r in canary and self.can_lead(r, p.offline_replicas) for r in p.isr):
                assert p.leader in canary, (tp, p, sorted(canary))

    @invariant()
    def replaying_the_log_rebuilds_the_image(self) -> None:
        records = [record_from_data(r.TYPE, json.loads(r.to_json())) for _, r in self.records]
        assert replay_log(CLUSTER, records).as_comparable() == self.image.as_comparable()


CanaryMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestCanaryProperties = CanaryMachine.TestCase
