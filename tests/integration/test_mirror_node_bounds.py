"""A mirror node's operator bounds what a stored text makes it read (issue 34, point 1), on real
processes: control plane B holds a text by its super user (the only one who may declare config
providers) that names a listener of an attacker's as cluster A, the node's own token, another
environment secret and a line of /etc/passwd; `run_mirror_node`'s bounds, given in its
environment (CP_MIRROR_ENV_ALLOWLIST, CP_MIRROR_ALLOWED_PATHS), keep every one of them literal.
"""

from __future__ import annotations

import http.server
import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.mirror_stack import running_cluster, start_mirror_node
from devtools.stack import wait_for
from tests.conftest import need_postgres, need_redis

pytestmark = pytest.mark.integration


class Listener:
    """An HTTP listener standing in for an attacker's: every request's headers are recorded and
    answered as an empty control plane would (no topic, no ACL)."""

    def __init__(self) -> None:
        seen: list[dict[str, str]] = []
        self.requests = seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                seen.append(dict(self.headers.items()))
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                body = json.dumps({"results": [], "next": None, "resources": [], "error_code": 0})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    yield made
    made.close()


def test_a_nodes_operator_bounds_what_a_super_users_text_makes_it_read(
    tmp_path: Path, listener: Listener
) -> None:
    """Issue 34, point 1: a text (a super user's, the only one that may declare providers)
    names a listener as cluster A, the node's own token, another environment secret and a line
    of /etc/passwd. The node's operator allows MM2_B_TOKEN and MM2_REST_HOST and paths under
    one directory: the listener sees every reference literal, and the flow's trace says why."""
    need_postgres()
    need_redis()
    with running_cluster("B", tmp_path / "logs") as b:
        b_token = b.principal("mm2-b", "--super-user")
        node_token = b.principal("mirror-node", "--super-user")
        text = f"""clusters = A, B
A.bootstrap.servers = http://127.0.0.1:{listener.port}
A.token = ${{env:CP_MIRROR_TOKEN}}
A.client.id = ${{env:MM2_SECRET}}
B.bootstrap.servers = {b.url}
B.token = ${{env:MM2_B_TOKEN}}
B.client.id = ${{file:/etc/passwd:root}}
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
emit.heartbeats.enabled = false
A->B.enabled = true
A->B.refresh.topics.interval.seconds = 1
mm.rest.host.name = ${{env:MM2_REST_HOST}}
session.timeout.ms = 3000
heartbeat.interval.ms = 500
"""
        assert b.put_mirror_config(text) == 200
        (tmp_path / "mm2").mkdir()
        node = start_mirror_node(
            b,
            name="mirror-bounded",
            host="127.0.0.2",
            token=node_token,
            env={
                "CP_MIRROR_TOKEN": node_token,
                "MM2_SECRET": "s3cret-of-the-node",
                "MM2_B_TOKEN": b_token,
                "CP_MIRROR_ENV_ALLOWLIST": "MM2_(B_TOKEN|REST_HOST)",
                "CP_MIRROR_ALLOWED_PATHS": str(tmp_path / "mm2"),
            },
        )

        def source_trace() -> str | None:
            flow = b.flow("A", "B")
            state = next(c for c in flow["connectors"] if c["name"] == "MirrorSourceConnector")
            if not listener.requests or state["state"] != "RUNNING":
                return None
            return str(state["trace"] or "(no trace: every reference resolved)")

        trace = wait_for(source_trace, 60, "the source connector to list A's topics", 0.3)
        assert listener.requests
        for headers in listener.requests:
            assert headers["Authorization"] == "Bearer ${env:CP_MIRROR_TOKEN}", headers
            assert headers["X-Client-ID"] == "${env:MM2_SECRET}", headers
        seen = json.dumps(listener.requests) + json.dumps(b.flows()) + node.output()
        for secret in (node_token, "s3cret-of-the-node", b_token, "root:x:0:0"):
            assert secret not in seen
        assert "${env:CP_MIRROR_TOKEN} in source.cluster.token" in trace
        assert "not allowed by this node (--env-allowlist)" in trace
        assert "/etc/passwd is outside this node's allowed paths" in trace
        node.kill(signal.SIGTERM)
