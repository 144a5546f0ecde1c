"""A mirror node's own parts, in process (issue 13, points 2, 3 and 5): config providers as
Kafka's (allowlists, per-node resolution, unresolved references left literal with a reason),
Connect's request signature, and a flow's REST server over TLS (https from `listeners.https.`
settings given as references), with its Connect shapes, signed internal requests and 404s."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.controller.mirror.config import Flow, mirror_config_parse
from mirror.node.clients import Endpoint
from mirror.node.herder import FlowWorker
from mirror.node.providers import Providers
from mirror.node.signature import (
    ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    signature_headers,
    signature_problem,
)

PROVIDERS = """clusters = A, B
emit.heartbeats.enabled = false
config.providers = env, file, dir
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern = MM2_.*
config.providers.file.class = FileConfigProvider
config.providers.file.param.allowed.paths = {allowed}
config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider
config.providers.dir.param.allowed.paths = {allowed}
"""


def providers(tmp_path: Path, environ: dict[str, str]) -> Providers:
    config = mirror_config_parse(PROVIDERS.format(allowed=tmp_path / "allowed"))
    return Providers(config.providers, environ)


def test_each_node_resolves_references_with_its_own_providers(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    (allowed / "secrets").mkdir(parents=True)
    (allowed / "mm2.properties").write_text("b.token = S3CRET-FILE\n")
    (allowed / "secrets" / "token").write_text("S3CRET-DIR")
    (tmp_path / "elsewhere.properties").write_text("b.token = S3CRET-OUTSIDE\n")
    config = {
        "a": "${env:MM2_HOST}",
        "b": f"${{file:{allowed}/mm2.properties:b.token}}",
        "c": f"${{dir:{allowed}/secrets:token}}",
        "d": "${env:HOME_SECRET}",  # not matched by allowlist.pattern
        "e": f"${{file:{tmp_path}/elsewhere.properties:b.token}}",  # outside allowed.paths
        "f": f"${{file:{allowed}/../elsewhere.properties:b.token}}",  # escapes by ..
        "g": "${env:MM2_UNSET}",
        "h": f"${{file:{allowed}/mm2.properties:missing}}",
        "i": "plain ${env:MM2_HOST}:8083",
    }
    one = providers(tmp_path, {"MM2_HOST": "127.0.0.2", "HOME_SECRET": "s"}).resolve(config)
    two = providers(tmp_path, {"MM2_HOST": "127.0.0.3"}).resolve(config)
    assert one.values["a"] == "127.0.0.2" and two.values["a"] == "127.0.0.3"  # KIP-710's point
    assert one.values["i"] == "plain 127.0.0.2:8083"
    assert one.values["b"] == "S3CRET-FILE" and one.values["c"] == "S3CRET-DIR"
    for key in "defgh":
        assert one.values[key] == config[key], key  # left literal
    reasons = {u.key: u.reason for u in one.unresolved}
    assert "not allowed by allowlist.pattern" in reasons["d"]
    assert "outside allowed.paths" in reasons["e"] and "outside allowed.paths" in reasons["f"]
    # A missing variable, file or key is "unresolvable", without saying which (issue 34).
    assert reasons["g"] == reasons["h"] == "unresolvable on this node"
    trace = one.trace()
    assert trace is not None and "${env:MM2_UNSET} in g" in trace
    for value in ("S3CRET-FILE", "S3CRET-DIR", "S3CRET-OUTSIDE", "127.0.0.2"):
        assert value not in trace  # reasons name references and paths, never values


def test_connects_request_signature() -> None:
    key = base64.b64encode(b"k" * 32).decode()
    body = b'[{"task.assigned.partitions":"t-0"}]'
    headers = signature_headers(key, body)
    assert headers[ALGORITHM_HEADER] == "HmacSHA256"
    assert signature_problem(key, body, headers) is None
    assert "missing" in str(signature_problem(key, body, {}))
    assert "invalid signature" in str(signature_problem(key, body + b" ", headers))
    other = base64.b64encode(b"o" * 32).decode()
    assert "invalid signature" in str(signature_problem(other, body, headers))
    assert "does not support" in str(
        signature_problem(key, body, {**headers, ALGORITHM_HEADER: "HmacMD5"})
    )
    assert "invalid signature" in str(
        signature_problem(key, body, {**headers, SIGNATURE_HEADER: "%%%"})
    )


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make the test's certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.2",
            "-addext",
            "subjectAltName=IP:127.0.0.2",
        ],
        check=True,
        capture_output=True,
    )
    keystore = tmp_path / "keystore.pem"
    keystore.write_text(cert.read_text() + key.read_text())
    return keystore


TLS_CONFIG = """clusters = A, B
A.bootstrap.servers = http://127.0.0.1:1
A.token = ${{env:MM2_A_TOKEN}}
B.bootstrap.servers = http://127.0.0.1:1
config.providers = env
config.providers.env.class = EnvVarConfigProvider
A->B.enabled = true
emit.heartbeats.enabled = false
mm.rest.protocol = https
mm.rest.host.name = ${{env:MM2_REST_HOST}}
listeners.https.ssl.keystore.type = PEM
listeners.https.ssl.keystore.location = ${{env:MM2_KEYSTORE}}
listeners.https.ssl.truststore.location = {truststore}
"""


@pytest.fixture
def worker(pem: Path) -> Iterator[FlowWorker]:
    config = mirror_config_parse(TLS_CONFIG.format(truststore=pem))
    env = {"MM2_REST_HOST": "127.0.0.2", "MM2_KEYSTORE": str(pem), "MM2_A_TOKEN": "resolved-a"}
    made = FlowWorker(
        flow=Flow("A", "B"),
        config=config,
        providers=Providers(config.providers, env),
        coordinator=Endpoint("coordinator", "http://127.0.0.1:1", "t", "test"),
    )
    made.rest.start("test-rest")  # the REST server alone: no group thread
    yield made
    made.rest.stop()


def call(
    url: str,
    context: ssl.SSLContext,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


def test_a_flows_rest_server_over_tls(worker: FlowWorker, pem: Path) -> None:
    assert worker.worker_id == "127.0.0.2/A__B"
    assert worker.rest_url.startswith("https://127.0.0.2:")
    trusted = ssl.create_default_context(cafile=str(pem))
    base = worker.rest_url
    status, info = call(base + "/", trusted)
    assert status == 200 and set(info) == {"version", "commit", "kafka_cluster_id"}
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        call(base + "/", ssl.create_default_context())
    status, names = call(base + "/connectors", trusted)
    assert names == [
        "MirrorCheckpointConnector",
        "MirrorHeartbeatConnector",
        "MirrorSourceConnector",
    ]
    status, config = call(base + "/connectors/MirrorSourceConnector/config", trusted)
    assert config["source.cluster.token"] == "${env:MM2_A_TOKEN}"  # never the node's value
    status, info = call(base + "/connectors/MirrorSourceConnector", trusted)
    assert info == {
        "name": "MirrorSourceConnector",
        "config": config,
        "tasks": [],
        "type": "source",
    }
    status, state = call(base + "/connectors/MirrorSourceConnector/status", trusted)
    assert state == {
        "name": "MirrorSourceConnector",
        "connector": {"state": "UNASSIGNED", "worker_id": None},
        "tasks": [],
        "type": "source",
    }
    assert call(base + "/connectors/Nope/config", trusted)[0] == 404
    assert call(base + "/connectors/Nope", trusted, "DELETE")[0] == 405

    body = b'[{"task.assigned.partitions":"orders-0"}]'
    tasks = base + "/connectors/MirrorSourceConnector/tasks"
    status, answer = call(tasks, trusted, "POST", body)
    assert (status, answer["error_code"]) == (403, 403) and "missing" in answer["message"]
    key = base64.b64encode(b"s" * 32).decode()
    worker.group = {"session_key": key, "leader_id": "someone-else", "leader_url": ""}
    assert (
        call(
            tasks,
            trusted,
            "POST",
            body,
            signature_headers(base64.b64encode(b"x" * 32).decode(), body),
        )[0]
        == 403
    )
    signed = signature_headers(key, body)
    status, answer = call(base + "/connectors/Nope/tasks", trusted, "POST", body, signed)
    assert status == 404 and answer == {"error_code": 404, "message": "Connector Nope not found"}
    status, answer = call(tasks + "?forward=false", trusted, "POST", body, signed)
    assert status == 409  # not the leader, and told not to forward: a rebalance is under way
    bad = b'{"not": "a list"}'
    assert call(tasks, trusted, "POST", bad, signature_headers(key, bad))[0] == 400
    assert call(base + "/connectors/MirrorSourceConnector/pause", trusted, "PUT")[0] == 401


def test_the_node_command_needs_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.management import CommandError, call_command

    monkeypatch.delenv("CP_MIRROR_TOKEN", raising=False)
    with pytest.raises(CommandError, match="--token"):
        call_command("run_mirror_node", "--url", "http://127.0.0.1:1", "--token", "")


def test_a_resolved_value_never_reaches_a_settings_problem() -> None:
    """Issue 34: `A->B.tasks.max = ${env:SECRET}` put the secret in the flow's status trace,
    the node's log and its Connect REST status: a problem names the key, never the value."""
    from controlplane.controller.mirror.settings import SettingsError, _int

    with pytest.raises(SettingsError) as raised:
        _int({"tasks.max": "hunter2-the-secret"}, "tasks.max", 1)
    assert "tasks.max" in str(raised.value)
    assert "hunter2" not in str(raised.value)
