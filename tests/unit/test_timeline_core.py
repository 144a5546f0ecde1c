"""The timeline's words for what the controller did, from the pure core: one entry per write,
its kind and severity, the partitions it moved with their state before, and unclean elections
said loudly whatever asked for them. Also the health index's broker figures and the units the
pages use."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import BrokerSession, ControllerEnv
from controlplane.controller.health import HealthIndex
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import ConfigRecord
from controlplane.controller.timeline import (
    Kind,
    Severity,
    TimelineEntry,
    WriteSummary,
    describe_commit,
)
from frontend.tables.units import bytes_text, duration_text

CLUSTER = "timeline-core"
DIRS = {b: [str(uuid.UUID(int=b * 10 + d)) for d in range(2)] for b in range(5)}


class Controller:
    """The pure core with a clock: each call is one write, described as the projection would."""

    def __init__(self) -> None:
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.sessions: dict[int, BrokerSession] = {}
        self.now = 1_000_000
        self.epochs: dict[int, int] = {}
        self.static = {"unclean.leader.election.enable": "false"}

    def run(self, api: str, payload: dict[str, Any]) -> tuple[dict[str, Any], TimelineEntry | None]:
        delta = MetadataDelta(self.image)
        env = ControllerEnv(
            now_ms=self.now,
            activated_ms=self.now,
            sessions=self.sessions,
            static_configs=self.static,
        )
        response = run_event(delta, api, payload, env)
        entries = []
        if delta.replayed:
            write = WriteSummary(api, delta.base.last_offset + 1, delta.last_offset)
            entries = describe_commit(self.image, delta.replayed, [write])
        self.image.apply(delta)
        return response, (entries[0] if entries else None)

    def register(self, broker_id: int) -> None:
        response, _ = self.run(
            "BrokerRegistration",
            {
                "broker_id": broker_id,
                "cluster_id": CLUSTER,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [],
                "rack": None,
                "pod": "broker",
                "log_dirs": DIRS[broker_id],
            },
        )
        self.epochs[broker_id] = response["broker_epoch"]
        self.heartbeat(broker_id)

    def heartbeat(self, broker_id: int, **flags: Any) -> TimelineEntry | None:
        self.sessions[broker_id] = BrokerSession(self.now, self.image.last_offset)
        _, entry = self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": self.epochs[broker_id],
                "current_metadata_offset": self.image.last_offset,
                **flags,
            },
        )
        return entry

    def create(self, name: str, assignments: list[list[int]], **configs: str) -> TimelineEntry:
        _, entry = self.run(
            "CreateTopics",
            {
                "topics": [
                    {
                        "name": name,
                        "assignments": [
                            {"partition_index": i, "broker_ids": ids}
                            for i, ids in enumerate(assignments)
                        ],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()],
                    }
                ]
            },
        )
        assert entry is not None
        return entry

    def leader(self, topic: str, index: int) -> int:
        return self.image.partitions[(self.image.topic_ids[topic], index)].leader


@pytest.fixture
def controller() -> Controller:
    built = Controller()
    for broker_id in range(4):
        built.register(broker_id)
    return built


def test_a_log_dir_failure_is_one_entry_with_each_partitions_leaders(
    controller: Controller,
) -> None:
    controller.create("orders", [[1, 2, 3], [2, 3, 1], [1, 3, 2]])
    _, entry = controller.run(
        "AlterReplicaState",
        {
            "broker_id": 1,
            "broker_epoch": controller.epochs[1],
            "new_state": 1,
            "topics": [{"name": "orders", "partitions": [0, 1, 2]}],
        },
    )
    assert entry is not None and entry.kind is Kind.LOG_DIR_FAILURE
    assert entry.title == (
        "Log dir failure reported by broker 1: 3 replicas offline; 3 replicas left their ISR, "
        "2 leaders moved"
    )
    assert entry.severity is Severity.WARNING
    moves = {m.partition: m for m in entry.moves}
    assert (moves[0].previous_leader, moves[0].leader) == (1, 2)
    assert (moves[1].previous_leader, moves[1].leader) == (2, 2)
    assert all(m.offline_added == (1,) and 1 not in m.isr for m in entry.moves)
    assert entry.brokers == (1, 2, 3) and entry.topics == ("orders",)

    # The dir is reported by its heartbeats too, then comes back.
    named = controller.heartbeat(1, offline_log_dirs=[DIRS[1][0]])
    assert named is not None and named.kind is Kind.LOG_DIR_FAILURE
    assert named.title == f"Broker 1 reports log dir {DIRS[1][0]} offline"
    assert controller.heartbeat(1, offline_log_dirs=[DIRS[1][0]]) is None  # nothing new
    back = controller.heartbeat(1, offline_log_dirs=[])
    assert back is not None and back.kind is Kind.LOG_DIR_RECOVERY
    assert back.severity is Severity.OK


def test_a_session_expiry_says_what_it_moved_and_a_lone_replica_goes_leaderless(
    controller: Controller,
) -> None:
    controller.create("orders", [[2, 3], [3, 2]])
    controller.create("solo", [[2]])
    controller.now += 60_000
    for broker_id in (1, 3):  # everyone heartbeats but broker 2
        controller.heartbeat(broker_id)
    controller.sessions[0] = BrokerSession(controller.now, -1)
    _, entry = controller.run("FenceStaleBrokers", {})
    assert entry is not None and entry.kind is Kind.SESSION_EXPIRED
    assert entry.title.startswith("Session expired: broker 2 fenced")
    assert "2 replicas left their ISR, 1 leader moved, 1 partition left without a leader" in (
        entry.title
    )
    assert entry.severity is Severity.CRITICAL  # solo-0 has no leader left
    assert {(m.topic_name, m.partition, m.previous_leader, m.leader) for m in entry.moves} == {
        ("orders", 0, 2, 3),
        ("orders", 1, 3, 3),
        ("solo", 0, 2, -1),
    }


def test_controlled_shutdown_and_fencing_are_told_apart(controller: Controller) -> None:
    controller.create("orders", [[1, 2], [2, 1]])
    entry = controller.heartbeat(1, want_shut_down=True)
    assert entry is not None and entry.kind is Kind.CONTROLLED_SHUTDOWN
    assert entry.title.startswith("Broker 1 began a controlled shutdown; ")
    for broker_id in (0, 2, 3):  # every active broker has seen the shutdown begin
        controller.heartbeat(broker_id)
    entry = controller.heartbeat(1, want_shut_down=True)
    assert entry is not None and entry.kind is Kind.FENCED
    assert entry.title.startswith("Broker 1 shut down (its controlled shutdown is complete)")
    entry = controller.heartbeat(2, want_fence=True)
    assert entry is not None and entry.title.startswith("Broker 2 fenced at its own request")


def test_an_unclean_election_is_said_loudly(controller: Controller) -> None:
    controller.create("orders", [[1, 2]], **{"unclean.leader.election.enable": "true"})
    # Broker 2 drops out of the ISR; then broker 1 fails: 2 is elected from outside the ISR.
    _, isr = controller.run(
        "AlterPartition",
        {
            "broker_id": 1,
            "broker_epoch": controller.epochs[1],
            "topics": [
                {
                    "topic_name": "orders",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": 0,
                            "partition_epoch": 0,
                            "new_isr": [1],
                        }
                    ],
                }
            ],
        },
    )
    assert isr is not None and isr.kind is Kind.ISR_CHANGE
    assert isr.title == "ISR change by the leader (AlterPartition): orders-0: broker 2 left"
    entry = controller.heartbeat(1, want_fence=True)
    assert entry is not None and entry.unclean and entry.severity is Severity.CRITICAL
    assert entry.title.startswith(
        "UNCLEAN leader election: 1 partition got a leader from outside the ISR"
    )
    (move,) = entry.moves
    assert (move.previous_leader, move.leader, move.unclean) == (1, 2, True)


def test_topics_configs_and_acls(controller: Controller) -> None:
    created = controller.create("orders", [[1], [2]])
    assert created.kind is Kind.TOPIC_CREATED and created.severity is Severity.INFO
    assert created.title == "Topic orders created: 2 partitions, replication factor 1"
    _, config = controller.run(
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "orders",
                    "configs": [
                        {"name": "retention.ms", "config_operation": "SET", "value": "1000"}
                    ],
                },
            ]
        },
    )
    assert config is not None and config.kind is Kind.CONFIG_CHANGED
    assert config.details["configs"][0]["value"] == "1000"
    assert config.topics == ("orders",)
    # A sensitive value never reaches the timeline: a record of the token key, as an older
    # version wrote it (the key is a node setting now, never written).
    secret = ConfigRecord(
        resource_type="BROKER", resource_name="", name="delegation.token.secret.key", value="k"
    )
    offset = controller.image.last_offset + 1
    (old,) = describe_commit(
        controller.image, [(offset, secret)], [WriteSummary("AlterConfigs", offset, offset)]
    )
    assert old.kind is Kind.CONFIG_CHANGED and old.details["configs"][0]["value"] == "(redacted)"
    assert "'k'" not in repr(old)
    _, acl = controller.run(
        "CreateAcls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "orders",
                    "pattern_type": "LITERAL",
                    "principal": "User:bob",
                    "host": "*",
                    "operation": "READ",
                    "permission_type": "ALLOW",
                }
            ]
        },
    )
    assert acl is not None and acl.kind is Kind.ACL_CHANGED
    assert acl.title == "ACLs created ALLOW User:bob READ on TOPIC:orders (LITERAL)"
    _, deleted = controller.run("DeleteTopics", {"topic_names": ["orders"]})
    assert deleted is not None and deleted.title == "Topic orders deleted (2 partitions)"
    assert deleted.topics == ("orders",)  # by name, though the topic is gone


def test_broker_figures_of_the_health_index(controller: Controller) -> None:
    controller.create("orders", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    controller.run(
        "AlterReplicaState",
        {
            "broker_id": 3,
            "broker_epoch": controller.epochs[3],
            "new_state": 1,
            "topics": [{"name": "orders", "partitions": [2]}],
        },
    )
    index = HealthIndex.build(controller.image, controller.static)
    load = index.brokers[3]
    assert (load.replicas, load.in_sync_replicas, load.offline_replicas) == (3, 2, 1)
    # Reported by AlterReplicaState, a dir is offline too (CONTRACT): Kafka's DirectoryId.LOST
    # when the report names none, on the registration, so a heartbeat clears it (issue 25).
    assert load.offline_log_dirs == 1
    assert load.leaders == 0 and index.brokers[1].leaders == 2  # it took orders-2 over
    assert index.brokers[1].under_replicated_partitions == 1  # orders-2, without broker 3
    assert index.totals.offline_log_dirs == 1
    controller.heartbeat(3, offline_log_dirs=DIRS[3])
    index = HealthIndex.build(controller.image, controller.static)
    assert index.brokers[3].offline_log_dirs == 2  # both named by its heartbeats


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (604_800_000, "7 d"),
        (3_600_000, "1 h"),
        (5_400_000, "1 h 30 min"),
        (90_000, "1 min 30 s"),
        (2_500, "2.5 s"),
        (250, "250 ms"),
        (-1, "-1 (none)"),
    ],
)
def test_durations_read_as_people_say_them(ms: int, text: str) -> None:
    assert duration_text(ms) == text


@pytest.mark.parametrize(
    ("size", "text"),
    [(1_048_576, "1 MiB"), (1_073_741_824, "1 GiB"), (1536, "1.5 KiB"), (512, "512 B")],
)
def test_sizes_read_as_people_say_them(size: int, text: str) -> None:
    assert bytes_text(size) == text
