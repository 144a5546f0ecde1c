"""A restarted cluster heals (issue 38): brokers that register anew rejoin their ISRs.

After `make run`, Ctrl-C, `make run` again, every broker was UNFENCED but every partition of the
demo topic kept a one-member ISR for good: only a broker resumed after a pause was taken back.
Here, on real stacks, whatever restarts, every broker comes back as a new incarnation (a new
broker epoch), each partition's leader takes its caught-up followers back into the ISR with
AlterPartition, and the controller's periodic preferred-leader election (every
leader.imbalance.check.interval.seconds, short here) gives leadership back:

* embedded, as `make run` runs it (one process is the server and the controller, on SQLite; the
  same simulator command line): the simulator killed and started again; then both stopped as
  Ctrl-C stops them and started again on the same database; then one broker replaced;
* distributed (PostgreSQL, Redis, a `run_controller`, no Celery worker nor beat: the rebalance is
  the active controller's own timer job): the controller, the web node and the simulator killed
  together and started again.

Every wait polls with a generous bound; nothing asserts on timings.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.campaign_brokers import healed
from devtools.embedded import EmbeddedServer, embedded_server
from devtools.stack import PYTHON, Http, Stack, running_stack, wait_for
from tests.conftest import need_postgres, need_redis

pytestmark = pytest.mark.integration

TOPIC = "demo-orders"
HEAL_S = 60.0  # bound for a restarted cluster to heal (it takes a session timeout and seconds)
REBALANCE_S = "2"  # leader.imbalance.check.interval.seconds for these tests
BROKERS = 6  # as `make run`: 5 brokers and 1 canary broker over 3 racks


def simulator_argv(http: Http, tokens: dict[str, str]) -> list[str]:
    """`make run`'s simulator (scripts/run-embedded.sh), creating its demo topic itself."""
    return [
        PYTHON,
        "manage.py",
        "simulate_brokers",
        "--internal-url",
        http.internal,
        "--url",
        http.base,
        "--token",
        tokens["broker"],
        "--brokers",
        "5",
        "--canary",
        "1",
        "--racks",
        "3",
        "--software-version",
        "3.9.0",
        "--canary-software-version",
        "3.9.1",
        "--control",
        "stdin",
        "--topic",
        TOPIC,
        "--partitions",
        "12",
        "--replication-factor",
        "3",
        "--admin-token",
        tokens["admin"],
    ]


def partitions(http: Http, token: str) -> list[dict[str, Any]]:
    status, body = http.get(f"/api/v1/topics/{TOPIC}", token)
    return list(body["partitions"]) if status == 200 else []


def incarnations(http: Http, token: str) -> dict[int, str]:
    """Broker id -> incarnation, of the UNFENCED brokers."""
    status, body = http.get("/api/v1/brokers?page_size=100", token)
    if status != 200:
        return {}
    return {
        int(b["broker_id"]): str(b["incarnation_id"])
        for b in body["results"]
        if b["state"] == "UNFENCED"
    }


def wait_healed(http: Http, token: str, old: dict[int, str], what: str) -> dict[int, str]:
    """Every broker unfenced as a new incarnation (where `old` names one), then every ISR whole
    and every preferred leader leading; the cluster's health says the same. The incarnations."""

    def all_back() -> dict[int, str] | None:
        now = incarnations(http, token)
        fresh = len(now) == BROKERS and all(now[b] != old[b] for b in old)
        return now if fresh else None

    began = time.monotonic()
    now: dict[int, str] = wait_for(all_back, HEAL_S, f"every broker back after {what}", 0.5)
    back_s = time.monotonic() - began

    def whole() -> bool:
        status, cluster = http.get("/api/v1/cluster", token)
        health = cluster["health"] if status == 200 else {}
        return (
            healed(partitions(http, token))
            and health.get("under_replicated_partitions") == 0
            and health.get("preferred_replica_imbalance") == 0
        )

    wait_for(whole, HEAL_S, f"every ISR whole and every preferred leader leading after {what}", 0.5)
    print(f"{what}: brokers back in {back_s:.1f} s, healed {time.monotonic() - began:.1f} s")
    parts = partitions(http, token)
    assert len(parts) == 12 and not any(p["is_canary"] for p in parts), parts
    return now


