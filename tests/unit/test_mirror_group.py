"""The flows' groups in the pure core (issue 13, point 2): membership, generations, one leader,
generation fencing of a stale leader, the group state machine as data, and no record for a
no-op. A hypothesis state machine drives joins, leaves, session expiries, syncs and task config
writes (current and stale) in any order and checks the invariants after every step; replaying
the log from offset 0 always rebuilds the same image."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import InvalidStateTransition
from controlplane.controller.image import MetadataDelta, MetadataImage, replay_log
from controlplane.controller.mirror.assignment import eager_assignment, source_task_configs
from controlplane.controller.mirror.config import CONNECTORS, Flow, mirror_config_parse
from controlplane.controller.mirror.group import (
    GROUP_TRANSITIONS,
    check_group_transition,
    put_task_configs,
)
from controlplane.controller.mirror_records import MirrorGroupRecord
from controlplane.controller.records import record_from_data

CONFIG = """clusters = A, B
A.bootstrap.servers = http://a:1
B.bootstrap.servers = http://b:1
A->B.enabled = true
A->B.tasks.max = 3
emit.heartbeats.enabled = false
"""
WORKERS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
SESSION_MS = 3000


class Cluster:
    def __init__(self) -> None:
        self.image = MetadataImage(cluster_id="mirror-test")
        self.log: list[Any] = []
        self.now = 1_000_000

    def run(self, api: str, payload: dict[str, Any]) -> dict[str, Any]:
        delta = MetadataDelta(self.image)
        before = delta.mirror_delta.flow(("A", "B")).state
        env = ControllerEnv(now_ms=self.now, activated_ms=0, sessions={})
        response = run_event(delta, api, payload, env)
        after = delta.mirror_delta.flow(("A", "B")).state
        if after != before:
            assert after in GROUP_TRANSITIONS[before], (before, after)
        self.log.extend(record for _, record in delta.replayed)
        self.image.apply(delta)
        return response

    @property
    def group(self) -> Any:
        return self.image.mirror_image.flows.get(("A", "B"))


def flow(**payload: Any) -> dict[str, Any]:
    return {"source": "A", "target": "B", **payload}


def join(cluster: Cluster, member: str, worker: str, **extra: Any) -> dict[str, Any]:
    return cluster.run(
        "JoinMirrorGroup",
        flow(
            member_id=member,
            worker_id=f"{worker}/A__B",
            rest_url=f"http://{worker}:1",
            session_timeout_ms=SESSION_MS,
            **extra,
        ),
    )


def derived(topics: int) -> list[dict[str, str]]:
    """MirrorSourceConnector's task configs for `topics` one-partition topics t0, t1, ..."""
    base = mirror_config_parse(CONFIG).connector_config(Flow("A", "B"), "MirrorSourceConnector")
    return source_task_configs(base, {f"t{i}": 1 for i in range(topics)}, 3)


@pytest.fixture
def cluster() -> Cluster:
    made = Cluster()
    assert made.run("AlterMirrorConfig", {"text": CONFIG})["error_code"] == 0
    return made


def test_a_flow_must_exist(cluster: Cluster) -> None:
    answer = cluster.run(
        "JoinMirrorGroup",
        {
            "source": "B",
            "target": "A",
            "member_id": "m",
            "worker_id": "w",
            "rest_url": "u",
            "session_timeout_ms": 3000,
        },
    )
    assert answer["error"] == "INVALID_REQUEST" and "B->A" in answer["error_message"]


def test_generations_leader_and_no_op_joins(cluster: Cluster) -> None:
    first = join(cluster, "m1", "127.0.0.2")
    assert (first["generation"], first["leader_id"], first["state"]) == (
        1,
        "m1",
        "CompletingRebalance",
    )
    records = len(cluster.log)
    again = join(cluster, "m1", "127.0.0.2")  # the same member again: nothing written
    assert again["generation"] == 1 and len(cluster.log) == records
    join(cluster, "m2", "127.0.0.3")
    assert cluster.group.generation == 2 and cluster.group.leader == "m1"
    leave = cluster.run("LeaveMirrorGroup", flow(member_id="m1"))
    assert leave["generation"] == 3 and leave["leader_id"] == "m2"
    assert cluster.run("LeaveMirrorGroup", flow(member_id="m1"))["generation"] == 3  # no-op
    assert len([r for r in cluster.log if isinstance(r, MirrorGroupRecord)]) == 3


def test_a_live_worker_id_is_fenced_a_dead_one_replaced(cluster: Cluster) -> None:
    join(cluster, "m1", "127.0.0.2")
    fenced = join(cluster, "m9", "127.0.0.2", contacts={"m1": cluster.now})
    assert fenced["error"] == "FENCED_INSTANCE_ID"
    cluster.now += SESSION_MS + 1
    replaced = join(cluster, "m9", "127.0.0.2", contacts={"m1": cluster.now - SESSION_MS - 1})
    assert replaced["error_code"] == 0 and [m.member_id for m in cluster.group.members] == ["m9"]


