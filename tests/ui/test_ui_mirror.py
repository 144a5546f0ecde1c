"""The mirror pages through Django's test client (issue 13, point 7): the flows page with its
picture of clusters and flows and their health, the flow page (nodes, leader, worker ids, REST
URLs, connectors and tasks with their traces, replicated topics and why, lagging topics, the
configuration with references shown as references), pause and resume through the API's path
(audited), refusals, and query counts that do not grow with flows, nodes or topics."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from controlplane.controller.mirror.assignment import source_task_configs
from controlplane.controller.mirror.config import Flow, mirror_config_parse
from mirror.members import local_members
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

TEXT = """clusters = A, B, C
A.bootstrap.servers = http://127.0.0.1:18001
A.token = ${env:MM2_A_TOKEN}
B.bootstrap.servers = http://127.0.0.1:18002
C.bootstrap.servers = http://127.0.0.1:18003
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
emit.heartbeats.enabled = false
A->B.enabled = true
A->B.topics = orders.*
B->C.enabled = true
mm.rest.host.name = ${env:MM2_REST_HOST}
"""


@pytest.fixture(autouse=True)
def _members() -> Any:
    local_members().clear()
    yield
    local_members().clear()


def configure(client: Any, token: str, text: str = TEXT) -> None:
    response = client.put(
        "/api/v1/mirror/config",
        text.encode(),
        content_type="text/plain",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content


def member(
    api: Any, token: str, member_id: str, host: str, flow: str = "A/B", **report: Any
) -> None:
    body = {
        "member_id": member_id,
        "worker_id": f"{host}/{flow.replace('/', '__')}",
        "rest_url": f"http://{host}:8083",
        "session_timeout_ms": 30000,
    }
    assert api.post(f"/api/v1/mirror/groups/{flow}/join", body, token=token)[0] == 200
    beat = {"member_id": member_id, "report": {"worker_id": body["worker_id"], **report}}
    assert api.post(f"/api/v1/mirror/groups/{flow}/heartbeat", beat, token=token)[0] == 200


def lead(
    api: Any,
    token: str,
    leader: str,
    generation: int,
    assignments: list[dict[str, Any]],
    partitions: int = 1,
) -> None:
    # What MirrorSourceConnector derives from TEXT (tasks.max 1): the control plane stores
    # nothing else (issue 34).
    base = mirror_config_parse(TEXT).connector_config(Flow("A", "B"), "MirrorSourceConnector")
    body = {
        "member_id": leader,
        "generation": generation,
        "connector": "MirrorSourceConnector",
        "task_configs": source_task_configs(base, {"orders": partitions}, 1),
    }
    assert (
        api.post("/api/v1/mirror/groups/A/B/task-configs", body, token=token)[1]["error_code"] == 0
    )
    sync = {"member_id": leader, "generation": generation, "assignments": assignments}
    assert api.post("/api/v1/mirror/groups/A/B/sync", sync, token=token)[1]["error_code"] == 0


def test_no_configuration_yet(admin_client: Any) -> None:
    response = admin_client.get("/ui/mirror/")
    assert response.status_code == 200
    assert b'data-testid="mirror-unconfigured"' in response.content


def test_the_flows_page_draws_clusters_and_flows_with_their_health(admin_client, api, tokens):
    configure(admin_client, tokens["admin"])
    member(api, tokens["admin"], "m1", "127.0.0.2")
    member(
        api,
        tokens["admin"],
        "m2",
        "127.0.0.3",
        connectors={"MirrorSourceConnector": {"state": "RUNNING", "trace": None}},
        tasks={"MirrorSourceConnector-0": {"state": "RUNNING", "trace": None}},
        topics=[
            {
                "source_topic": "orders.eu",
                "remote_topic": "A.orders.eu",
                "matched_filter": "orders.*",
            }
        ],
        lagging_topics=["orders.us"],
    )
    response = admin_client.get("/ui/mirror/")
    page = response.content.decode()
    assert response.status_code == 200
    for alias in "ABC":
        assert f'data-alias="{alias}"' in page
    assert 'data-flow="A-&gt;B"' in page and 'data-flow="B-&gt;C"' in page
    assert 'data-flow="A-&gt;B" data-health="lagging"' in page  # nodes run it; a topic lags
    assert 'data-flow="B-&gt;C" data-health="down"' in page  # nobody runs it
    assert 'id="flow-A-B" data-health="lagging"' in page


def test_the_flow_page_shows_nodes_connectors_topics_and_references(admin_client, api, tokens):
    configure(admin_client, tokens["admin"])
    member(api, tokens["admin"], "m1", "127.0.0.2")
    member(api, tokens["admin"], "m2", "127.0.0.3")
    lead(
        api,
        tokens["admin"],
        "m1",
        2,
        [
            {
                "member_id": "m1",
                "connectors": ["MirrorCheckpointConnector", "MirrorHeartbeatConnector"],
                "tasks": [],
            },
            {
                "member_id": "m2",
                "connectors": ["MirrorSourceConnector"],
                "tasks": ["MirrorSourceConnector-0"],
            },
        ],
    )
    trace = (
        "Unresolved config provider references (left literal): "
        "${env:MM2_X} in source.cluster.client.id"
    )
    beat = {
        "member_id": "m2",
        "report": {
            "worker_id": "127.0.0.3/A__B",
            "connectors": {
                "MirrorSourceConnector": {"state": "FAILED", "trace": "cluster A unreachable"}
            },
            "tasks": {"MirrorSourceConnector-0": {"state": "RUNNING", "trace": trace}},
            "topics": [
                {
                    "source_topic": "orders.eu",
                    "remote_topic": "A.orders.eu",
                    "matched_filter": "orders.*",
                }
            ],
            "lagging_topics": [],
        },
    }
    assert api.post("/api/v1/mirror/groups/A/B/heartbeat", beat, token=tokens["admin"])[0] == 200
    response = admin_client.get("/ui/mirror/A/B/")
    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-testid="flow-health">down' in page  # a failed connector
    assert 'data-worker-id="127.0.0.2/A__B"' in page and 'data-worker-id="127.0.0.3/A__B"' in page
    assert 'data-testid="leader">127.0.0.2/A__B' in page and "http://127.0.0.3:8083" in page
    assert "cluster A unreachable" in page and "${env:MM2_X}" in page
    assert 'data-topic="orders.eu"' in page and "A.orders.eu" in page
    # The configuration: references stay references, marked as such.
    assert '<code class="ref" title="config provider reference">${env:MM2_A_TOKEN}</code>' in page
    assert '<code class="ref" title="config provider reference">${env:MM2_REST_HOST}</code>' in page
    assert admin_client.get("/ui/mirror/A/C/").status_code == 404


def test_pause_and_resume_from_the_flow_page_go_through_the_api(admin_client, client, tokens):
    configure(admin_client, tokens["admin"])
    response = admin_client.post("/ui/mirror/A/B/pause/")
    assert response.status_code == 302
    page = admin_client.get("/ui/mirror/A/B/").content.decode()
    assert 'data-testid="flow-paused"' in page and 'data-testid="resume"' in page
    assert admin_client.post("/ui/mirror/A/B/resume/").status_code == 302
    events = AuditEvent.objects.filter(api="AlterMirrorTargetState").order_by("id")
    assert [(e.principal, e.client_id, e.outcome) for e in events] == [
        ("User:admin", "ui", "SUCCESS"),
        ("User:admin", "ui", "SUCCESS"),
    ]
    assert admin_client.post("/ui/mirror/A/B/stop/").status_code == 400  # not an action
    assert admin_client.post("/ui/mirror/A/Z/pause/").status_code == 404
    alice = client.__class__()
    ui_login(alice, "alice", tokens["alice"])
    assert alice.get("/ui/mirror/").status_code == 403  # no DESCRIBE on the cluster
    assert alice.post("/ui/mirror/A/B/pause/").status_code == 403
    assert (
        AuditEvent.objects.filter(api="AlterMirrorTargetState", principal="User:alice").count() == 1
    )


def test_mirror_pages_read_in_constant_queries(admin_client, api, tokens):
    configure(admin_client, tokens["admin"], TEXT.replace("B->C.enabled = true\n", ""))
    member(api, tokens["admin"], "m1", "127.0.0.2")

    def queries(path: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(path).status_code == 200
        return len(captured.captured_queries)

    small = (queries("/ui/mirror/"), queries("/ui/mirror/A/B/"))
    configure(admin_client, tokens["admin"], TEXT + "C->A.enabled = true\nB->A.enabled = true\n")
    for i in range(2, 6):
        member(
            api,
            tokens["admin"],
            f"m{i}",
            f"127.0.0.{i + 1}",
            topics=[
                {"source_topic": f"t{n}", "remote_topic": f"A.t{n}", "matched_filter": ".*"}
                for n in range(50)
            ],
        )
    member(api, tokens["admin"], "c1", "127.0.0.9", flow="B/C")
    assert (queries("/ui/mirror/"), queries("/ui/mirror/A/B/")) == small
