"""KIP-710's scenario on real processes (issue 13, "Show it"): two control planes (A, the source,
and B, the target, which holds the MirrorMaker configuration), each with its own database,
controller, web process and simulated brokers, and three `run_mirror_node` processes on
127.0.0.2, 127.0.0.3 and 127.0.0.4, each resolving the configuration's references against its own
environment.

The leader does not run MirrorSourceConnector; a new source topic that matches the filter is found
by the follower running it, whose new task configs reach the leader through the flow's REST
server (signed), and the remote topic appears on B with no restart. Then the leader is killed: a
new leader is elected and new topics still flow.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.mirror_stack import (
    Cluster,
    MirrorNodeProcess,
    mirror_config_text,
    running_cluster,
    start_mirror_node,
    wait_for_flow,
)
from tests.conftest import need_postgres, need_redis

pytestmark = pytest.mark.integration

SECRET_KEY = "dev-only-insecure-key-change-me"  # the stacks' (CP_SECRET_KEY is not set there)
HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
# A new source topic crosses five processes before its remote topic shows on B (A's web, the
# node running MirrorSourceConnector, the leader, B's controller, the node running the task),
# each retrying on its own backoff: on two cores under a full CI run, 30 s was once not enough.
FLOWS_WITHIN_S = 60


def mirror_config(a: Cluster, b: Cluster, secrets: Path, topics: str) -> str:
    return mirror_config_text(a, b, secrets, topics=topics)


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[tuple[Cluster, Cluster]]:
    need_postgres()
    need_redis()
    with running_cluster("A", tmp_path / "logs") as a, running_cluster("B", tmp_path / "logs") as b:
        yield a, b


def get(url: str, token: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, json.loads(body) if body else None


def send(url: str, method: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method)
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


def connector(flow: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in flow["connectors"] if c["name"] == name)


def stable(b: Cluster, members: int) -> dict[str, Any] | None:
    flow = b.flow("A", "B")
    running = all(c["state"] == "RUNNING" for c in flow["connectors"])
    if flow["group_state"] == "Stable" and len(flow["nodes"]) == members and running:
        return flow
    return None


def acl(principal: str, operation: str, permission: str, topic: str) -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": permission,
    }


def topic_acls(cluster: Cluster, topic: str) -> set[tuple[str, str, str]]:
    body = {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": None,
        "host": None,
        "operation": "ANY",
        "permission_type": "ANY",
    }
    answer = cluster.admin("/api/v1/describe-acls", body)
    return {
        (e["principal"], e["operation"], e["permission_type"])
        for r in answer["resources"]
        for e in r["acls"]
    }


def dynamic_configs(cluster: Cluster, topic: str) -> dict[str, str]:
    body = {"resources": [{"resource_type": "TOPIC", "resource_name": topic}]}
    (result,) = cluster.admin("/api/v1/describe-configs", body)["results"]
    return {
        c["name"]: c["value"]
        for c in result["configs"]
        if c["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    }


def audit(cluster: Cluster, **filters: str) -> list[dict[str, Any]]:
    query = "&".join(f"{k}={v}" for k, v in filters.items())
    status, answer = cluster.http.get(
        f"/api/v1/audit-events?page_size=500&{query}", cluster.token("admin")
    )
    assert status == 200, answer
    return list(answer["results"])


def test_follower_reaches_the_leader_and_new_topics_flow_after_the_leader_dies(
    clusters: tuple[Cluster, Cluster], tmp_path: Path
) -> None:
    a, b = clusters
    a_token = a.principal("mm2-a", "--super-user")  # reads A
    b_token = b.principal("mm2-b", "--super-user")  # the flow's principal on B
    node_token = b.principal("mirror-node", "--super-user")  # the nodes' group membership
    secrets = tmp_path / "mm2" / "secrets.properties"
    secrets.parent.mkdir()
    secrets.write_text(f"b.token = {b_token}\n")
    text = mirror_config(a, b, secrets, r".*orders.*, payments")
    assert b.put_mirror_config(text) == 200

    env = {"MM2_A_TOKEN": a_token}
    nodes: list[MirrorNodeProcess] = []
    # The first node joins alone and leads; the other two follow.
    for index, host in enumerate(HOSTS):
        node_env = {**env, "MM2_NODE_NAME": f"node-{host}"}
        if host != "127.0.0.4":  # the fourth address lacks one variable: it stays literal there
            node_env["MM2_SOURCE_CLIENT_ID"] = f"reader-{host}"
        nodes.append(
            start_mirror_node(
                b,
                name=f"mirror-{index}",
                host=host,
                token=node_token,
                clusters=("B",),
                env=node_env,
            )
        )
        if index == 0:
            wait_for_flow(lambda: stable(b, 1), 60, "the first node to lead alone", 0.3)
    flow = wait_for_flow(lambda: stable(b, 3), 60, "three members, Stable", 0.3)

    # Worker ids follow KIP-710's pattern, each node's own REST host (its own env resolved).
    workers = {n["worker_id"] for n in flow["nodes"]}
    assert workers == {f"{h}/A__B" for h in HOSTS}
    for node in flow["nodes"]:
        assert re.fullmatch(r"http://127\.0\.0\.[234]:\d+", node["rest_url"]), node
        assert node["rest_url"].startswith(f"http://{node['worker_id'].split('/')[0]}:")
    leader = flow["leader"]
    assert leader == "127.0.0.2/A__B"
    source = connector(flow, "MirrorSourceConnector")
    assert source["worker_id"] != leader, "the leader must not run MirrorSourceConnector"
    leader_url = next(n["rest_url"] for n in flow["nodes"] if n["leader"])
    source_node = next(n for n in nodes if source["worker_id"].startswith(n.host + "/"))

    # --- a new matching topic on A reaches B through the follower -> leader hop ------------
    for entry in (
        acl("User:alice", "READ", "ALLOW", "orders.eu"),
        acl("User:bob", "WRITE", "ALLOW", "orders.eu"),
        acl("User:carol", "ALL", "ALLOW", "orders.eu"),
        acl("User:mallory", "READ", "DENY", "orders.eu"),
    ):
        a.admin("/api/v1/create-acls", {"creations": [entry]})
    a.create_topic("orders.eu", 3, **{"retention.ms": "3600000", "min.insync.replicas": "1"})
    wait_for_flow(
        lambda: b.topics().get("A.orders.eu") == 3, FLOWS_WITHIN_S, "A.orders.eu on B", 0.2
    )
    assert "sent to the leader at " + leader_url in source_node.output()
    assert "persisted task configs of MirrorSourceConnector" in nodes[0].output()
    hops = audit(b, api="PutMirrorTaskConfigs", outcome="SUCCESS")
    assert hops and {e["client_id"] for e in hops} == {leader}  # only the leader wrote them
    # ... each in the name of the member whose connector computed them (issue 34): the
    # follower running MirrorSourceConnector for its posts, not only the leader.
    posters = {
        r["resource_name"]
        for e in hops
        for r in e["resources"]
        if r["resource_type"] == "MIRROR_WORKER"
    }
    assert source["worker_id"] in posters and leader in posters, posters

    # Config and ACL sync follow MirrorSourceConnector's rules.
    wait_for_flow(
        lambda: dynamic_configs(b, "A.orders.eu") == {"retention.ms": "3600000"},
        30,
        "retention.ms synced, min.insync.replicas left out",
        0.3,
    )
    wait_for_flow(
        lambda: (
            topic_acls(b, "A.orders.eu")
            == {
                ("User:alice", "READ", "ALLOW"),
                ("User:carol", "READ", "ALLOW"),  # ALLOW ALL becomes READ
                ("User:mallory", "READ", "DENY"),  # DENY kept; ALLOW WRITE not synced
            }
        ),
        30,
        "topic ACLs synced",
        0.3,
    )
    # Every change on B went through its admin API as the flow's principal.
    created = audit(b, api="CreateTopics", resource="A.orders.eu")
    assert created and {e["principal"] for e in created} == {"User:mm2-b"}
    task_node = connector(b.flow("A", "B"), "MirrorSourceConnector")["tasks"][0]["worker_id"]
    assert {e["client_id"] for e in created} == {f"node-{task_node.split('/')[0]}"}
    assert {e["principal"] for e in audit(b, api="CreateAcls")} == {"User:mm2-b"}
    # A later change of a source topic's configs follows; excluded keys still stay behind.
    change = [
        {"name": "retention.ms", "config_operation": "SET", "value": "7200000"},
        {"name": "min.insync.replicas", "config_operation": "SET", "value": "2"},
    ]
    body = {
        "resources": [{"resource_type": "TOPIC", "resource_name": "orders.eu", "configs": change}]
    }
    a.admin("/api/v1/incremental-alter-configs", body)
    wait_for_flow(
        lambda: dynamic_configs(b, "A.orders.eu") == {"retention.ms": "7200000"},
        30,
        "the changed retention.ms synced",
        0.3,
    )
    assert {e["principal"] for e in audit(b, api="IncrementalAlterConfigs")} == {"User:mm2-b"}

    # No cycle: a topic that came from B is never replicated back; others are.
    a.create_topic("B.orders.us")
    a.create_topic("C.orders.asia")
    wait_for_flow(
        lambda: "A.C.orders.asia" in b.topics(), FLOWS_WITHIN_S, "A.C.orders.asia on B", 0.2
    )
    assert "A.B.orders.us" not in b.topics()
    topics = {t["source_topic"]: t for t in b.flow("A", "B")["topics"]}
    assert "B.orders.us" not in topics
    assert topics["orders.eu"] == {
        "source_topic": "orders.eu",
        "remote_topic": "A.orders.eu",
        "matched_filter": ".*orders.*",
    }

    # The source grows: so does the remote topic.
    a.admin("/api/v1/create-partitions", {"topics": [{"name": "orders.eu", "count": 5}]})
    wait_for_flow(
        lambda: b.topics().get("A.orders.eu") == 5, FLOWS_WITHIN_S, "A.orders.eu grown to 5", 0.2
    )

    # --- references stay references; each node resolves its own -----------------------------
    stored = (
        urllib.request.urlopen(
            urllib.request.Request(
                b.url + "/api/v1/mirror/config",
                headers={"Authorization": f"Bearer {b.token('admin')}"},
            )
        )
        .read()
        .decode()
    )
    assert stored == text
    status, config = get(leader_url + "/connectors/MirrorSourceConnector/config")
    assert status == 200 and config["source.cluster.token"] == "${env:MM2_A_TOKEN}"
    assert config["target.cluster.token"] == f"${{file:{secrets}:b.token}}"
    status, tasks = get(leader_url + "/connectors/MirrorSourceConnector/tasks")
    assert status == 200 and tasks[0]["config"]["source.cluster.token"] == "${env:MM2_A_TOKEN}"
    everything = json.dumps(audit(b)) + json.dumps(b.flows())
    assert a_token not in everything and b_token not in everything
    records = b.stack.sql("SELECT data::text FROM cp_metadata_record")
    assert not any(a_token in r[0] or b_token in r[0] for r in records)
    # The node at .4 has no MM2_SOURCE_CLIENT_ID: its reference stays literal, and says so,
    # without saying what is missing on the node (issue 34).
    flow = b.flow("A", "B")
    traces = [c["trace"] for c in flow["connectors"] if c["worker_id"] == "127.0.0.4/A__B"]
    traces += [
        t["trace"]
        for c in flow["connectors"]
        for t in c["tasks"]
        if t["worker_id"] == "127.0.0.4/A__B"
    ]
    assert any(
        t and "${env:MM2_SOURCE_CLIENT_ID}" in t and "unresolvable on this node" in t
        for t in traces
    ), traces

    # --- the REST server: Connect's shapes; internal requests must be signed ---------------
    status, info = get(leader_url + "/")
    assert status == 200 and set(info) == {"version", "commit", "kafka_cluster_id"}
    assert info["kafka_cluster_id"] == b.stack.sql("SELECT cluster_id FROM cp_cluster")[0][0]
    status, names = get(leader_url + "/connectors")
    assert sorted(names) == [
        "MirrorCheckpointConnector",
        "MirrorHeartbeatConnector",
        "MirrorSourceConnector",
    ]
    status, state = get(leader_url + "/connectors/MirrorSourceConnector/status")
    assert state["name"] == "MirrorSourceConnector" and state["type"] == "source"
    assert state["connector"] == {"state": "RUNNING", "worker_id": source["worker_id"]} or (
        state["connector"]["state"] == "RUNNING" and "trace" in state["connector"]
    )
    assert get(leader_url + "/connectors/Nope/status")[0] == 404
    body = json.dumps([{"task.assigned.partitions": "orders.eu-0"}]).encode()
    tasks_url = leader_url + "/connectors/MirrorSourceConnector/tasks"
    status, answer = send(tasks_url, "POST", body, {"Content-Type": "application/json"})
    assert status == 403 and answer["error_code"] == 403, answer  # unsigned
    forged = {
        "X-Connect-Authorization": base64.b64encode(b"x" * 32).decode(),
        "X-Connect-Request-Signature-Algorithm": "HmacSHA256",
    }
    assert send(tasks_url, "POST", body, forged)[0] == 403  # wrongly signed
    generation = b.flow("A", "B")["generation"]
    key = hmac.new(
        SECRET_KEY.encode(), f"mirror-session-key/A->B/{generation}".encode(), hashlib.sha256
    ).digest()
    signed = {
        "X-Connect-Authorization": base64.b64encode(
            hmac.new(key, body, hashlib.sha256).digest()
        ).decode(),
        "X-Connect-Request-Signature-Algorithm": "HmacSHA256",
    }
    status, answer = send(leader_url + "/connectors/NoSuchConnector/tasks", "POST", body, signed)
    assert status == 404 and answer == {
        "error_code": 404,
        "message": "Connector NoSuchConnector not found",
    }
    # Signed with the flow's key and in the name of the member running the source connector,
    # task configs pointing the clusters elsewhere are still refused (issue 34): the leader
    # keeps what the connector derives from the stored text.
    status, before = get(leader_url + "/connectors/MirrorSourceConnector/tasks")
    hostile = [dict(t["config"]) for t in before]
    for task in hostile:
        task["target.cluster.bootstrap.servers"] = "http://127.0.0.1:27555"
        task["source.cluster.token"] = "${env:CP_MIRROR_TOKEN}"
    hostile_body = json.dumps(hostile).encode()
    as_member = {
        "X-Connect-Authorization": base64.b64encode(
            hmac.new(key, hostile_body, hashlib.sha256).digest()
        ).decode(),
        "X-Connect-Request-Signature-Algorithm": "HmacSHA256",
        "X-Mirror-Member-Id": member_id(b, source["worker_id"]),
        "Content-Type": "application/json",
    }
    status, answer = send(tasks_url, "POST", hostile_body, as_member)
    assert status == 400 and set(answer) == {"error_code", "message"}, answer
    assert "target.cluster.bootstrap.servers differs" in answer["message"]
    assert "27555" not in answer["message"]
    assert get(leader_url + "/connectors/MirrorSourceConnector/tasks")[1] == before
    # Pausing through a REST server needs the caller's own token (audited as the caller).
    checkpoint = leader_url + "/connectors/MirrorCheckpointConnector"
    assert send(checkpoint + "/pause", "PUT", b"", {})[0] == 401
    admin = {"Authorization": f"Bearer {b.token('admin')}"}
    assert send(checkpoint + "/pause", "PUT", b"", admin)[0] == 202
    wait_for_flow(
        lambda: connector(b.flow("A", "B"), "MirrorCheckpointConnector")["state"] == "PAUSED",
        30,
        "the checkpoint connector paused through a REST server",
        0.3,
    )
    assert send(checkpoint + "/resume", "PUT", b"", admin)[0] == 202
    paused_by = audit(b, api="AlterMirrorTargetState")
    assert [e["principal"] for e in paused_by] == ["User:admin", "User:admin"]

    # --- live filter change, pause and resume -----------------------------------------------
    b.put_mirror_config(mirror_config(a, b, secrets, r".*orders.*, payments, invoices"))
    a.create_topic("invoices")
    wait_for_flow(
        lambda: "A.invoices" in b.topics(),
        FLOWS_WITHIN_S,
        "A.invoices after the filter changed",
        0.2,
    )
    status, _ = send(
        b.url + "/api/v1/mirror/flows/A/B/pause",
        "PUT",
        b"",
        {"Authorization": f"Bearer {b.token('admin')}"},
    )
    assert status == 200
    wait_for_flow(
        lambda: all(c["state"] == "PAUSED" for c in b.flow("A", "B")["connectors"]),
        30,
        "paused",
        0.3,
    )
    a.create_topic("orders.while-paused")
    wait_for_flow(lambda: b.flow("A", "B")["paused"], 5, "the flow to show paused", 0.2)
    import time

    time.sleep(3)  # three refresh intervals: nothing flows while paused
    assert "A.orders.while-paused" not in b.topics()
    send(
        b.url + "/api/v1/mirror/flows/A/B/resume",
        "PUT",
        b"",
        {"Authorization": f"Bearer {b.token('admin')}"},
    )
    wait_for_flow(
        lambda: "A.orders.while-paused" in b.topics(),
        FLOWS_WITHIN_S,
        "the paused topic after resume",
        0.2,
    )

    # --- kill the leader: a new one is elected and new topics still flow --------------------
    nodes[0].kill(signal.SIGKILL)
    after = wait_for_flow(lambda: stable(b, 2), 60, "a new generation without the dead leader", 0.3)
    assert after["leader"] in {"127.0.0.3/A__B", "127.0.0.4/A__B"}
    assert after["generation"] > generation
    a.create_topic("orders.after-failover", 2)
    wait_for_flow(
        lambda: b.topics().get("A.orders.after-failover") == 2,
        FLOWS_WITHIN_S,
        "a topic after failover",
        0.2,
    )
    flow = b.flow("A", "B")
    assert flow["lagging_topics"] == [] or wait_for_flow(
        lambda: b.flow("A", "B")["lagging_topics"] == [], 10, "no lagging topics", 0.3
    )
    assert flow["heartbeat_age_ms"] is not None and flow["heartbeat_age_ms"] < 10_000
    assert "heartbeats" in b.topics()
    for node in nodes[1:]:
        node.kill(signal.SIGTERM)
    assert b.stack.manage("verify_metadata").returncode == 0


def restart_web(cluster: Cluster) -> None:
    """Start the cluster's web process again on the same two ports (its URL stays the same)."""
    from devtools.stack import BIN

    port = cluster.http.base.rsplit(":", 1)[1]
    internal = cluster.http.internal.rsplit(":", 1)[1]
    cluster.stack.spawn(
        "web-again",
        [
            str(BIN / "gunicorn"),
            "controlplane.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--bind",
            f"127.0.0.1:{internal}",
            "--workers",
            "2",
            "--threads",
            "8",
            "--worker-class",
            "gthread",
            "--no-control-socket",
            "--config",
            "python:controlplane.gunicorn_conf",
        ],
        {"CP_INTERNAL_PORT": internal},
    )
    wait_for_flow(
        lambda: cluster.http.call("GET", "/api/v1/whoami")[0] == 401, 30, "web again", 0.2
    )


