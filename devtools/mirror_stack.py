"""Two control planes and mirror nodes between them, as real processes: for the mirror's
integration tests and its benchmark.

Each cluster is a stack of its own (devtools.stack: its own database and Redis key prefix) with a
controller, a web process and simulated brokers (remote topics need brokers to be placed on).
Mirror nodes are `manage.py run_mirror_node` processes, each with its own environment (the
references of the configuration resolve against it) and its own loopback address.

`running_real_cluster` makes a cluster whose brokers are stock Kafka brokers instead
(devtools.real_brokers: `serve_kafka`'s controller listener and the pinned jars).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from devtools.real_brokers import (
    DEFAULT_CONTROLLER_ID,
    brokers_running,
    brokers_under,
    start_controller_listener,
)
from devtools.stack import PYTHON, Http, Stack, running_stack, wait_for
from stock_kafka.broker import KafkaBroker

STACK_SETTINGS = {
    "CP_CONTROLLER_LEASE_MS": "3000",
    "CP_BROKER_SESSION_TIMEOUT_MS": "6000",
    "CP_BROKER_HEARTBEAT_INTERVAL_MS": "1000",
    "CP_REQUEST_TIMEOUT_MS": "20000",
}


@dataclasses.dataclass
class Cluster:
    """One control plane (a cluster here) with its processes and principals' tokens."""

    alias: str
    stack: Stack
    http: Http

    @property
    def url(self) -> str:
        return self.http.base

    def token(self, name: str) -> str:
        return self.stack.tokens[name]

    def principal(self, name: str, *flags: str) -> str:
        token = self.stack.manage("create_principal", name, *flags).stdout.split()[-1]
        self.stack.tokens[name] = token
        return token

    def admin(self, path: str, body: Any) -> Any:
        status, answer = self.http.post(path, body, self.token("admin"))
        assert status == 200, (path, status, answer)
        return answer

    def create_topic(
        self, name: str, partitions: int = 1, *, replication_factor: int = 1, **configs: str
    ) -> None:
        topic = {
            "name": name,
            "num_partitions": partitions,
            "replication_factor": replication_factor,
            "configs": [{"name": k, "value": v} for k, v in configs.items()],
        }
        (result,) = self.admin("/api/v1/create-topics", {"topics": [topic]})["topics"]
        assert result["error_code"] == 0, result

    def topics(self) -> dict[str, int]:
        status, answer = self.http.get("/api/v1/topics?page_size=1000", self.token("admin"))
        assert status == 200, answer
        return {t["name"]: t["partition_count"] for t in answer["results"]}

    def put_mirror_config(self, text: str) -> Any:
        import urllib.request

        request = urllib.request.Request(
            self.url + "/api/v1/mirror/config", data=text.encode(), method="PUT"
        )
        request.add_header("Content-Type", "text/plain")
        request.add_header("Authorization", f"Bearer {self.token('admin')}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status

    def flows(self) -> list[dict[str, Any]]:
        status, answer = self.http.get("/api/v1/mirror/flows", self.token("admin"))
        assert status == 200, answer
        return list(answer["results"])

    def flow(self, source: str, target: str) -> dict[str, Any]:
        return next(f for f in self.flows() if f["source"] == source and f["target"] == target)


@contextlib.contextmanager
def running_cluster(alias: str, logs: Path, *, brokers: int = 3) -> Iterator[Cluster]:
    with running_stack(logs / alias, settings=STACK_SETTINGS) as stack:
        stack.start_controller("controller", 3000)
        stack.wait_active("controller")
        http = stack.start_web(workers=2, threads=16)
        stack.spawn(
            "brokers",
            [
                PYTHON,
                "manage.py",
                "simulate_brokers",
                "--url",
                http.base,
                "--internal-url",
                http.internal,
                "--token",
                stack.tokens["broker"],
                "--brokers",
                str(brokers),
                "--heartbeat-ms",
                "1000",
                "--control",
                "none",
                "--status-every",
                "60",
            ],
        )
        cluster = Cluster(alias, stack, http)

        def unfenced() -> bool:
            status, answer = http.get("/api/v1/brokers?fenced=false", stack.tokens["admin"])
            return status == 200 and answer["count"] >= brokers

        wait_for(unfenced, 180, f"cluster {alias}'s brokers to be unfenced", 0.3)
        yield cluster


@contextlib.contextmanager
def running_real_cluster(
    alias: str,
    logs: Path,
    work: Path,
    *,
    node_ids: tuple[int, ...] = (1, 2, 3),
    **broker_options: Any,
) -> Iterator[tuple[Cluster, list[KafkaBroker]]]:
    """A cluster whose brokers are stock Kafka brokers (the pinned jars; no simulated broker):
    its controller (the voter id the brokers know), one web process, `serve_kafka` with the
    CONTROLLER listener, and one KafkaBroker per node id under `work` (`broker_options` go to
    KafkaBroker: overrides, log_levels, client_users...), every one unfenced."""
    with running_stack(logs / alias, settings=STACK_SETTINGS) as stack:
        stack.start_controller("controller", DEFAULT_CONTROLLER_ID)
        stack.wait_active("controller", timeout=60)
        http = stack.start_web(workers=1, threads=16)
        port = start_controller_listener(stack)
        brokers = brokers_under(stack, port, work, node_ids, **broker_options)
        with brokers_running(brokers):
            cluster = Cluster(alias, stack, http)

            def unfenced() -> bool:
                status, answer = http.get("/api/v1/brokers?fenced=false", stack.tokens["admin"])
                return status == 200 and answer["count"] >= len(node_ids)

            wait_for(unfenced, 180, f"cluster {alias}'s Kafka brokers to be unfenced", 0.3)
            yield cluster, brokers


def mirror_config_text(
    a: Cluster,
    b: Cluster,
    secrets: Path,
    *,
    topics: str,
    refresh_s: int = 1,
    sync_s: int = 1,
) -> str:
    """mm2.properties for the flow A->B, held by B: tokens and each node's REST host and client
    id as config provider references (A's token from the node's environment, B's from a file)."""
    return f"""# A is the source, B the target; B holds this configuration
clusters = A, B
A.bootstrap.servers = {a.url}
A.token = ${{env:MM2_A_TOKEN}}
A.client.id = ${{env:MM2_SOURCE_CLIENT_ID}}
B.bootstrap.servers = {b.url}
B.token = ${{file:{secrets}:b.token}}
B.client.id = ${{env:MM2_NODE_NAME}}
config.providers = env, file
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern = MM2_.*
config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.file.param.allowed.paths = {secrets.parent}
emit.heartbeats.enabled = false
A->B.enabled = true
A->B.emit.heartbeats.enabled = true
A->B.topics = {topics}
A->B.refresh.topics.interval.seconds = {refresh_s}
A->B.sync.topic.configs.interval.seconds = {sync_s}
A->B.sync.topic.acls.interval.seconds = {sync_s}
replication.factor = 1
heartbeats.topic.replication.factor = 1
mm.rest.host.name = ${{env:MM2_REST_HOST}}
session.timeout.ms = 3000
heartbeat.interval.ms = 500
"""


def write_secrets(directory: Path, b_token: str) -> Path:
    """The file B's token is read from (the file provider's allowed path)."""
    directory.mkdir(parents=True, exist_ok=True)
    secrets = directory / "secrets.properties"
    secrets.write_text(f"b.token = {b_token}\n")
    return secrets


@dataclasses.dataclass
class MirrorNodeProcess:
    name: str
    host: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        os.killpg(self.process.pid, sig)


# Every node started in this process, so that a failed wait can show what each one was doing.
_started: list[MirrorNodeProcess] = []


def dump_node_stacks() -> None:
    """Each running node writes every thread's stack into its log (`run_mirror_node` answers
    SIGUSR1 so); a stopped (SIGSTOP) node writes it when it is continued."""
    for node in _started:
        if node.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.process.pid, signal.SIGUSR1)
    time.sleep(1.0)


def wait_for_flow(
    predicate: Callable[[], Any], timeout: float, what: str, every: float = 0.1
) -> Any:
    """`wait_for`, leaving the nodes' thread stacks in their logs when the wait times out."""
    try:
        return wait_for(predicate, timeout, what, every)
    except AssertionError:
        dump_node_stacks()
        raise


def start_mirror_node(
    coordinator: Cluster,
    *,
    name: str,
    host: str,
    token: str,
    clusters: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> MirrorNodeProcess:
    """`run_mirror_node` against `coordinator`, with MM2_REST_HOST=host and `env` added."""
    argv = [PYTHON, "manage.py", "run_mirror_node", "--url", coordinator.url, "--token", token]
    if clusters:
        argv += ["--clusters", *clusters]
    proc = coordinator.stack.spawn(name, argv, {"MM2_REST_HOST": host, **(env or {})})
    node = MirrorNodeProcess(name, host, proc, coordinator.stack.logs / f"{name}.log")
    _started[:] = [n for n in _started if n.process.poll() is None] + [node]
    return node
