"""Fencing, controlled shutdown, elections, AlterPartition and AlterReplicaState over HTTP,
following Kafka's ReplicationControlManagerTest scenarios on the real database."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.models import AppliedRequest, Cluster, MetadataRecord
from replicas.models import PendingReplicaStateChange
from replicas.services import replica_state_apply_pending
from tests.conftest import heartbeat_body

pytestmark = pytest.mark.django_db

BEAT = "/internal/v1/broker-heartbeat"
ALTER_PARTITION = "/internal/v1/alter-partition"
REPLICA_STATE = "/internal/v1/alter-replica-state"
ELECT = "/api/v1/elect-leaders"


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def timer_round_if_moves_pending() -> None:
    """What the controller's timer does at once while moves are pending (an unfencing's
    elections among them): its round, here in the test's thread."""
    from controlplane.runtime.controller import get_runtime

    runtime = get_runtime()
    if runtime.is_active() and runtime.moves_pending:
        runtime.fence_round()


class Kafka:
    """The test's cluster: brokers registered over HTTP and their epochs."""

    def __init__(self, api: Any, tokens: dict[str, str], register: Any) -> None:
        self.api = api
        self.tokens = tokens
        self._register = register
        self.epochs: dict[int, int] = {}

    def register(self, *broker_ids: int, unfence: bool = True, **overrides: Any) -> None:
        for broker_id in broker_ids:
            self.epochs[broker_id] = self._register(broker_id, unfence=unfence, **overrides)

    def heartbeat(self, broker_id: int, **flags: Any) -> dict[str, Any]:
        status, body = self.api.post(
            BEAT,
            heartbeat_body(broker_id, self.epochs[broker_id], log_end(), **flags),
            token=self.tokens["broker"],
        )
        assert status == 200 and body["error_code"] == 0, body
        timer_round_if_moves_pending()
        return dict(body)

    def fence(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            assert self.heartbeat(broker_id, want_fence=True)["is_fenced"] is True

    def create_topic(
        self, name: str, assignments: list[list[int]], configs: dict[str, str] | None = None
    ) -> str:
        status, body = self.api.post(
            "/api/v1/create-topics",
            {
                "topics": [
                    {
                        "name": name,
                        "assignments": [
                            {"partition_index": i, "broker_ids": ids}
                            for i, ids in enumerate(assignments)
                        ],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ]
            },
            token=self.tokens["admin"],
        )
        assert status == 200 and body["topics"][0]["error_code"] == 0, body
        return str(body["topics"][0]["topic_id"])

    def partitions(self, topic: str) -> list[dict[str, Any]]:
        status, body = self.api.get(f"/api/v1/topics/{topic}", token=self.tokens["admin"])
        assert status == 200, body
        return list(body["partitions"])

    def partition(self, topic: str, index: int) -> dict[str, Any]:
        return self.partitions(topic)[index]

    def alter_partition(
        self, topic: str, index: int, new_isr: list[int], **overrides: Any
    ) -> tuple[int, dict[str, Any]]:
        current = self.partition(topic, index)
        sender = overrides.pop("broker_id", current["leader_id"])
        item = {
            "partition_index": index,
            "leader_epoch": current["leader_epoch"],
            "partition_epoch": current["partition_epoch"],
            "new_isr": new_isr,
        }
        item.update(overrides)
        status, body = self.api.post(
            ALTER_PARTITION,
            {
                "broker_id": sender,
                "broker_epoch": self.epochs[sender],
                "topics": [{"topic_name": topic, "partitions": [item]}],
            },
            token=self.tokens["broker"],
        )
        assert status == 200, body
        if "topics" not in body:
            return body["error_code"], body
        answer = body["topics"][0]["partitions"][0]
        return answer["error_code"], answer

    def replicas_offline(
        self,
        broker_id: int,
        topics: dict[str, list[int]],
        *,
        epoch: int | None = None,
        new_state: int = 1,
        token: str = "broker",
        request_id: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        status, body = self.api.post(
            REPLICA_STATE,
            {
                "broker_id": broker_id,
                "broker_epoch": self.epochs[broker_id] if epoch is None else epoch,
                "new_state": new_state,
                "reason": "log directory failed",
                "topics": [{"name": n, "partitions": p} for n, p in topics.items()],
            },
            token=self.tokens[token],
            headers={"X-Request-ID": request_id} if request_id else None,
        )
        return int(status), dict(body)

    def elect(
        self, election_type: str, topics: dict[str, list[int]] | None, token: str = "admin"
    ) -> tuple[int, dict[str, Any]]:
        status, body = self.api.post(
            ELECT,
            {
                "election_type": election_type,
                "topic_partitions": None
                if topics is None
                else [{"topic": t, "partitions": p} for t, p in topics.items()],
            },
            token=self.tokens[token],
        )
        return int(status), dict(body)


@pytest.fixture
def kafka(api, tokens, register) -> Kafka:
    return Kafka(api, tokens, register)


def election_errors(body: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {
        (topic["topic"], p["partition_id"]): p["error_code"]
        for topic in body["replica_election_results"]
        for p in topic["partition_result"]
    }


# --- fencing and controlled shutdown --------------------------------------------------------


def test_fence_multiple_brokers_kafkas_scenario(kafka):
    kafka.register(0, 1, 2, 3, 4)
    kafka.create_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    kafka.fence(2, 3)
    p0, p1, p2 = kafka.partitions("foo")
    assert (p0["replica_nodes"], p0["isr_nodes"], p0["leader_id"]) == ([1, 2, 3], [1], 1)
    assert (p1["replica_nodes"], p1["isr_nodes"], p1["leader_id"]) == ([2, 3, 4], [4], 4)
    assert (p2["replica_nodes"], p2["isr_nodes"]) == ([0, 2, 1], [0, 1])
    assert p2["leader_id"] != 2 and p2["leader_id"] in (0, 1)
    # Epochs: partition 1 changed leader twice, partition 0 never.
    assert (p0["leader_epoch"], p0["partition_epoch"]) == (0, 2)
    assert (p1["leader_epoch"], p1["partition_epoch"]) == (2, 2)
    changes = MetadataRecord.objects.filter(record_type="PartitionChangeRecord")
    assert changes.count() == 5 and all(c.principal == "User:broker-a" for c in changes)


def test_the_last_isr_member_stays_and_leads_again_when_unfenced(kafka, api, tokens):
    kafka.register(1, 2)
    kafka.create_topic("foo", [[1, 2]])
    kafka.fence(1, 2)
    p = kafka.partition("foo", 0)
    assert (p["isr_nodes"], p["leader_id"]) == ([2], -1)
    _, leaderless = api.get("/api/v1/partitions?leaderless=true", token=tokens["admin"])
    assert [x["topic"] for x in leaderless["results"]] == ["foo"]
    _, listing = api.get("/api/v1/topics", token=tokens["admin"])
    assert listing["results"][0]["leaderless_partitions"] == 1
    kafka.heartbeat(1)  # not in the ISR: no clean election
    assert kafka.partition("foo", 0)["leader_id"] == -1
    kafka.heartbeat(2)
    p = kafka.partition("foo", 0)
    assert (p["isr_nodes"], p["leader_id"], p["leader_epoch"]) == ([2], 2, 3)


def test_unclean_election_only_for_topics_that_enable_it(kafka):
    kafka.register(1, 2)
    kafka.create_topic("clean", [[1, 2]])
    kafka.create_topic("dirty", [[1, 2]], {"unclean.leader.election.enable": "true"})
    kafka.fence(2, 1)
    kafka.heartbeat(2)
    clean, dirty = kafka.partition("clean", 0), kafka.partition("dirty", 0)
    assert (clean["leader_id"], clean["isr_nodes"]) == (-1, [1])
    assert (dirty["leader_id"], dirty["isr_nodes"]) == (2, [2])
    assert Cluster.objects.get(pk=1).unclean_leader_elections_total >= 1


def test_controlled_shutdown_moves_leadership_first(kafka):
    kafka.register(1, 2, 3)
    kafka.create_topic("foo", [[1, 2, 3], [1, 3, 2], [2, 3, 1]])
    first = kafka.heartbeat(1, want_shut_down=True)
    assert first["should_shut_down"] is False and first["is_fenced"] is False
    for p in kafka.partitions("foo"):
        assert p["leader_id"] != 1 and 1 not in p["isr_nodes"]
    assert [p["leader_id"] for p in kafka.partitions("foo")] == [2, 3, 2]
    kafka.heartbeat(2)
    kafka.heartbeat(3)
    final = kafka.heartbeat(1, want_shut_down=True)
    assert final["should_shut_down"] is True
    # A broker in controlled shutdown does not come back into an ISR.
    code, _ = kafka.alter_partition("foo", 0, [2, 3, 1])
    assert code == 107  # INELIGIBLE_REPLICA: it is fenced now


# --- AlterPartition -------------------------------------------------------------------------


def test_alter_partition_shrinks_and_expands_the_isr(kafka):
    kafka.register(0, 1, 2)
    kafka.create_topic("foo", [[0, 1, 2]])
    code, answer = kafka.alter_partition("foo", 0, [0, 1])
    assert code == 0
    assert answer == {
        "partition_index": 0,
        "error_code": 0,
        "leader_id": 0,
        "leader_epoch": 0,
        "isr": [0, 1],
        "partition_epoch": 1,
    }
    code, answer = kafka.alter_partition("foo", 0, [0, 1, 2])
    assert code == 0 and answer["isr"] == [0, 1, 2] and answer["partition_epoch"] == 2
    assert kafka.partition("foo", 0)["isr_nodes"] == [0, 1, 2]


def test_alter_partition_validation_in_kafkas_order(kafka):
    kafka.register(0, 1, 2, 3)
    kafka.create_topic("foo", [[0, 1, 2]])
    kafka.fence(1)  # ISR [0, 2], partition epoch 1
    end = log_end()
    assert kafka.alter_partition("foo", 0, [0], leader_epoch=9)[0] == 41  # NOT_CONTROLLER
    assert kafka.alter_partition("foo", 0, [0], partition_epoch=9)[0] == 41
    assert kafka.alter_partition("foo", 0, [0], leader_epoch=-1, partition_epoch=9)[0] == 41
    assert kafka.alter_partition("foo", 0, [0], leader_epoch=-1)[0] == 74  # FENCED_LEADER_EPOCH
    assert kafka.alter_partition("foo", 0, [2], broker_id=2)[0] == 42  # not the leader
    assert kafka.alter_partition("foo", 0, [0], partition_epoch=0)[0] == 95  # INVALID_UPDATE_V.
    assert kafka.alter_partition("foo", 0, [0, 3])[0] == 42  # not a subset of the replicas
    assert kafka.alter_partition("foo", 0, [2])[0] == 42  # the ISR must contain the leader
    assert kafka.alter_partition("foo", 0, [0, 1])[0] == 107  # INELIGIBLE_REPLICA: fenced
    status, body = kafka.api.post(
        ALTER_PARTITION,
        {
            "broker_id": 0,
            "broker_epoch": kafka.epochs[0],
            "topics": [
                {
                    "topic_name": "nope",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": 0,
                            "partition_epoch": 0,
                            "new_isr": [0],
                        }
                    ],
                }
            ],
        },
        token=kafka.tokens["broker"],
    )
    assert status == 200 and body["topics"][0]["partitions"][0]["error_code"] == 3
    stale = dict(
        broker_id=0,
        broker_epoch=kafka.epochs[0] + 100,
        topics=[{"topic_name": "foo", "partitions": []}],
    )
    status, body = kafka.api.post(ALTER_PARTITION, stale, token=kafka.tokens["broker"])
    assert status == 200 and body["error_code"] == 77 and body["error"] == "STALE_BROKER_EPOCH"
    assert log_end() == end


def test_alter_partition_needs_cluster_action(kafka, api, tokens):
    kafka.register(0)
    kafka.create_topic("foo", [[0]])
    body = {
        "broker_id": 0,
        "broker_epoch": kafka.epochs[0],
        "topics": [
            {
                "topic_name": "foo",
                "partitions": [
                    {"partition_index": 0, "leader_epoch": 0, "partition_epoch": 0, "new_isr": [0]}
                ],
            }
        ],
    }
    status, refused = api.post(ALTER_PARTITION, body, token=tokens["alice"])
    assert status == 403 and refused["error_code"] == 31


# --- ElectLeaders ---------------------------------------------------------------------------


def test_elect_preferred_and_unclean_leaders(kafka):
    kafka.register(1, 2, 3)
    kafka.create_topic("foo", [[1, 2, 3], [2, 3, 1]])
    kafka.create_topic("duo", [[3, 1]])
    kafka.fence(1)
    kafka.heartbeat(1)  # back, but out of the ISRs
    status, first = kafka.elect("PREFERRED", {"foo": [0, 1], "duo": [0], "bar": [0]})
    assert status == 200 and first["error_code"] == 0
    assert election_errors(first) == {
        ("foo", 0): 80,  # PREFERRED_LEADER_NOT_AVAILABLE: 1 is not in the ISR
        ("foo", 1): 84,  # ELECTION_NOT_NEEDED
        ("duo", 0): 84,
        ("bar", 0): 3,  # UNKNOWN_TOPIC_OR_PARTITION
    }
    assert kafka.alter_partition("foo", 0, [2, 3, 1])[0] == 0
    status, second = kafka.elect("PREFERRED", {"foo": [0]})
    assert election_errors(second) == {("foo", 0): 0}
    p = kafka.partition("foo", 0)
    assert (p["leader_id"], p["leader_epoch"]) == (1, 2)
    status, everything = kafka.elect("PREFERRED", None)
    assert status == 200 and everything["replica_election_results"] == []

    # duo-0 loses its whole ISR while replica 1 (out of the ISR) is alive.
    kafka.fence(3)
    assert kafka.partition("duo", 0)["leader_id"] == -1
    status, unclean = kafka.elect("UNCLEAN", {"foo": [1], "duo": [0, 5]})
    assert election_errors(unclean) == {("foo", 1): 84, ("duo", 0): 0, ("duo", 5): 3}
    p = kafka.partition("duo", 0)
    assert (p["leader_id"], p["isr_nodes"]) == (1, [1])
    kafka.fence(1)
    _, none_left = kafka.elect("UNCLEAN", {"duo": [0]})
    assert election_errors(none_left) == {("duo", 0): 83}  # ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_elect_leaders_needs_alter_on_the_cluster(kafka):
    kafka.register(1)
    kafka.create_topic("foo", [[1]])
    status, refused = kafka.elect("PREFERRED", None, token="alice")
    assert status == 403 and refused["error_code"] == 31
    status, refused = kafka.elect("PREFERRED", None, token="broker")
    assert status == 403 and refused["error"] == "CLUSTER_AUTHORIZATION_FAILED"


# --- AlterReplicaState (KIP-589) ------------------------------------------------------------


def test_alter_replica_state_marks_replicas_offline_and_moves_leadership(kafka, api, tokens):
    kafka.register(1, 2, 3)
    kafka.create_topic("foo", [[1, 2, 3], [2, 1, 3]])
    kafka.create_topic("other", [[3, 2]])
    kafka.create_topic("solo", [[1]])
    status, body = kafka.replicas_offline(
        1, {"foo": [0, 1, 7], "other": [0], "solo": [0], "ghost": [0]}, request_id="ars-1"
    )
    assert status == 200 and body["error_code"] == 0
    assert [
        (t["name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
        for t in body["topics"]
    ] == [
        ("foo", [(0, 0), (1, 0), (7, 3)]),
        ("other", [(0, 6)]),  # NOT_LEADER_OR_FOLLOWER: no replica on broker 1
        ("solo", [(0, 0)]),
        ("ghost", [(0, 3)]),
    ]
    p0, p1 = kafka.partitions("foo")
    p2 = kafka.partition("other", 0)
    assert (p0["leader_id"], p0["isr_nodes"], p0["offline_replicas"]) == (2, [2, 3], [1])
    assert p0["leader_epoch"] == 1
    assert (p1["leader_id"], p1["isr_nodes"], p1["offline_replicas"]) == (2, [2, 3], [1])
    assert p1["leader_epoch"] == 0  # the leader stayed
    assert p2["offline_replicas"] == [] and p2["partition_epoch"] == 0
    solo = kafka.partition("solo", 0)
    assert (solo["leader_id"], solo["isr_nodes"], solo["offline_replicas"]) == (-1, [1], [1])

    records = MetadataRecord.objects.filter(request_id="ars-1").order_by("offset")
    # The failed dir first (CONTRACT: AlterReplicaState reports offline log dirs), then the
    # partitions.
    assert [r.record_type for r in records] == [
        "BrokerRegistrationChangeRecord",
        *["PartitionChangeRecord"] * 3,
    ]
    assert all(r.principal == "User:broker-a" for r in records)
    assert records[0].data["offline_log_dirs"] == ["00000000-0000-0000-0000-000000000002"]
    assert all(r.data["offline_replicas"] == [1] for r in records[1:])
    assert not PendingReplicaStateChange.objects.exists()  # applied (embedded: at once)

    _, offline = api.get("/api/v1/partitions?offline=true", token=tokens["admin"])
    assert [(p["topic"], p["partition_index"]) for p in offline["results"]] == [
        ("foo", 0),
        ("foo", 1),
        ("solo", 0),
    ]
    _, incidents = api.get("/api/v1/replica-incidents?broker=1", token=tokens["admin"])
    assert len(incidents["results"]) == 3

    # The leader takes the recovered replica back: it is online again.
    assert kafka.alter_partition("foo", 0, [2, 3, 1])[0] == 0
    assert kafka.partition("foo", 0)["offline_replicas"] == []


def test_alter_replica_state_refusals(kafka, api, tokens):
    kafka.register(1, 2)
    kafka.create_topic("foo", [[1, 2]])
    end = log_end()
    status, refused = kafka.replicas_offline(1, {"foo": [0]}, token="alice")
    assert status == 403 and refused["error_code"] == 31
    status, stale = kafka.replicas_offline(1, {"foo": [0]}, epoch=kafka.epochs[1] + 50)
    assert status == 200 and stale["error_code"] == 77 and stale["topics"] == []
    status, unknown_broker = kafka.api.post(
        REPLICA_STATE,
        {"broker_id": 9, "broker_epoch": 0, "new_state": 1, "topics": []},
        token=tokens["broker"],
    )
    assert status == 200 and unknown_broker["error_code"] == 77
    for new_state in (0, 2, -1, 127):
        status, event = kafka.replicas_offline(1, {"foo": [0]}, new_state=new_state)
        assert status == 200 and event["error_code"] == 10000
        assert event["error"] == "UNKNOWN_EVENT_TYPE"
    status, unknown = kafka.replicas_offline(1, {"ghost": [0, 1], "foo": [3]})
    assert [[p["error_code"] for p in t["partitions"]] for t in unknown["topics"]] == [[3, 3], [3]]
    assert log_end() == end and not PendingReplicaStateChange.objects.exists()


def test_a_retried_request_id_is_applied_once(kafka):
    kafka.register(1, 2)
    kafka.create_topic("foo", [[2, 1]])
    status, first = kafka.replicas_offline(1, {"foo": [0]}, request_id="same-id")
    assert status == 200 and first["error_code"] == 0
    assert kafka.partition("foo", 0)["offline_replicas"] == [1]
    assert AppliedRequest.objects.filter(request_id="same-id").exists()
    # The replica recovers and the leader takes it back into the ISR ...
    assert kafka.alter_partition("foo", 0, [2, 1])[0] == 0
    end = log_end()
    # ... and the broker's retry of the old report changes nothing.
    status, retried = kafka.replicas_offline(1, {"foo": [0]}, request_id="same-id")
    assert status == 200 and retried["error_code"] == 0
    p = kafka.partition("foo", 0)
    assert (p["offline_replicas"], p["isr_nodes"]) == ([], [2, 1])
    assert log_end() == end
    # One application: the failed dir and the partition's change, once each.
    assert MetadataRecord.objects.filter(request_id="same-id").count() == 2


def test_a_report_from_before_a_re_registration_is_a_no_op(kafka, cluster_id):
    kafka.register(1, 2)
    kafka.create_topic("foo", [[1, 2]])
    old_epoch = kafka.epochs[1]
    # The report passed validation and waits for the controller ...
    PendingReplicaStateChange.objects.create(
        request_id="pending-1",
        broker_id=1,
        broker_epoch=old_epoch,
        payload={
            "broker_id": 1,
            "broker_epoch": old_epoch,
            "new_state": 1,
            "reason": "",
            "topics": [{"name": "foo", "partitions": [0]}],
        },
        principal="User:broker-a",
        received_ms=0,
    )
    # ... while the broker restarts: a new incarnation, a new epoch (its session lapsed).
    from controlplane.runtime.sessions import session_store

    session_store().forget(1)
    kafka.register(1)
    assert kafka.epochs[1] != old_epoch
    end = log_end()
    assert replica_state_apply_pending() == 1
    assert not PendingReplicaStateChange.objects.exists()
    assert log_end() == end
    assert kafka.partition("foo", 0)["offline_replicas"] == []


# --- the log, the state tables and the controller's image agree -----------------------------


def test_after_all_of_it_the_log_replays_to_the_state_tables_and_the_image(kafka, api, tokens):
    from controlplane.runtime.controller import get_runtime
    from controlplane.runtime.replay import image_from_log, metadata_verify

    kafka.register(0, 1, 2, 3)
    kafka.create_topic("a", [[0, 1, 2], [1, 2, 3], [2, 3, 0]])
    kafka.create_topic("b", [[3, 0]], {"unclean.leader.election.enable": "true"})
    kafka.alter_partition("a", 0, [0, 1])
    kafka.fence(1)
    kafka.replicas_offline(2, {"a": [1, 2]})
    kafka.heartbeat(1)
    kafka.alter_partition("a", 0, [0, 1])
    kafka.elect("PREFERRED", None)
    kafka.fence(3, 0)
    kafka.heartbeat(0)
    api.post(
        "/api/v1/create-partitions",
        {"topics": [{"name": "a", "count": 5}]},
        token=tokens["admin"],
    )
    api.post("/api/v1/delete-topics", {"topic_names": ["b"]}, token=tokens["admin"])
    kafka.create_topic("b", [[0]])
    assert metadata_verify() == []
    replayed, gaps = image_from_log()
    runtime = get_runtime()
    assert gaps == [] and runtime.image is not None
    assert runtime.image.as_comparable() == replayed.as_comparable()
    assert ("TOPIC", "b") not in replayed.configs  # the new "b" does not inherit the old one's


# --- malformed bodies on the internal API ---------------------------------------------------

HUGE = 2**70


def _alter_partition_body(**changes: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "partition_index": 0,
        "leader_epoch": 0,
        "partition_epoch": 0,
        "new_isr": [1],
    }
    item.update(changes.pop("item", {}))
    body: dict[str, Any] = {
        "broker_id": 1,
        "broker_epoch": 0,
        "topics": [{"topic_name": "foo", "partitions": [item]}],
    }
    body.update(changes)
    return body


def _replica_state_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "broker_id": 1,
        "broker_epoch": 0,
        "new_state": 1,
        "topics": [{"name": "foo", "partitions": [0]}],
    }
    body.update(changes)
    return body


MALFORMED: list[tuple[str, Any]] = [
    (ALTER_PARTITION, {}),
    (ALTER_PARTITION, [1, 2]),
    (ALTER_PARTITION, _alter_partition_body(broker_id="1")),
    (ALTER_PARTITION, _alter_partition_body(broker_id=HUGE)),
    (ALTER_PARTITION, _alter_partition_body(broker_epoch=HUGE)),
    (ALTER_PARTITION, _alter_partition_body(broker_epoch=1.0)),
    (ALTER_PARTITION, _alter_partition_body(extra=True)),
    (ALTER_PARTITION, _alter_partition_body(topics={"topic_name": "foo"})),
    (ALTER_PARTITION, _alter_partition_body(item={"new_isr": "1"})),
    (ALTER_PARTITION, _alter_partition_body(item={"new_isr": [HUGE]})),
    (ALTER_PARTITION, _alter_partition_body(item={"leader_epoch": HUGE})),
    (ALTER_PARTITION, _alter_partition_body(item={"partition_epoch": "0"})),
    (ALTER_PARTITION, _alter_partition_body(item={"partition_index": -1})),
    (ALTER_PARTITION, _alter_partition_body(item={"bogus": 1})),
    (ALTER_PARTITION, _alter_partition_body(item={"leader_recovery_state": 2})),
    (REPLICA_STATE, {}),
    (REPLICA_STATE, "x"),
    (REPLICA_STATE, _replica_state_body(new_state="1")),
    (REPLICA_STATE, _replica_state_body(new_state=HUGE)),
    (REPLICA_STATE, _replica_state_body(new_state=None)),
    (REPLICA_STATE, _replica_state_body(broker_epoch="0")),
    (REPLICA_STATE, _replica_state_body(broker_id=True)),
    (REPLICA_STATE, _replica_state_body(topics=[{"name": "foo", "partitions": ["0"]}])),
    (REPLICA_STATE, _replica_state_body(topics=[{"name": "foo", "partitions": [HUGE]}])),
    (REPLICA_STATE, _replica_state_body(topics=[{"name": "foo"}])),
    (REPLICA_STATE, _replica_state_body(topics=[{"name": "foo", "partitions": [0], "x": 1}])),
    (REPLICA_STATE, _replica_state_body(reason=5)),
    (REPLICA_STATE, _replica_state_body(unknown_field="?")),
    (BEAT, {"broker_id": 1, "broker_epoch": "0", "current_metadata_offset": 0}),
    (BEAT, {"broker_id": 1, "broker_epoch": 0, "current_metadata_offset": HUGE}),
    (BEAT, {"broker_id": 1, "broker_epoch": 0, "current_metadata_offset": 0, "want_fence": 1}),
    (ELECT, {"election_type": "SOMETIMES"}),
    (ELECT, {"election_type": 1}),
    (ELECT, {"topic_partitions": [{"topic": "foo", "partitions": [HUGE]}]}),
    (ELECT, {"topic_partitions": [{"topic": "foo", "partitions": "0"}]}),
    (ELECT, {"topic_partitions": [{"topic": "foo"}]}),
    (ELECT, {"topic_partitions": "all"}),
    (ELECT, {"election_type": "PREFERRED", "more": 1}),
]


@pytest.mark.parametrize(("path", "body"), MALFORMED)
def test_malformed_bodies_are_400_and_write_nothing(kafka, tokens, path, body):
    kafka.register(1)
    kafka.create_topic("foo", [[1]])
    end = log_end()
    token = tokens["admin"] if path == ELECT else tokens["broker"]
    status, answer = kafka.api.post(path, body, token=token)
    assert status == 400, answer
    assert answer["error_code"] == 42 and answer["error"] == "INVALID_REQUEST"
    assert log_end() == end
    assert not PendingReplicaStateChange.objects.exists()


@pytest.mark.parametrize("path", [ALTER_PARTITION, REPLICA_STATE])
@pytest.mark.parametrize("raw", ["{", "", "nul", "[{]"])
def test_unparseable_internal_bodies_are_400(api, tokens, path, raw):
    status, answer = api.post(path, raw, token=tokens["broker"], raw=True)
    assert status == 400 and answer["error_code"] == 42
