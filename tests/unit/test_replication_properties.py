"""Property tests of replication: any sequence of broker, topic and partition events keeps the
partition invariants.

After every step: each partition has exactly one leader entry (the leader index agrees with the
partitions); the leader is -1 or an ISR member; the ISR is a non-empty subset of the replicas,
without duplicates; the leader is neither an offline replica nor a fenced (or shutting-down or
unregistered) broker; leader and partition epochs never decrease, the partition epoch grows with
every change and the leader epoch with every leader change; the broker indexes agree with the
partitions; every assigned replica directory list is as long as the replicas; a move's adding
and removing replicas are among its replicas and leave it a target (KIP-455);
replaying the whole log from offset 0 rebuilds the image exactly (what `verify_metadata` checks
against the state tables); and a stock broker loading the log in Kafka's own format (replayed by
Kafka's rules, devtools.kafka_view) sees the same brokers (epochs, fencing, controlled shutdown)
and partitions, their moves included, as the controller's image.

Moves (KIP-455) start, replace one another, complete when the leader takes the new replicas
into the ISR, are cancelled, and survive a controller failover (the standby's image is the log
replayed) in the middle.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import DEFAULT_SESSION_TIMEOUT_MS, BrokerSession, ControllerEnv
from controlplane.controller.errors import Errors
from controlplane.controller.image import (
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicPartition,
    replay_log,
)
from controlplane.controller.kraft import KafkaLogEncoder, LogEntry, decode_records
from controlplane.controller.records import NO_LEADER, Record, record_from_data
from devtools.kafka_view import KafkaView, view_of_image
from tests.unit.rebalance_cover import assert_rebalance_candidates_cover

CLUSTER = "replication-properties"
BROKER_IDS = st.integers(min_value=0, max_value=4)
PICK = st.integers(min_value=0, max_value=1000)


def log_dirs_of(broker_id: int) -> list[str]:
    """Each broker's two log dirs (KIP-858: it places its replicas in them)."""
    return [str(uuid.uuid5(uuid.NAMESPACE_OID, f"{broker_id}/{i}")) for i in range(2)]


class ReplicationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.records: list[tuple[int, Record]] = []
        self.sessions: dict[int, BrokerSession] = {}
        self.incarnations: dict[int, str] = {}
        self.now = 1_000_000
        self.topic_serial = 0
        self.seen: dict[TopicPartition, PartitionRegistration] = {}
        # A stock broker following the log in Kafka's format, one step behind at most.
        self.kafka_encoder = KafkaLogEncoder()
        self.broker_view = KafkaView()
        self.broker_loaded = 0

    # --- plumbing ----------------------------------------------------------------------------
    def run(self, api: str, payload: dict[str, Any]) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        env = ControllerEnv(now_ms=self.now, activated_ms=self.now, sessions=self.sessions)
        response = run_event(delta, api, payload, env)
        assert_rebalance_candidates_cover(delta)  # the changes over the image, not yet applied
        self.records.extend(delta.replayed)
        self.image.apply(delta)
        return response

    def pick_topic(self, pick: int) -> str | None:
        names = sorted(self.image.topic_ids)
        return names[pick % len(names)] if names else None

    def pick_partition(self, pick: int) -> tuple[str, int, PartitionRegistration] | None:
        tps = sorted(self.image.partitions)
        if not tps:
            return None
        tp = tps[pick % len(tps)]
        return self.image.topics[tp[0]].name, tp[1], self.image.partitions[tp]

    def active(self, broker_id: int) -> bool:
        broker = self.image.broker(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    # --- brokers -----------------------------------------------------------------------------
    @initialize(count=st.integers(1, 5), racks=st.booleans(), unclean=st.booleans())
    def cluster_starts(self, count: int, racks: bool, unclean: bool) -> None:
        for broker_id in range(count):
            self.register(broker_id, False, f"r{broker_id % 2}" if racks else None, True)
        self.create_topic(3, min(count, 3), unclean, None)

    @rule(
        broker_id=BROKER_IDS,
        new_incarnation=st.booleans(),
        rack=st.sampled_from([None, "a", "b"]),
        unfence=st.booleans(),
    )
    def register(
        self, broker_id: int, new_incarnation: bool, rack: str | None, unfence: bool
    ) -> None:
        if new_incarnation or broker_id not in self.incarnations:
            self.incarnations[broker_id] = str(uuid.uuid4())
            self.sessions.pop(broker_id, None)  # the old process is gone
        response = self.run(
            "BrokerRegistration",
            {
                "broker_id": broker_id,
                "cluster_id": CLUSTER,
                "incarnation_id": self.incarnations[broker_id],
                "listeners": [],
                "rack": rack,
                "pod": "broker",
                "log_dirs": log_dirs_of(broker_id),
            },
        )
        assert response["error_code"] == 0, response
        if unfence:
            self.heartbeat(broker_id, 0, False, False)

    @rule(
        broker_id=BROKER_IDS,
        lag=st.integers(0, 2),
        want_fence=st.sampled_from([False, False, False, True]),
        want_shut_down=st.sampled_from([False, False, False, True]),
    )
    def heartbeat(self, broker_id: int, lag: int, want_fence: bool, want_shut_down: bool) -> None:
        registered = self.image.broker(broker_id)
        if registered is None:
            return
        offset = max(-1, self.image.last_offset - lag)
        self.sessions[broker_id] = BrokerSession(self.now, offset)
        response = self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": registered.epoch,
                "current_metadata_offset": offset,
                "want_fence": want_fence,
                "want_shut_down": want_shut_down,
            },
        )
        assert response["error_code"] == 0, response
        after = self.image.broker(broker_id)
        assert after is not None
        if after.fenced or after.in_controlled_shutdown:
            # A broker that may not lead (fenced, shutting down) leads nothing.
            for tp in self.image.leader_index.get(broker_id, ()):
                raise AssertionError(f"{broker_id} still leads {tp}")

    @rule(pick=PICK)
    def a_leader_fails(self, pick: int) -> None:
        """The leader of some partition asks to be fenced (a failure, aimed where it hurts)."""
        led = sorted({p.leader for p in self.image.partitions.values()} - {NO_LEADER})
        if led:
            self.heartbeat(led[pick % len(led)], 0, True, False)

    @rule(ms=st.integers(0, 2 * DEFAULT_SESSION_TIMEOUT_MS), lapsing=BROKER_IDS)
    def time_passes(self, ms: int, lapsing: int) -> None:
        """Time passes; every broker but one keeps heartbeating (its session may lapse)."""
        self.now += ms
        for broker_id, session in list(self.sessions.items()):
            if broker_id != lapsing:
                self.sessions[broker_id] = BrokerSession(self.now, session.metadata_offset)
        self.run("FenceStaleBrokers", {})

    @rule(broker_id=BROKER_IDS, rarely=st.integers(0, 3))
    def unregister(self, broker_id: int, rarely: int) -> None:
        if rarely:
            return
        self.run("UnregisterBroker", {"broker_id": broker_id})
        assert self.image.broker(broker_id) is None
        assert broker_id not in self.image.leader_index

    # --- topics ------------------------------------------------------------------------------
    @rule(
        partitions=st.integers(1, 4),
        rf=st.integers(1, 3),
        unclean=st.booleans(),
        manual=st.none() | st.lists(BROKER_IDS, min_size=1, max_size=3, unique=True),
    )
    def create_topic(
        self, partitions: int, rf: int, unclean: bool, manual: list[int] | None
    ) -> None:
        self.topic_serial += 1
        name = f"t{self.topic_serial}"
        topic: dict[str, Any] = {
            "name": name,
            "configs": [{"name": "unclean.leader.election.enable", "value": str(unclean).lower()}],
        }
        if manual is None:
            topic.update(num_partitions=partitions, replication_factor=rf)
        else:
            rotated = [manual[i:] + manual[:i] for i in range(len(manual))]
            topic["assignments"] = [
                {"partition_index": i, "broker_ids": ids} for i, ids in enumerate(rotated)
            ]
        (answer,) = self.run("CreateTopics", {"topics": [topic]})["topics"]
        if answer["error_code"] != 0:
            assert name not in self.image.topic_ids
            assert answer["error_code"] in (
                Errors.INVALID_REPLICATION_FACTOR,
                Errors.INVALID_REPLICA_ASSIGNMENT,
            ), answer
            return
        topic_id = self.image.topic_ids[name]
        assert answer["topic_id"] == topic_id
        for index in range(answer["num_partitions"]):
            p = self.image.partitions[(topic_id, index)]
            assert p.leader == p.isr[0] and self.active(p.leader)
            assert (p.leader_epoch, p.partition_epoch) == (0, 0)

    @rule(pick=PICK, extra=st.integers(1, 3))
    def create_partitions(self, pick: int, extra: int) -> None:
        name = self.pick_topic(pick)
        if name is None:
            return
        topic = self.image.topics[self.image.topic_ids[name]]
        count = topic.partition_count + extra
        (result,) = self.run("CreatePartitions", {"topics": [{"name": name, "count": count}]})[
            "results"
        ]
        after = self.image.topics[topic.topic_id].partition_count
        assert after == (count if result["error_code"] == 0 else topic.partition_count)

    @rule(pick=PICK)
    def delete_topic(self, pick: int) -> None:
        name = self.pick_topic(pick)
        if name is None:
            return
        response = self.run("DeleteTopics", {"topic_names": [name]})
        assert response["responses"][0]["error_code"] == 0
        assert name not in self.image.topic_ids

    # --- replicas and leaders ----------------------------------------------------------------
    @rule(pick=PICK, member=PICK, expand=st.booleans())
    def alter_partition_by_the_leader(self, pick: int, member: int, expand: bool) -> None:
        # Among the partitions with a leader where such a change is possible.
        def possible(p: PartitionRegistration) -> bool:
            if p.leader == NO_LEADER:
                return False
            return len(p.isr) < len(p.replicas) if expand else len(p.isr) > 1

        partitions = self.image.partitions
        candidates = sorted(tp for tp, p in partitions.items() if possible(p))
        if not candidates:
            return
        topic_id, index = candidates[pick % len(candidates)]
        p = partitions[(topic_id, index)]
        name = self.image.topics[topic_id].name
        if expand:
            outside = [r for r in p.replicas if r not in p.isr]
            joining = outside[member % len(outside)]
            new_isr = [*p.isr, joining]
            expected = Errors.NONE if self.active(joining) else Errors.INELIGIBLE_REPLICA
        else:
            followers = [r for r in p.isr if r != p.leader]
            leaving = followers[member % len(followers)]
            new_isr = [r for r in p.isr if r != leaving]
            expected = Errors.NONE
        leader = self.image.broker(p.leader)
        assert leader is not None
        response = self.run(
            "AlterPartition",
            {
                "broker_id": p.leader,
                "broker_epoch": leader.epoch,
                "topics": [
                    {
                        "topic_name": name,
                        "partitions": [
                            {
                                "partition_index": index,
                                "leader_epoch": p.leader_epoch,
                                "partition_epoch": p.partition_epoch,
                                "new_isr": new_isr,
                            }
                        ],
                    }
                ],
            },
        )
        answer = response["topics"][0]["partitions"][0]
        after = self.image.partitions.get((self.image.topic_ids[name], index))
        if (
            expected is Errors.NONE
            and p.reassigning
            and after is not None
            and not after.reassigning
        ):
            # The ISR change completed the move: what left is gone, a leaving leader handed
            # over (NEW_LEADER_ELECTED), as Kafka's controller answers.
            assert set(after.replicas) == set(p.target_replicas), (p, after)
            assert answer["error_code"] in (Errors.NONE, Errors.NEW_LEADER_ELECTED)
            return
        assert answer["error_code"] == expected, (answer, p, new_isr)
        if expected is Errors.NONE:
            assert after is not None
            assert list(after.isr) == new_isr and after.leader == p.leader
            assert answer["isr"] == new_isr
            assert answer["partition_epoch"] == after.partition_epoch

    @rule(pick=PICK, sender=BROKER_IDS, leader_delta=st.integers(-1, 1), isr_pick=PICK)
    def alter_partition_anyhow(
        self, pick: int, sender: int, leader_delta: int, isr_pick: int
    ) -> None:
        """Requests that may well be invalid: they are refused or valid, never break anything."""
        chosen = self.pick_partition(pick)
        broker = self.image.broker(sender)
        if chosen is None or broker is None:
            return
        name, index, p = chosen
        replicas = list(p.replicas)
        new_isr = [r for i, r in enumerate(replicas) if (isr_pick >> i) & 1]
        self.run(
            "AlterPartition",
            {
                "broker_id": sender,
                "broker_epoch": broker.epoch,
                "topics": [
                    {
                        "topic_name": name,
                        "partitions": [
                            {
                                "partition_index": index,
                                "leader_epoch": p.leader_epoch + leader_delta,
                                "partition_epoch": p.partition_epoch,
                                "new_isr": new_isr,
                            }
                        ],
                    }
                ],
            },
        )

    @rule(broker_id=BROKER_IDS, pick=PICK, right_epoch=st.booleans())
    def replicas_go_offline(self, broker_id: int, pick: int, right_epoch: bool) -> None:
        broker = self.image.broker(broker_id)
        name = self.pick_topic(pick)
        if broker is None or name is None:
            return
        topic = self.image.topics[self.image.topic_ids[name]]
        named = [i for i in range(topic.partition_count) if (pick >> i) & 1] or [0]
        response = self.run(
            "AlterReplicaState",
            {
                "broker_id": broker_id,
                "broker_epoch": broker.epoch if right_epoch else broker.epoch + 1000,
                "new_state": 1,
                "reason": "test",
                "topics": [{"name": name, "partitions": named}],
            },
        )
        if not right_epoch:
            assert response["error_code"] == Errors.STALE_BROKER_EPOCH
            return
        for index in named:
            p = self.image.partitions[(topic.topic_id, index)]
            if broker_id in p.replicas:
                assert broker_id in p.offline_replicas and p.leader != broker_id

    @rule(broker_id=BROKER_IDS, which=st.sampled_from([None, 0, 1]))
    def a_log_dir_goes_offline_or_comes_back(self, broker_id: int, which: int | None) -> None:
        broker = self.image.broker(broker_id)
        if broker is None:
            return
        offline = [] if which is None else [log_dirs_of(broker_id)[which]]
        response = self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": broker.epoch,
                "current_metadata_offset": self.image.last_offset,
                "offline_log_dirs": offline,
            },
        )
        assert response["error_code"] == 0, response
        after = self.image.broker(broker_id)
        assert after is not None and list(after.offline_log_dirs) == offline
        # KIP-858: every replica the broker placed in a dir that just went offline is offline.
        newly = set(offline) - set(broker.offline_log_dirs)
        for tp, p in self.image.partitions.items():
            holds = broker_id in p.replicas and p.directories
            if holds and p.directories[p.replicas.index(broker_id)] in newly:
                assert broker_id in p.offline_replicas and p.leader != broker_id, (tp, p)

    @rule(
        pick=PICK,
        which=st.sampled_from([0, 1, "offline", "offline"]),
        right_epoch=st.sampled_from([True, True, True, False]),
    )
    def replicas_assigned_to_dirs(self, pick: int, which: int | str, right_epoch: bool) -> None:
        """KIP-858: a broker places its replicas (mostly its own, sometimes another's); one
        placed on a dir it reports offline goes offline."""
        found = self.pick_partition(pick)
        if found is None:
            return
        _, index, partition = found
        broker_id = partition.replicas[pick % len(partition.replicas)] if pick % 5 else pick % 5
        broker = self.image.broker(broker_id)
        if broker is None:
            return
        topic_id = self.image.topic_ids[found[0]]
        if which == "offline":
            dir_id = (broker.offline_log_dirs or log_dirs_of(broker_id))[0]
        else:
            dir_id = log_dirs_of(broker_id)[int(which)]
        before = self.image.partitions[(topic_id, index)]
        response = self.run(
            "AssignReplicasToDirs",
            {
                "broker_id": broker_id,
                "broker_epoch": broker.epoch if right_epoch else broker.epoch + 1000,
                "directories": [
                    {
                        "id": dir_id,
                        "topics": [
                            {"topic_id": topic_id, "partitions": [{"partition_index": index}]},
                            {"topic_id": str(uuid.uuid4()), "partitions": [{"partition_index": 0}]},
                        ],
                    }
                ],
            },
        )
        if not right_epoch:
            assert response["error_code"] == Errors.STALE_BROKER_EPOCH
            return
        known, unknown = response["directories"][0]["topics"]
        assert unknown["partitions"][0]["error_code"] == Errors.UNKNOWN_TOPIC_ID
        (answer,) = known["partitions"]
        after = self.image.partitions[(topic_id, index)]
        if broker_id not in before.replicas:
            assert answer["error_code"] == Errors.NOT_LEADER_OR_FOLLOWER and after == before
            return
        assert answer["error_code"] == 0
        assert after.directories[after.replicas.index(broker_id)] == dir_id
        if dir_id in broker.offline_log_dirs:
            assert broker_id in after.offline_replicas and after.leader != broker_id
            assert broker_id not in after.isr or after.isr == (broker_id,)

    # --- moving replicas (KIP-455) -------------------------------------------------------------
    def reassign(self, moves: list[tuple[str, int, list[int] | None]]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for name, index, replicas in moves:
            topics.setdefault(name, []).append({"partition_index": index, "replicas": replicas})
        return self.run(
            "AlterPartitionReassignments",
            {"topics": [{"name": t, "partitions": p} for t, p in topics.items()]},
        )

    @rule(
        pick=PICK,
        brokers=st.lists(BROKER_IDS, min_size=1, max_size=3, unique=True),
        then_catch_up=st.booleans(),
    )
    def a_move_starts(self, pick: int, brokers: list[int], then_catch_up: bool) -> None:
        """A target replica set for a partition: started (the replicas are the target then
        what leaves), replacing a move in progress, completed at once when the ISR already
        holds the target, or refused with Kafka's error and nothing changed."""
        chosen = self.pick_partition(pick)
        if chosen is None:
            return
        name, index, before = chosen
        response = self.reassign([(name, index, brokers)])
        code = response["responses"][0]["partitions"][0]["error_code"]
        after = self.image.partitions[(self.image.topic_ids[name], index)]
        usable = all(
            self.image.broker(b) is not None
            and (not self.image.broker(b).fenced or b in before.replicas)  # type: ignore[union-attr]
            for b in brokers
        )
        if not usable:
            assert code == Errors.INVALID_REPLICA_ASSIGNMENT and after == before
            return
        assert code == Errors.NONE, response
        event("a move started" if after.reassigning else "a move completed at once")
        if after.reassigning:
            # The target, then what leaves (a target that removes nothing keeps what the move
            # in progress removes, as Kafka's controller does).
            assert set(after.target_replicas) <= set(brokers), (before, after)
            assert set(after.replicas) == set(brokers) | set(before.replicas)
            if then_catch_up:
                self.catch_up((self.image.topic_ids[name], index))
        else:
            assert after.replicas == tuple(brokers) or set(after.replicas) == set(brokers)

    @rule(pick=PICK)
    def new_replicas_catch_up(self, pick: int) -> None:
        """The leader of a moving partition takes its caught-up new replicas into the ISR."""
        moving = sorted(tp for tp, p in self.image.partitions.items() if p.reassigning)
        if not moving:
            return
        self.catch_up(moving[pick % len(moving)])

    def catch_up(self, tp: TopicPartition) -> None:
        p = self.image.partitions[tp]
        joining = [r for r in p.adding_replicas if r not in p.isr and self.active(r)]
        if p.leader == NO_LEADER or not joining:
            return
        self.alter_partition_to(tp, p, [*p.isr, *joining])

    def alter_partition_to(
        self, tp: TopicPartition, p: PartitionRegistration, new_isr: list[int]
    ) -> dict[str, Any]:
        leader = self.image.broker(p.leader)
        assert leader is not None
        response = self.run(
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
                                "new_isr": new_isr,
                            }
                        ],
                    }
                ],
            },
        )
        answer = response["topics"][0]["partitions"][0]
        assert answer["error_code"] in (Errors.NONE, Errors.NEW_LEADER_ELECTED), answer
        after = self.image.partitions[tp]
        if set(p.target_replicas) <= set(new_isr) - set(p.removing_replicas):
            # Every target replica in sync: complete, only the target left.
            event("a move completed by the leader's AlterPartition")
            assert not after.reassigning and set(after.replicas) == set(p.target_replicas)
            assert after.leader in p.target_replicas or after.leader == NO_LEADER
        return dict(answer)

    @rule(pick=PICK)
    def a_move_is_cancelled(self, pick: int) -> None:
        chosen = self.pick_partition(pick)
        if chosen is None:
            return
        name, index, before = chosen
        response = self.reassign([(name, index, None)])
        code = response["responses"][0]["partitions"][0]["error_code"]
        after = self.image.partitions[(self.image.topic_ids[name], index)]
        if not before.reassigning:
            assert code == Errors.NO_REASSIGNMENT_IN_PROGRESS and after == before
        elif code == Errors.NONE:
            event("a move cancelled")
            assert not after.reassigning and set(after.replicas) == set(before.original_replicas)
            assert not set(after.isr) & set(before.adding_replicas) or after.isr == (
                before.original_replicas[0],
            )
        else:  # only the new replicas in sync, and the topic does not allow unclean elections
            assert code == Errors.INVALID_REPLICA_ASSIGNMENT and after == before

    @rule(rarely=st.integers(0, 2))
    def the_controller_fails_over_mid_move(self, rarely: int) -> None:
        """A standby takes over: its image is the log replayed (moves in progress included);
        the moves go on from it."""
        if rarely:
            return
        records = [record_from_data(r.TYPE, json.loads(r.to_json())) for _, r in self.records]
        standby = replay_log(CLUSTER, records)
        assert standby.as_comparable() == self.image.as_comparable()
        if any(p.reassigning for p in standby.partitions.values()):
            event("a failover mid-move")
        self.image = standby
        self.took_over()

    def took_over(self) -> None:
        """What else a standby builds from its image when it takes over (subclasses' indexes)."""

    @rule(election=st.sampled_from(["PREFERRED", "UNCLEAN"]), pick=st.none() | PICK)
    def elect_leaders(self, election: str, pick: int | None) -> None:
        topics = None
        if pick is not None:
            # Rather a topic where an election can do something, when there is one.
            wanting = sorted(
                self.image.topics[tp[0]].name
                for tp, p in self.image.partitions.items()
                if p.leader != p.preferred_leader
            )
            name = wanting[pick % len(wanting)] if wanting and pick % 4 else self.pick_topic(pick)
            if name is None:
                return
            count = self.image.topics[self.image.topic_ids[name]].partition_count
            topics = [{"topic": name, "partitions": list(range(count + 1))}]
        response = self.run("ElectLeaders", {"election_type": election, "topic_partitions": topics})
        for topic in response["replica_election_results"]:
            for result in topic["partition_result"]:
                if result["error_code"] == 0:
                    topic_id = self.image.topic_ids[topic["topic"]]
                    p = self.image.partitions[(topic_id, result["partition_id"])]
                    assert p.leader != NO_LEADER
                    if election == "PREFERRED":
                        assert p.leader == p.replicas[0] or p.leader in p.isr

    @rule(rarely=st.integers(0, 3))
    def rebalance(self, rarely: int) -> None:
        if not rarely:
            self.run("RebalanceLeaders", {})

    # --- invariants --------------------------------------------------------------------------
    @invariant()
    def the_rebalance_candidates_cover_every_partition_off_its_preferred_leader(self) -> None:
        assert_rebalance_candidates_cover(MetadataDelta(self.image))

    @invariant()
    def partitions_are_well_formed(self) -> None:
        for tp, p in self.image.partitions.items():
            assert p.isr, (tp, p)
            assert len(set(p.isr)) == len(p.isr)
            assert set(p.isr) <= set(p.replicas), (tp, p)
            assert set(p.offline_replicas) <= set(p.replicas)
            if p.leader != NO_LEADER:
                assert p.leader in p.isr, (tp, p)
                assert p.leader not in p.offline_replicas, (tp, p)
                assert self.active(p.leader), (tp, p, self.image.broker(p.leader))

    @invariant()
    def moves_are_well_formed(self) -> None:
        """KIP-455: the replicas a move adds and removes are among its replicas; its target keeps
        at least one replica; none at all when no move runs. A replica may be both adding and
        removing: a new target that adds nothing keeps the adding replicas of the move it
        replaces, as Kafka's controller does (so a cancel still drops them), while removing
        those the new target leaves out."""
        for tp, p in self.image.partitions.items():
            assert set(p.adding_replicas) <= set(p.replicas), (tp, p)
            assert set(p.removing_replicas) <= set(p.replicas), (tp, p)
            assert p.target_replicas, (tp, p)
            assert len(set(p.replicas)) == len(p.replicas), (tp, p)

    @invariant()
    def directories_follow_the_replicas(self) -> None:
        for tp, p in self.image.partitions.items():
            assert not p.directories or len(p.directories) == len(p.replicas), (tp, p)

    @invariant()
    def epochs_never_go_back(self) -> None:
        for tp, p in self.image.partitions.items():
            before = self.seen.get(tp)
            if before is None:
                continue
            assert p.leader_epoch >= before.leader_epoch
            assert p.partition_epoch >= before.partition_epoch
            if p != before:
                assert p.partition_epoch > before.partition_epoch, (before, p)
            if p.leader != before.leader:
                assert p.leader_epoch > before.leader_epoch, (before, p)
        self.seen = dict(self.image.partitions)

    @invariant()
    def indexes_agree_with_the_partitions(self) -> None:
        leaders: dict[int, set[TopicPartition]] = {}
        isrs: dict[int, set[TopicPartition]] = {}
        replicas: dict[int, set[TopicPartition]] = {}
        for tp, p in self.image.partitions.items():
            leaders.setdefault(p.leader, set()).add(tp)
            for r in p.isr:
                isrs.setdefault(r, set()).add(tp)
            for r in p.replicas:
                replicas.setdefault(r, set()).add(tp)
        # One leader entry per partition: the leader index is the partitions' leaders exactly.
        assert self.image.leader_index == leaders
        assert self.image.isr_index == isrs
        assert self.image.replica_index == replicas
        for topic_id, topic in self.image.topics.items():
            assert self.image.topic_ids[topic.name] == topic_id
            assert all((topic_id, i) in self.image.partitions for i in range(topic.partition_count))
        assert len(self.image.partitions) == sum(
            t.partition_count for t in self.image.topics.values()
        )

    @invariant()
    def replaying_the_log_rebuilds_the_image(self) -> None:
        assert [offset for offset, _ in self.records] == list(range(len(self.records)))
        # Through the JSON the metadata log stores (to_json), back to records.
        records = [record_from_data(r.TYPE, json.loads(r.to_json())) for _, r in self.records]
        assert replay_log(CLUSTER, records).as_comparable() == self.image.as_comparable()

    @invariant()
    def a_stock_brokers_image_is_the_controllers(self) -> None:
        new = [
            LogEntry(offset, 1, offset, record)
            for offset, record in self.records[self.broker_loaded :]
        ]
        for batch in self.kafka_encoder.batches(new):
            self.broker_view.replay_all(record for _, record in decode_records(batch.data))
        self.broker_loaded = len(self.records)
        assert self.broker_view.differences(view_of_image(self.image)) == []


ReplicationMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
TestReplicationProperties = ReplicationMachine.TestCase


def test_a_controlled_shutdown_fenced_by_its_session_reads_the_same_on_a_stock_broker() -> None:
    """A finding's path, directed: a broker asked to shut down (a forged heartbeat could), then
    its session lapses and it heartbeats on. Kafka's records keep the controlled-shutdown flag
    until a new registration, and so must this image: the REST API and the console showed the
    broker healthy while every stock broker kept it out of the ISRs."""
    machine = ReplicationMachine()
    machine.cluster_starts(3, False, False)
    leader = sorted({p.leader for p in machine.image.partitions.values()} - {NO_LEADER})[0]
    machine.heartbeat(leader, 0, False, True)  # controlled shutdown
    machine.time_passes(3 * DEFAULT_SESSION_TIMEOUT_MS, leader)  # its session lapses
    machine.heartbeat(leader, 0, False, False)  # it heartbeats on, wanting nothing
    broker = machine.image.broker(leader)
    assert broker is not None and broker.fenced and broker.in_controlled_shutdown
    machine.a_stock_brokers_image_is_the_controllers()
    machine.register(leader, True, None, True)  # a new incarnation: the flag is gone
    broker = machine.image.broker(leader)
    assert broker is not None and not broker.in_controlled_shutdown and not broker.fenced
    machine.a_stock_brokers_image_is_the_controllers()