def test_a_stale_leader_is_fenced_by_generation(cluster: Cluster) -> None:
    join(cluster, "m1", "127.0.0.2")
    stale = cluster.group.generation
    join(cluster, "m2", "127.0.0.3")  # a rebalance while m1 was paused
    write = flow(
        member_id="m1",
        generation=stale,
        connector="MirrorSourceConnector",
        task_configs=[{"task.assigned.partitions": "t-0"}],
    )
    records = len(cluster.log)
    assert cluster.run("PutMirrorTaskConfigs", write)["error"] == "ILLEGAL_GENERATION"
    sync = flow(member_id="m1", generation=stale, assignments=[])
    assert cluster.run("SyncMirrorGroup", sync)["error"] == "ILLEGAL_GENERATION"
    follower = flow(member_id="m2", generation=cluster.group.generation, assignments=[])
    assert cluster.run("SyncMirrorGroup", follower)["error"] == "REBALANCE_IN_PROGRESS"
    assert len(cluster.log) == records  # nothing of theirs was written
    secret = {
        **write,
        "generation": cluster.group.generation,
        "task_configs": [{"source.cluster.token": "literal-token"}],
    }
    answer = cluster.run("PutMirrorTaskConfigs", secret)
    assert answer["error"] == "INVALID_CONFIG" and "literal-token" not in str(answer)
    ok = {**write, "generation": cluster.group.generation, "task_configs": derived(1)}
    assert cluster.run("PutMirrorTaskConfigs", ok)["error_code"] == 0
    assert cluster.run("PutMirrorTaskConfigs", ok)["error_code"] == 0
    assert len(cluster.log) == records + 1  # the same configs again wrote nothing


def test_only_derived_task_configs_from_a_member_running_the_connector_are_stored(
    cluster: Cluster,
) -> None:
    """Issue 34: the control plane keeps only what the connector derives from the stored
    configuration, computed by a member of the generation (the one running the connector once
    it is assigned), whose worker id the audit trail gets in the notes."""
    join(cluster, "m1", "127.0.0.2")
    join(cluster, "m2", "127.0.0.3")
    generation = cluster.group.generation
    write = flow(
        member_id="m1",
        generation=generation,
        connector="MirrorSourceConnector",
        task_configs=derived(2),
        poster_member_id="m2",
        poster_worker_id="127.0.0.3/A__B",
    )
    records = len(cluster.log)
    hostile = derived(2)
    hostile[0]["target.cluster.bootstrap.servers"] = "http://127.0.0.1:27555"
    answer = cluster.run("PutMirrorTaskConfigs", {**write, "task_configs": hostile})
    assert answer["error"] == "INVALID_CONFIG", answer
    assert "target.cluster.bootstrap.servers differs" in answer["error_message"]
    assert "27555" not in answer["error_message"]
    assert "posted by 127.0.0.3/A__B" in answer["error_message"]
    for poster in ({"poster_member_id": "eve"}, {"poster_worker_id": "127.0.0.9/A__B"}):
        answer = cluster.run("PutMirrorTaskConfigs", {**write, **poster})
        assert answer["error"] == "INVALID_REQUEST" and "not a member" in answer["error_message"]
    assert len(cluster.log) == records
    # Once assigned, only the member running the connector computes its task configs.
    plan = [
        {"member_id": "m1", "connectors": ["MirrorCheckpointConnector"], "tasks": []},
        {"member_id": "m2", "connectors": ["MirrorSourceConnector"], "tasks": []},
    ]
    sync = flow(member_id="m1", generation=generation, assignments=plan)
    assert cluster.run("SyncMirrorGroup", sync)["error_code"] == 0
    leaders_own = {**write, "poster_member_id": "", "poster_worker_id": ""}
    answer = cluster.run("PutMirrorTaskConfigs", leaders_own)
    assert answer["error"] == "INVALID_REQUEST" and "does not run" in answer["error_message"]
    result = put_task_configs(MetadataDelta(cluster.image), write)
    assert result.notes == {"poster_worker_id": "127.0.0.3/A__B", "poster_member_id": "m2"}
    assert cluster.run("PutMirrorTaskConfigs", write)["error_code"] == 0
    assert list(cluster.group.task_configs["MirrorSourceConnector"]) == derived(2)


def test_the_group_state_machine_as_data() -> None:
    check_group_transition("Stable", "Stable")  # same state: a no-op
    check_group_transition("Empty", "CompletingRebalance")
    with pytest.raises(InvalidStateTransition):
        check_group_transition("Empty", "Stable")


def test_target_states_and_the_config_no_op(cluster: Cluster) -> None:
    paused = cluster.run("AlterMirrorTargetState", flow(state="PAUSED", connectors=[]))
    assert paused["error_code"] == 0 and set(cluster.group.target_states.values()) == {"PAUSED"}
    records = len(cluster.log)
    cluster.run("AlterMirrorTargetState", flow(state="PAUSED", connectors=[]))
    assert cluster.run("AlterMirrorConfig", {"text": CONFIG})["changed"] is False
    assert len(cluster.log) == records
    assert (
        cluster.run("AlterMirrorTargetState", flow(state="PAUSED", connectors=["Nope"]))["error"]
        == "INVALID_REQUEST"
    )


