"""The mirror API on the real database (issue 13): the configuration stored as records and
answered unchanged, bad configurations refused whole, the flows' group protocol (join, heartbeat
without metadata writes, sync and task configs fenced by generation, leave, expiry by the
controller's timer), pause and resume, the flows list and its query count, authorization and
the audit trail."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from controlplane.controller.mirror.assignment import source_task_configs
from controlplane.controller.mirror.config import Flow, mirror_config_parse
from controlplane.models import MetadataRecord
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.replay import metadata_verify
from mirror.members import local_members
from mirror.models import MirrorFlowGroup
from mirror.timer import mirror_members_expire

pytestmark = pytest.mark.django_db

CONFIG = "/api/v1/mirror/config"
FLOWS = "/api/v1/mirror/flows"
GROUP = "/api/v1/mirror/groups/A/B"

TEXT = """# two control planes, one flow
clusters = A, B
A.bootstrap.servers = http://127.0.0.1:18001
A.token = ${env:MM2_A_TOKEN}
B.bootstrap.servers = http://127.0.0.1:18002
B.token = ${file:/etc/mm2/secrets.properties:b.token}
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern = MM2_.*
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.file.param.allowed.paths = /etc/mm2
emit.heartbeats.enabled = false
A->B.enabled = true
A->B.topics = orders.*, payments
A->B.emit.heartbeats.enabled = true
mm.rest.host.name = ${env:MM2_REST_HOST}
"""


@pytest.fixture(autouse=True)
def _fresh_members() -> Any:
    local_members().clear()
    yield
    local_members().clear()


def put_config(client: Any, token: str, text: str, content_type: str = "text/plain") -> Any:
    return client.put(
        CONFIG, text.encode(), content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def stored(client: Any, tokens: dict[str, str]) -> None:
    response = put_config(client, tokens["admin"], TEXT)
    assert response.status_code == 200, response.content
    assert response.json()["flows"] == ["A->B"]


def put_json(client: Any, path: str, token: str) -> tuple[int, Any]:
    response = client.put(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, response.json()


def test_configuration_is_stored_as_a_record_and_answered_unchanged(client, tokens):
    stored(client, tokens)
    response = client.get(CONFIG, HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == TEXT  # byte for byte, comments and references too
    (record,) = MetadataRecord.objects.filter(record_type="MirrorMakerConfigRecord")
    assert record.data == {"text": TEXT}
    assert "${env:MM2_A_TOKEN}" in record.data["text"]
    assert int(response["X-Mirror-Config-Offset"]) == record.offset
    # The same text again is a no-op: no record.
    assert put_config(client, tokens["admin"], TEXT).json()["changed"] is False
    assert MetadataRecord.objects.filter(record_type="MirrorMakerConfigRecord").count() == 1
    assert metadata_verify() == []
    event = AuditEvent.objects.filter(api="AlterMirrorConfig").first()
    assert event is not None and event.principal == "User:admin"
    assert "MM2_A_TOKEN" not in json.dumps(event.resources)


BAD = [
    ("clusters = A, B\nA->A.enabled = true", "a flow from A to itself"),
    ("clusters = A, B\nA->C.enabled = true", "unknown cluster alias 'C'"),
    ("clusters = A, B\nA->B.topics = orders[", "invalid regular expression"),
    ("clusters = A, B\nA.token = ${env:X", "malformed config provider reference"),
    (
        "clusters = A, B\nconfig.providers = v\nconfig.providers.v.class = com.acme.Vault",
        "unknown config provider class",
    ),
    ("clusters = A, B\nA.token = s3cr3t-literal", "a secret cannot be stored"),
    ("A->B.enabled = true", "clusters: required"),
    ("clusters = A, B\nA->B.refresh.topics.interval.seconds = soon", "not a whole number"),
    ("clusters = A, B\nmm.rest.protocol = ftp", "not one of http, https"),
    ("clusters = A, B\nlisteners = http://127.0.0.2", "not a listener"),
]


@pytest.mark.parametrize(("text", "why"), BAD)
def test_bad_configurations_are_refused_whole(client, tokens, text, why):
    stored(client, tokens)
    before = MetadataRecord.objects.count()
    response = put_config(client, tokens["admin"], text)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "INVALID_CONFIG" and why in body["error_message"], body
    assert "s3cr3t-literal" not in response.content.decode()
    assert MetadataRecord.objects.count() == before  # nothing half-stored
    assert (
        client.get(CONFIG, HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").content.decode() == TEXT
    )


def test_unreadable_bodies_and_missing_rights_are_refused(client, tokens):
    assert put_config(client, tokens["admin"], TEXT, "application/json").status_code == 400
    response = client.put(
        CONFIG,
        b"\xff\xfe",
        content_type="text/plain",
        HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}",
    )
    assert response.status_code == 400 and response.json()["error"] == "INVALID_REQUEST"
    response = put_config(client, tokens["alice"], TEXT)
    assert response.status_code == 403
    assert response.json()["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert put_config(client, tokens["broker"], TEXT).status_code == 403  # KIP-590
    assert client.get(CONFIG).status_code == 401
    assert client.get(CONFIG, HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").status_code == 404
    assert MetadataRecord.objects.count() == 0


def join(api: Any, token: str, member: str, host: str, **extra: Any) -> dict[str, Any]:
    body = {
        "member_id": member,
        "worker_id": f"{host}/A__B",
        "rest_url": f"http://{host}:8083",
        "session_timeout_ms": 3000,
        **extra,
    }
    status, answer = api.post(f"{GROUP}/join", body, token=token)
    assert status == 200, answer
    return dict(answer)


def derived(counts: dict[str, int]) -> list[dict[str, str]]:
    """What MirrorSourceConnector derives from TEXT for these topics (tasks.max 1)."""
    base = mirror_config_parse(TEXT).connector_config(Flow("A", "B"), "MirrorSourceConnector")
    return source_task_configs(base, counts, 1)


def heartbeat(api: Any, token: str, member: str, **report: Any) -> dict[str, Any]:
    body = {"member_id": member, "report": {"worker_id": f"{member}/A__B", **report}}
    status, answer = api.post(f"{GROUP}/heartbeat", body, token=token)
    assert status == 200, answer
    return dict(answer)


def test_group_protocol_generations_leader_and_fencing(client, api, tokens):
    stored(client, tokens)
    admin = tokens["admin"]
    first = join(api, admin, "m1", "127.0.0.2")
    assert first["generation"] == 1 and first["leader_id"] == "m1"
    assert first["leader_worker_id"] == "127.0.0.2/A__B" and first["session_key"]
    second = join(api, admin, "m2", "127.0.0.3")
    assert second["generation"] == 2 and second["leader_id"] == "m1"  # the leader stays
    assert second["session_key"] != first["session_key"]  # a new key every generation

    # Heartbeats write nothing to the log.
    before = MetadataRecord.objects.count()
    beat = heartbeat(api, admin, "m2")
    assert beat["generation"] == 2 and beat["state"] == "CompletingRebalance"
    assert MetadataRecord.objects.count() == before

    # Only the leader of the current generation writes: a follower, a stale generation.
    configs = {
        "member_id": "m2",
        "generation": 2,
        "connector": "MirrorSourceConnector",
        "task_configs": derived({"orders": 1}),
    }
    status, answer = api.post(f"{GROUP}/task-configs", configs, token=admin)
    assert status == 200 and answer["error"] == "REBALANCE_IN_PROGRESS", answer
    status, answer = api.post(
        f"{GROUP}/task-configs", {**configs, "member_id": "m1", "generation": 1}, token=admin
    )
    assert answer["error"] == "ILLEGAL_GENERATION", answer
    status, answer = api.post(f"{GROUP}/task-configs", {**configs, "member_id": "m1"}, token=admin)
    assert answer["error_code"] == 0, answer
    sync = {
        "member_id": "m1",
        "generation": 2,
        "assignments": [
            {
                "member_id": "m1",
                "connectors": ["MirrorCheckpointConnector", "MirrorSourceConnector"],
                "tasks": [],
            },
            {
                "member_id": "m2",
                "connectors": ["MirrorHeartbeatConnector"],
                "tasks": ["MirrorSourceConnector-0"],
            },
        ],
    }
    status, answer = api.post(f"{GROUP}/sync", sync, token=admin)
    assert answer["error_code"] == 0 and answer["state"] == "Stable", answer
    beat = heartbeat(api, admin, "m2")
    assert beat["assignment"] == {
        "connectors": ["MirrorHeartbeatConnector"],
        "tasks": ["MirrorSourceConnector-0"],
    }
    assert beat["task_configs"]["MirrorSourceConnector"] == derived({"orders": 1})
    bad = {**sync, "assignments": [{"member_id": "m9", "connectors": [], "tasks": ["nope-3"]}]}
    status, answer = api.post(f"{GROUP}/sync", bad, token=admin)
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer

    # The same worker id from another live member is fenced.
    status, answer = api.post(
        f"{GROUP}/join",
        {
            "member_id": "m3",
            "worker_id": "127.0.0.2/A__B",
            "rest_url": "http://127.0.0.2:9999",
            "session_timeout_ms": 3000,
        },
        token=admin,
    )
    assert answer["error"] == "FENCED_INSTANCE_ID", answer

    # The leader leaves: m2 leads generation 3; the old leader's writes are refused.
    status, answer = api.post(f"{GROUP}/leave", {"member_id": "m1"}, token=admin)
    assert answer["error_code"] == 0 and answer["generation"] == 3 and answer["leader_id"] == "m2"
    status, answer = api.post(f"{GROUP}/task-configs", {**configs, "member_id": "m1"}, token=admin)
    assert answer["error"] == "UNKNOWN_MEMBER_ID", answer
    assert heartbeat(api, admin, "m1")["error"] == "UNKNOWN_MEMBER_ID"
    assert metadata_verify() == []


def test_task_configs_are_the_connectors_and_audited_in_the_posters_name(client, api, tokens):
    """Issue 34: a follower's task configs pointing the clusters at its poster's URL, or with a
    token reference of its choosing, are refused (INVALID_CONFIG, 400, never 500), nothing is
    stored; the audit row of every write names the member that posted them."""
    stored(client, tokens)
    admin = tokens["admin"]
    join(api, admin, "m1", "127.0.0.2")
    join(api, admin, "m2", "127.0.0.3")
    plan = [
        {"member_id": "m1", "connectors": ["MirrorCheckpointConnector"], "tasks": []},
        {"member_id": "m2", "connectors": ["MirrorSourceConnector"], "tasks": []},
    ]
    sync = {"member_id": "m1", "generation": 2, "assignments": plan}
    assert api.post(f"{GROUP}/sync", sync, token=admin)[1]["error_code"] == 0
    posted = {
        "member_id": "m1",
        "generation": 2,
        "connector": "MirrorSourceConnector",
        "poster_member_id": "m2",
        "poster_worker_id": "127.0.0.3/A__B",
    }
    before = MetadataRecord.objects.count()
    for change in (
        {"target.cluster.bootstrap.servers": "http://127.0.0.1:27555"},
        {"source.cluster.token": "${env:CP_MIRROR_TOKEN}"},
        {"target.cluster.client.id": "${env:HOME}"},
    ):
        hostile = derived({"orders": 1})
        hostile[0].update(change)
        status, answer = api.post(
            f"{GROUP}/task-configs", {**posted, "task_configs": hostile}, token=admin
        )
        assert status == 400 and answer["error"] == "INVALID_CONFIG", answer
        (key,) = change
        assert key in answer["error_message"] and change[key] not in answer["error_message"]
    assert MetadataRecord.objects.count() == before
    refused = AuditEvent.objects.filter(api="PutMirrorTaskConfigs", outcome="FAILED")
    assert refused.count() == 3
    for event in refused:
        assert {"resource_type": "MIRROR_WORKER", "resource_name": "127.0.0.3/A__B"} in [
            {k: r[k] for k in ("resource_type", "resource_name")} for r in event.resources
        ]

    status, answer = api.post(
        f"{GROUP}/task-configs", {**posted, "task_configs": derived({"orders": 2})}, token=admin
    )
    assert status == 200 and answer["error_code"] == 0, answer
    written = AuditEvent.objects.get(api="PutMirrorTaskConfigs", outcome="SUCCESS")
    assert written.principal == "User:admin" and written.first_offset is not None
    assert [(r["resource_type"], r["resource_name"]) for r in written.resources] == [
        ("GROUP", "mm2-A->B"),
        ("MIRROR_WORKER", "127.0.0.3/A__B"),  # the poster, not only the leader that persisted
    ]


def test_expired_members_leave_by_the_controllers_timer(client, api, tokens, monkeypatch):
    stored(client, tokens)
    join(api, tokens["admin"], "m1", "127.0.0.2")
    join(api, tokens["admin"], "m2", "127.0.0.3")
    runtime = get_runtime()
    runtime.ensure_active()
    mirror_members_expire(runtime)  # nobody lapsed yet: nothing
    assert MirrorFlowGroup.objects.get().generation == 2
    from controlplane.runtime import controller
    from mirror import timer

    now = timer.now_ms()
    later = now + 3500  # past m1's session of 3000 ms: the timer and the controller see it
    monkeypatch.setattr(timer, "now_ms", lambda: later)
    monkeypatch.setattr(controller, "now_ms", lambda: later)
    heartbeat(api, tokens["admin"], "m2")  # m2 is alive later on; m1 is silent
    local_members().touch("A->B", "m2", now_ms=now + 3400, report={})
    mirror_members_expire(runtime)
    group = MirrorFlowGroup.objects.get()
    assert group.generation == 3 and [m["member_id"] for m in group.members] == ["m2"]
    assert group.leader == "m2"
    assert metadata_verify() == []


def test_pause_resume_and_the_flows_list(client, api, tokens):
    stored(client, tokens)
    join(api, tokens["admin"], "m1", "127.0.0.2")
    status, answer = put_json(client, f"{FLOWS}/A/B/pause", tokens["admin"])
    assert status == 200 and answer["state"] == "PAUSED", answer
    status, answer = put_json(client, f"{FLOWS}/A/C/pause", tokens["admin"])
    assert status == 404
    status, answer = put_json(client, f"{FLOWS}/A/B/pause", tokens["alice"])
    assert status == 403
    status, listed = api.get(FLOWS, token=tokens["admin"])
    assert status == 200 and listed["count"] == 1, listed
    (flow,) = listed["results"]
    assert flow["source"] == "A" and flow["target"] == "B" and flow["paused"] is True
    assert flow["nodes"] == [
        {
            "worker_id": "127.0.0.2/A__B",
            "rest_url": "http://127.0.0.2:8083",
            "leader": True,
            "last_heartbeat_ms": flow["nodes"][0]["last_heartbeat_ms"],
        }
    ]
    assert {c["name"] for c in flow["connectors"]} == {
        "MirrorSourceConnector",
        "MirrorCheckpointConnector",
        "MirrorHeartbeatConnector",
    }
    status, answer = put_json(client, f"{FLOWS}/A/B/resume", tokens["admin"])
    assert status == 200
    assert api.get(FLOWS, token=tokens["admin"])[1]["results"][0]["paused"] is False
    outcomes = AuditEvent.objects.filter(api="AlterMirrorTargetState").order_by("time_ms", "id")
    assert [(e.principal, e.outcome) for e in outcomes] == [
        ("User:admin", "SUCCESS"),
        ("User:admin", "FAILED"),  # the unknown flow, 404
        ("User:alice", "DENIED"),
        ("User:admin", "SUCCESS"),
    ]


def test_the_flows_list_costs_the_same_queries_whatever_its_size(client, api, tokens):
    stored(client, tokens)
    join(api, tokens["admin"], "m1", "127.0.0.2")
    with CaptureQueriesContext(connection) as small:
        assert api.get(FLOWS, token=tokens["admin"])[0] == 200
    many = (
        TEXT
        + "".join(f"A->B.x{i} = y\n" for i in range(3))
        + "clusters = A, B, C, D\n"
        + "".join(f"{c}.bootstrap.servers = http://127.0.0.1:1900{i}\n" for i, c in enumerate("CD"))
        + "C->D.enabled = true\nD->C.enabled = true\n"
    )
    assert put_config(client, tokens["admin"], many).status_code == 200
    join(api, tokens["admin"], "m2", "127.0.0.3")
    with CaptureQueriesContext(connection) as large:
        status, listed = api.get(FLOWS, token=tokens["admin"])
    assert status == 200 and listed["count"] > 1
    assert len(large) == len(small), [q["sql"] for q in large]


HOSTILE = [
    [],
    "text",
    7,
    None,
    {"unexpected": {"deeply": [1, {"x": None}]}},
    {"a" * 300: 1},
    {"member_id": 5},
    {"member_id": "m", "report": "not an object"},
    {"member_id": "m", "generation": "1", "assignments": "x"},
    {"member_id": "m", "generation": 1, "connector": "c", "task_configs": [{"k": 1}]},
]


@pytest.mark.parametrize("rpc", ["join", "sync", "task-configs", "leave", "heartbeat"])
def test_hostile_group_bodies_get_kafkas_error_never_a_500(client, api, tokens, rpc):
    stored(client, tokens)
    before = MetadataRecord.objects.count()
    for body in HOSTILE:
        status, answer = api.post(f"{GROUP}/{rpc}", body, token=tokens["admin"])
        assert status == 400, (body, status, answer)
        assert answer["error"] == "INVALID_REQUEST" and answer["error_message"], answer
    status, answer = api.post(f"{GROUP}/{rpc}", "{", token=tokens["admin"], raw=True)
    assert status == 400 and answer["error"] == "INVALID_REQUEST"
    assert MetadataRecord.objects.count() == before


def test_unknown_flows_rpcs_and_group_authorization(client, api, tokens):
    stored(client, tokens)
    body = {
        "member_id": "m1",
        "worker_id": "h/A__C",
        "rest_url": "http://h:1",
        "session_timeout_ms": 3000,
    }
    status, answer = api.post("/api/v1/mirror/groups/A/C/join", body, token=tokens["admin"])
    assert status == 404 and answer["error"] == "INVALID_REQUEST", answer
    status, answer = api.post(f"{GROUP}/rebalance", {}, token=tokens["admin"])
    assert status == 404

    # A mirror node's principal: CLUSTER_ACTION on CLUSTER, as brokers' internal RPCs. READ on
    # the mm2- groups (Kafka's consumer permission) is not enough (issue 34: it handed a
    # consumer the flow's session key and the leader's URL).
    def grant(resource_type: str, name: str, pattern: str, operation: str) -> None:
        acl = {
            "resource_type": resource_type,
            "resource_name": name,
            "pattern_type": pattern,
            "principal": "User:alice",
            "host": "*",
            "operation": operation,
            "permission_type": "ALLOW",
        }
        status, answer = api.post(
            "/api/v1/create-acls", {"creations": [acl]}, token=tokens["admin"]
        )
        assert status == 200 and answer["results"][0]["error_code"] == 0, answer

    beat = {"member_id": "m1", "report": {"worker_id": "h/A__B"}}
    for _ in ("no ACL", "READ on the mm2- groups"):
        status, answer = api.post(
            f"{GROUP}/join", {**body, "worker_id": "h/A__B"}, token=tokens["alice"]
        )
        assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
        assert api.post(f"{GROUP}/heartbeat", beat, token=tokens["alice"])[0] == 403
        grant("GROUP", "mm2-", "PREFIXED", "READ")
    grant("CLUSTER", "kafka-cluster", "LITERAL", "CLUSTER_ACTION")
    status, answer = api.post(
        f"{GROUP}/join", {**body, "worker_id": "h/A__B"}, token=tokens["alice"]
    )
    assert status == 200 and answer["error_code"] == 0, answer
    assert api.post(f"{GROUP}/heartbeat", beat, token=tokens["alice"])[1]["generation"] == 1
    assert api.post(f"{GROUP}/join", body, token=tokens["broker"])[0] == 403  # KIP-590
    denied = AuditEvent.objects.filter(api="JoinMirrorGroup", outcome="DENIED")
    assert {e.principal for e in denied} == {"User:alice", "User:broker-a"}
    joined = AuditEvent.objects.get(api="JoinMirrorGroup", outcome="SUCCESS")
    assert json.loads(json.dumps(joined.resources))[0]["resource_name"] == "mm2-A->B"


def test_only_a_super_user_declares_config_providers(client, api, tokens):
    """Issue 34: ALTER on CLUSTER made mirror nodes read their host (env, files) and send it
    anywhere. Declaring providers (what a node reads) is the operator's: a super user's; anyone
    else is refused naming the keys, and a text without declarations keeps references literal."""
    grant = {
        "resource_type": "CLUSTER",
        "resource_name": "kafka-cluster",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "ALTER",
        "permission_type": "ALLOW",
    }
    status, answer = api.post("/api/v1/create-acls", {"creations": [grant]}, token=tokens["admin"])
    assert status == 200 and answer["results"][0]["error_code"] == 0
    hostile = (
        "clusters = A, B\n"
        "A.bootstrap.servers = http://127.0.0.1:27555\n"
        "B.bootstrap.servers = http://b.example:8000\n"
        "config.providers = env\n"
        "config.providers.env.class = "
        "org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
        "A.token = ${env:CP_MIRROR_TOKEN}\n"
    )
    refused = put_config(client, tokens["alice"], hostile)
    answer = refused.json()
    assert refused.status_code == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert "config.providers" in answer["error_message"]
    kept = client.get(CONFIG, HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").content.decode()
    assert "CP_MIRROR_TOKEN" not in kept
    # Without declarations ALTER on CLUSTER may store it: the reference stays literal.
    plain = "\n".join(line for line in hostile.splitlines() if "config.providers" not in line)
    accepted = put_config(client, tokens["alice"], plain)
    assert accepted.status_code == 200, accepted.content
    # The operator (a super user) may declare them.
    declared = put_config(client, tokens["admin"], hostile)
    assert declared.status_code == 200, declared.content
