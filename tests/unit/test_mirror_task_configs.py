"""Task configs are what the connector derives from the stored configuration (issue 34, point
3): `eve`, holding the flow's session key, signed task configs pointing both clusters at her URL
and the leader ran them with the operator's token. Now the leader refuses (Connect's 400) any
posted config that is not what the connector derives, the control plane refuses it again when
storing (INVALID_CONFIG), every worker runs a task with the connector config it derives itself,
and the write is persisted in the name of the member that posted it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.controller.mirror.assignment import source_task_configs
from controlplane.controller.mirror.config import Flow, MirrorMakerConfig, mirror_config_parse
from controlplane.controller.mirror.task_configs import task_config_problems, task_config_to_run
from mirror.node import herder as herder_module
from mirror.node.clients import Endpoint
from mirror.node.herder import FlowWorker
from mirror.node.providers import Providers
from mirror.node.signature import MEMBER_HEADER, signature_headers

TEXT = """clusters = A, B
A.bootstrap.servers = http://127.0.0.1:18001
A.token = ${env:MM2_A_TOKEN}
B.bootstrap.servers = http://127.0.0.1:18002
B.token = ${env:MM2_B_TOKEN}
config.providers = env
config.providers.env.class = EnvVarConfigProvider
emit.heartbeats.enabled = false
A->B.enabled = true
A->B.emit.heartbeats.enabled = true
A->B.topics = orders.*, payments
A->B.tasks.max = 2
mm.rest.host.name = 127.0.0.2
"""
FLOW = Flow("A", "B")
SOURCE, HEARTBEAT, CHECKPOINT = (
    "MirrorSourceConnector",
    "MirrorHeartbeatConnector",
    "MirrorCheckpointConnector",
)
ATTACKER = "http://127.0.0.1:27555"


@pytest.fixture(scope="module")
def config() -> MirrorMakerConfig:
    return mirror_config_parse(TEXT)


def derived(config: MirrorMakerConfig, counts: dict[str, int]) -> list[dict[str, str]]:
    base = config.connector_config(FLOW, SOURCE)
    return source_task_configs(base, counts, int(base["tasks.max"]))


def test_what_the_connector_derives_passes(config: MirrorMakerConfig) -> None:
    tasks = derived(config, {"orders.eu": 3, "payments": 1})
    assert len(tasks) == 2 and task_config_problems(config, FLOW, SOURCE, tasks) == []
    assert task_config_problems(config, FLOW, SOURCE, []) == []  # no topic yet
    assert task_config_problems(config, FLOW, CHECKPOINT, []) == []
    beat = {**config.connector_config(FLOW, HEARTBEAT), "task.index": "0"}
    assert task_config_problems(config, FLOW, HEARTBEAT, [beat]) == []


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            {"target.cluster.bootstrap.servers": ATTACKER},
            "task 0: target.cluster.bootstrap.servers differs from the stored configuration",
        ),
        (
            {"source.cluster.bootstrap.servers": ATTACKER},
            "task 0: source.cluster.bootstrap.servers differs",
        ),
        (
            {"target.cluster.token": "${env:CP_MIRROR_TOKEN}"},
            "task 0: target.cluster.token differs",
        ),
        ({"source.cluster.client.id": "eve"}, "source.cluster.client.id is not in the stored"),
        ({"config.providers.env.param.allowlist.pattern": ".*"}, "is not in the stored"),
        ({"task.index": "1"}, "task 0: task.index must be 0"),
    ],
)
def test_a_config_of_the_posters_choosing_is_refused(
    config: MirrorMakerConfig, change: dict[str, str], why: str
) -> None:
    tasks = derived(config, {"orders.eu": 2})
    tasks[0].update(change)
    problems = task_config_problems(config, FLOW, SOURCE, tasks)
    assert any(why in p for p in problems), problems
    assert ATTACKER not in str(problems) and "CP_MIRROR_TOKEN" not in str(problems)


def test_partitions_must_be_the_connectors_deal_of_topics_it_selects(
    config: MirrorMakerConfig,
) -> None:
    def problems(tasks: list[dict[str, str]]) -> str:
        return "; ".join(task_config_problems(config, FLOW, SOURCE, tasks))

    missing_key = derived(config, {"orders.eu": 2})
    del missing_key[1]["source.cluster.token"]
    assert "source.cluster.token of the stored configuration is missing" in problems(missing_key)
    base = config.connector_config(FLOW, SOURCE)
    three = source_task_configs(base, {"orders.eu": 4}, 3)  # tasks.max is 2
    assert "3 task(s) where tasks.max" in problems(three)
    gap = derived(config, {"orders.eu": 4})
    gap[0]["task.assigned.partitions"] = "orders.eu-0"  # orders.eu-2 left out
    assert "not every topic-partition dealt round-robin" in problems(gap)
    garbled = derived(config, {"orders.eu": 2})
    garbled[0]["task.assigned.partitions"] = "orders.eu-x"
    assert "is not a list of topic-partitions" in problems(garbled)
    secrets = derived(config, {"secrets": 1, "orders.eu": 1})
    assert problems(secrets) == "topic secrets is not one the flow's filter selects"
    back = derived(config, {"B.orders.us": 1, "orders.eu": 1})  # a cycle back to B
    assert "topic B.orders.us is not one" in problems(back)
    beat = {**config.connector_config(FLOW, HEARTBEAT), "task.index": "0"}
    assert "has one task at most" in "; ".join(
        task_config_problems(config, FLOW, HEARTBEAT, [beat, {**beat, "task.index": "1"}])
    )
    assert "has no task" in "; ".join(task_config_problems(config, FLOW, CHECKPOINT, [beat]))
    disabled = mirror_config_parse(TEXT.replace("A->B.enabled = true", "A->B.enabled = false"))
    off = source_task_configs(disabled.connector_config(FLOW, SOURCE), {"orders.eu": 1}, 1)
    assert task_config_problems(disabled, FLOW, SOURCE, off) == [
        "A->B is not enabled: MirrorSourceConnector has no task"
    ]


def test_a_task_runs_with_the_connector_config_the_node_derives(
    config: MirrorMakerConfig,
) -> None:
    """Even a config persisted before these checks cannot point a task at another URL."""
    base = config.connector_config(FLOW, SOURCE)
    persisted = {
        **base,
        "target.cluster.bootstrap.servers": ATTACKER,
        "target.cluster.token": "${env:CP_MIRROR_TOKEN}",
        "extra": "x",
        "task.assigned.partitions": "orders.eu-0",
        "task.index": "0",
    }
    run = task_config_to_run(base, SOURCE, persisted)
    assert run == {**base, "task.assigned.partitions": "orders.eu-0", "task.index": "0"}
    assert task_config_to_run(base, HEARTBEAT, persisted) == {**base, "task.index": "0"}


# --- the leader's REST server -----------------------------------------------------------------
KEY = base64.b64encode(b"s" * 32).decode()
LEADER, FOLLOWER = "127.0.0.2/A__B-leader", "127.0.0.3/A__B-follower"


@pytest.fixture
def leader(config: MirrorMakerConfig) -> Iterator[tuple[FlowWorker, list[dict[str, Any]]]]:
    """A leading worker (no group thread, no REST socket) whose control plane records calls."""
    worker = FlowWorker(
        flow=FLOW,
        config=config,
        providers=Providers(config.providers, {}),
        coordinator=Endpoint("coordinator", "http://127.0.0.1:1", "t", "test"),
    )
    worker.member_id = LEADER
    worker.group = {
        "generation": 4,
        "session_key": KEY,
        "leader_id": LEADER,
        "members": [
            {"member_id": LEADER, "worker_id": "127.0.0.2/A__B"},
            {"member_id": FOLLOWER, "worker_id": "127.0.0.3/A__B"},
        ],
        "assignments": [
            {"member_id": LEADER, "connectors": [CHECKPOINT, HEARTBEAT], "tasks": []},
            {"member_id": FOLLOWER, "connectors": [SOURCE], "tasks": []},
        ],
    }
    calls: list[dict[str, Any]] = []

    def group(source: str, target: str, rpc: str, body: dict[str, Any]) -> dict[str, Any]:
        calls.append({"rpc": rpc, **body})
        return {"error_code": 0}

    worker.coordinator.group = group  # type: ignore[method-assign,assignment]
    worker._lead = lambda: None  # type: ignore[method-assign]
    yield worker, calls
    worker.rest.server_close()
    worker.coordinator.close()


def post(worker: FlowWorker, configs: Any, member: str | None = FOLLOWER) -> tuple[int, Any]:
    body = json.dumps(configs).encode()
    headers = signature_headers(KEY, body)
    if member is not None:
        headers[MEMBER_HEADER.lower()] = member  # any case, as clients spell it
    return worker.receive_task_configs(SOURCE, body, headers, None)


def test_the_leader_refuses_a_posted_config_it_would_not_derive(
    config: MirrorMakerConfig, leader: tuple[FlowWorker, list[dict[str, Any]]]
) -> None:
    worker, calls = leader
    hostile = derived(config, {"orders.eu": 2})
    for task in hostile:
        task["source.cluster.bootstrap.servers"] = ATTACKER
        task["target.cluster.bootstrap.servers"] = ATTACKER
    status, answer = post(worker, hostile)
    assert status == 400 and set(answer) == {"error_code", "message"}, answer
    assert answer["error_code"] == 400
    assert "target.cluster.bootstrap.servers differs" in answer["message"]
    assert ATTACKER not in answer["message"]
    assert calls == []  # nothing reached the control plane, nothing was persisted
    assert post(worker, derived(config, {"orders.eu": 2}), member=None)[0] == 400  # unnamed
    assert post(worker, derived(config, {"orders.eu": 2}), member="eve")[0] == 409  # no member
    assert post(worker, derived(config, {"orders.eu": 2}), member=LEADER)[0] == 409  # not its

    good = derived(config, {"orders.eu": 2})
    assert post(worker, good) == (204, None)
    (call,) = calls
    assert call["rpc"] == "task-configs" and call["task_configs"] == good
    assert call["member_id"] == LEADER and call["generation"] == 4
    assert (call["poster_member_id"], call["poster_worker_id"]) == (FOLLOWER, "127.0.0.3/A__B")


def test_a_control_plane_refusal_is_connects_400(
    config: MirrorMakerConfig, leader: tuple[FlowWorker, list[dict[str, Any]]]
) -> None:
    from mirror.node.clients import CallFailed

    worker, _ = leader

    def refuse(*args: Any) -> Any:
        raise CallFailed("task-configs", 400, {"error_message": "Task configs ... differ"})

    worker.coordinator.group = refuse  # type: ignore[method-assign,assignment]
    status, answer = post(worker, derived(config, {"orders.eu": 2}))
    assert (status, answer) == (400, {"error_code": 400, "message": "Task configs ... differ"})


def test_every_worker_runs_tasks_with_the_config_it_derives(
    config: MirrorMakerConfig,
    leader: tuple[FlowWorker, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker, _ = leader
    started: dict[str, dict[str, str]] = {}

    class Task:
        def __init__(self, w: Any, name: str, config: dict[str, str], paused: bool) -> None:
            started[name] = config

        def start(self) -> None: ...

        def stop(self) -> None: ...

    monkeypatch.setitem(herder_module.TASK_RUNNERS, SOURCE, Task)
    persisted = derived(config, {"orders.eu": 2})
    persisted[1]["target.cluster.bootstrap.servers"] = ATTACKER  # a record from before the fix
    persisted[1]["target.cluster.token"] = "${env:CP_MIRROR_TOKEN}"
    worker.group["task_configs"] = {SOURCE: persisted}
    worker.group["assignment"] = {"connectors": [], "tasks": [f"{SOURCE}-1"]}
    worker._reconcile()
    assert started == {f"{SOURCE}-1": derived(config, {"orders.eu": 2})[1]}