class GroupMachine(RuleBasedStateMachine):
    """Any order of joins, leaves, lapsed sessions and leader writes keeps the invariants."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster = Cluster()
        self.cluster.run("AlterMirrorConfig", {"text": CONFIG})
        self.contacts: dict[str, int] = {}
        self.serial = 0

    def members(self) -> list[Any]:
        group = self.cluster.group
        return [] if group is None else list(group.members)

    @rule(worker=st.sampled_from(WORKERS), restarted=st.booleans())
    def join(self, worker: str, restarted: bool) -> None:
        holder = next((m for m in self.members() if m.worker_id.startswith(worker + "/")), None)
        if holder is not None and not restarted:
            member = holder.member_id
        else:
            self.serial += 1
            member = f"{worker}-{self.serial}"
        answer = join(self.cluster, member, worker, contacts=dict(self.contacts))
        if answer["error_code"] == 0:
            self.contacts[member] = self.cluster.now
        else:
            assert answer["error"] == "FENCED_INSTANCE_ID" and holder is not None

    @precondition(lambda self: bool(self.members()))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        member = data.draw(st.sampled_from(self.members()))
        self.cluster.run("LeaveMirrorGroup", flow(member_id=member.member_id))

    @rule(ms=st.integers(min_value=0, max_value=2 * SESSION_MS), beat=st.booleans())
    def time_passes(self, ms: int, beat: bool) -> None:
        self.cluster.now += ms
        if beat:  # every member but the first heartbeats
            for member in self.members()[1:]:
                self.contacts[member.member_id] = self.cluster.now
        answer = self.cluster.run(
            "ExpireMirrorMembers", {"contacts": {"A->B": dict(self.contacts)}}
        )
        for member in self.members():
            last = max(member.joined_ms, self.contacts.get(member.member_id, 0))
            assert self.cluster.now - last <= SESSION_MS, "a lapsed member stayed"
        assert answer["error_code"] == 0

    @precondition(lambda self: bool(self.members()))
    @rule(stale=st.booleans(), tasks=st.integers(min_value=0, max_value=3))
    def leader_writes(self, stale: bool, tasks: int) -> None:
        group = self.cluster.group
        generation = group.generation - 1 if stale else group.generation
        records = len(self.cluster.log)
        configs = derived(tasks)
        # The member running the source connector computed them (the leader until assigned).
        current = group.assignment_generation == group.generation
        runs = [a.member_id for a in group.assignments if "MirrorSourceConnector" in a.connectors]
        poster = runs[0] if current and runs else group.leader
        put = self.cluster.run(
            "PutMirrorTaskConfigs",
            flow(
                member_id=group.leader,
                generation=generation,
                connector="MirrorSourceConnector",
                task_configs=configs,
                poster_member_id=poster,
            ),
        )
        counts = {c: len(self.cluster.group.task_configs.get(c, ())) for c in CONNECTORS}
        plan = eager_assignment(
            [(m.member_id, m.worker_id) for m in group.members], CONNECTORS, counts
        )
        sync = self.cluster.run(
            "SyncMirrorGroup",
            flow(
                member_id=group.leader,
                generation=generation,
                assignments=[
                    {
                        "member_id": a.member_id,
                        "connectors": list(a.connectors),
                        "tasks": list(a.tasks),
                    }
                    for a in plan
                ],
            ),
        )
        if stale:
            assert put["error"] == sync["error"] == "ILLEGAL_GENERATION"
            assert len(self.cluster.log) == records, "a stale leader wrote"
        else:
            assert put["error_code"] == 0 and sync["error_code"] == 0, (put, sync)
            assert self.cluster.group.state == "Stable"

    @invariant()
    def one_leader_among_members(self) -> None:
        group = self.cluster.group
        if group is None:
            return
        ids = [m.member_id for m in group.members]
        assert (group.leader in ids) if ids else group.leader == ""
        assert len({m.worker_id for m in group.members}) == len(ids)
        if group.assignment_generation == group.generation:
            assert {a.member_id for a in group.assignments} <= set(ids)

    @invariant()
    def every_membership_change_is_the_next_generation(self) -> None:
        records = [r for r in self.cluster.log if isinstance(r, MirrorGroupRecord)]
        assert [r.generation for r in records] == list(range(1, len(records) + 1))

    @invariant()
    def replay_rebuilds_the_image(self) -> None:
        decoded = [record_from_data(r.TYPE, r.to_data()) for r in self.cluster.log]
        assert decoded == self.cluster.log
        rebuilt = replay_log("mirror-test", decoded)
        assert rebuilt.as_comparable() == self.cluster.image.as_comparable()


GroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
TestGroupMachine = GroupMachine.TestCase