def test_a_source_that_is_down_shows_retries_and_recovers_and_a_paused_leader_is_replaced(
    clusters: tuple[Cluster, Cluster], tmp_path: Path
) -> None:
    a, b = clusters
    a_token = a.principal("mm2-a", "--super-user")
    b_token = b.principal("mm2-b", "--super-user")
    secrets = tmp_path / "mm2" / "secrets.properties"
    secrets.parent.mkdir()
    secrets.write_text(f"b.token = {b_token}\n")
    assert b.put_mirror_config(mirror_config(a, b, secrets, r"orders.*")) == 200
    env = {"MM2_A_TOKEN": a_token, "MM2_SOURCE_CLIENT_ID": "reader", "MM2_NODE_NAME": "n"}
    first = start_mirror_node(b, name="mirror-0", host=HOSTS[0], token=b.token("admin"), env=env)
    wait_for_flow(lambda: stable(b, 1), 60, "the first node alone", 0.3)
    second = start_mirror_node(b, name="mirror-1", host=HOSTS[1], token=b.token("admin"), env=env)
    flow = wait_for_flow(lambda: stable(b, 2), 60, "two members", 0.3)
    assert flow["leader"] == f"{HOSTS[0]}/A__B"

    # --- the source control plane goes down: the flow shows it and retries with backoff -----
    a.stack.kill("web", signal.SIGKILL)

    def source_failing() -> str | None:
        state = connector(b.flow("A", "B"), "MirrorSourceConnector")
        trace = state["trace"] or ""
        return trace if state["state"] == "FAILED" and "cluster A" in trace else None

    trace = wait_for_flow(source_failing, 30, "MirrorSourceConnector FAILED while A is down", 0.3)
    assert "retrying in" in trace and a_token not in trace
    restart_web(a)
    a.create_topic("orders.back")
    wait_for_flow(lambda: "A.orders.back" in b.topics(), 60, "A.orders.back after A came back", 0.3)
    wait_for_flow(lambda: stable(b, 2), 30, "every connector RUNNING again", 0.3)

    # --- the leader stops (paused past its session): a new leader; the old one is fenced ------
    before = b.flow("A", "B")["generation"]
    first.kill(signal.SIGSTOP)
    after = wait_for_flow(
        lambda: (
            (f := b.flow("A", "B"))["generation"] > before
            and f["leader"] == f"{HOSTS[1]}/A__B"
            and f
        ),
        30,
        "the follower to lead once the paused leader's session lapsed",
        0.3,
    )
    assert [n["worker_id"] for n in after["nodes"]] == [f"{HOSTS[1]}/A__B"]
    a.create_topic("orders.during-pause")
    wait_for_flow(  # 60 s: under a full CI run on 2 cores 30 s was once not enough (issue 25's CI)
        lambda: "A.orders.during-pause" in b.topics(),
        60,
        "a topic while the old leader sleeps",
        0.3,
    )
    first.kill(signal.SIGCONT)
    back = wait_for_flow(lambda: stable(b, 2), 60, "the old leader back, as a follower", 0.3)
    assert back["leader"] == f"{HOSTS[1]}/A__B" and back["generation"] > after["generation"]
    assert "no longer a member" in first.output()
    writes = audit(b, api="SyncMirrorGroup") + audit(b, api="PutMirrorTaskConfigs")
    late = [
        e
        for e in writes
        if e["client_id"] == f"{HOSTS[0]}/A__B"
        and e["outcome"] == "SUCCESS"
        and e["first_offset"] is not None
        and e["first_offset"] > after_offset(b, after)
    ]
    assert late == [], late  # nothing the stale leader wrote after it lost its place
    second.kill(signal.SIGTERM)
    first.kill(signal.SIGTERM)


def member_id(cluster: Cluster, worker_id: str) -> str:
    """The member id of `worker_id` in the flow's latest generation (from the metadata log)."""
    rows = cluster.stack.sql(
        "SELECT data::text FROM cp_metadata_record WHERE record_type = 'MirrorGroupRecord'"
        ' ORDER BY "offset" DESC LIMIT 1'
    )
    members = json.loads(rows[0][0])["members"]
    return str(next(m["member_id"] for m in members if m["worker_id"] == worker_id))


def after_offset(cluster: Cluster, flow: dict[str, Any]) -> int:
    """The log offset of the group record that made `flow`'s generation."""
    rows = cluster.stack.sql(
        "SELECT max(\"offset\") FROM cp_metadata_record WHERE record_type = 'MirrorGroupRecord'"
        " AND (data->>'generation')::int = %s",
        flow["generation"],
    )
    return int(rows[0][0])