def say(proc: subprocess.Popen[bytes], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(f"{line}\n".encode())
    proc.stdin.flush()


def restart_server(server: EmbeddedServer, argv: list[str]) -> None:
    server.spawn("server", argv)
    for path in ("/api/v1/whoami", "/internal/v1/metadata"):

        def asks_for_a_token(path: str = path) -> bool:
            return server.http.call("GET", path)[0] == 401

        wait_for(asks_for_a_token, 60, f"the server again ({path})")


def start_simulator(server: EmbeddedServer) -> subprocess.Popen[bytes]:
    return server.spawn(
        "simulator", simulator_argv(server.http, server.tokens), stdin=subprocess.PIPE
    )


def test_make_run_heals_after_every_restart(tmp_path: Path) -> None:
    settings = {"CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS": REBALANCE_S}
    with embedded_server(tmp_path, brokers=0, topic=None, settings=settings) as server:
        http, token = server.http, server.tokens["admin"]
        server_argv = [str(a) for a in server.procs["server"].args]
        start_simulator(server)
        first = wait_healed(http, token, {}, "the first start")

        # The simulator killed (every broker's process gone at once) and started again: each
        # broker registers a new incarnation once its old session lapsed.
        server.procs["simulator"].kill()
        server.procs["simulator"].wait(timeout=30)
        start_simulator(server)
        second = wait_healed(http, token, first, "the simulator's restart")

        # Ctrl-C as `make run` takes it: SIGINT to the server and the simulator at once, then
        # its clean-up's SIGTERM to both; `make run` again on the same database (a new
        # controller, and new incarnations of every broker).
        for name in ("server", "simulator"):
            server.procs[name].send_signal(signal.SIGINT)
        for name in ("server", "simulator"):
            server.procs[name].send_signal(signal.SIGTERM)
            server.procs[name].wait(timeout=60)
        restart_server(server, server_argv)
        simulator = start_simulator(server)
        third = wait_healed(http, token, second, "the whole control plane's restart")

        # One broker replaced (`deploy`: a controlled shutdown, then a new incarnation of it).
        say(simulator, "deploy 1 3.9.0")
        wait_healed(http, token, {1: third[1]}, "broker 1's replacement")
        say(simulator, "quit")
        assert simulator.wait(timeout=60) == 0


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """The integration tests' stack settings, and a short preferred-leader rebalance period."""
    need_postgres()
    need_redis()
    settings = {
        "CP_CONTROLLER_LEASE_MS": "2000",
        "CP_BROKER_SESSION_TIMEOUT_MS": "3000",
        "CP_BROKER_HEARTBEAT_INTERVAL_MS": "500",
        "CP_REQUEST_TIMEOUT_MS": "20000",
        "CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS": REBALANCE_S,
    }
    with running_stack(tmp_path / "logs", settings=settings) as built:
        yield built


def test_distributed_control_plane_and_brokers_restarted_together(stack: Stack) -> None:
    token = stack.tokens["admin"]
    stack.start_controller("controller-1", 3001)
    stack.wait_active("controller-1", 60)
    http = stack.start_web("web", workers=1, threads=8)
    stack.spawn("simulator", simulator_argv(http, stack.tokens), stdin=subprocess.PIPE)
    first = wait_healed(http, token, {}, "the first start")

    for name in ("simulator", "web", "controller-1"):
        stack.kill(name, signal.SIGKILL)
        stack.procs[name].wait(timeout=30)
    time.sleep(1)
    stack.start_controller("controller-2", 3002)
    stack.wait_active("controller-2", 60)
    http = stack.start_web("web", workers=1, threads=8)
    simulator = stack.spawn("simulator", simulator_argv(http, stack.tokens), stdin=subprocess.PIPE)
    wait_healed(http, token, first, "the control plane's and the brokers' restart")
    say(simulator, "quit")  # a controlled shutdown of every broker while the server is there
    assert simulator.wait(timeout=60) == 0
    verify = stack.manage("verify_metadata", check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
