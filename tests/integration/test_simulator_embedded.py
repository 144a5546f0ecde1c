"""The broker simulator against a real embedded server: one gunicorn process is the controller.

As `make run` starts it, the process binds two ports: the public listener (`url`) and the internal
one (`internal_url`, its CP_INTERNAL_PORT), where the brokers' API is.

No PostgreSQL, Redis or Celery: SQLite in a temp file, and the gunicorn worker is the active
controller (its timer fences brokers whose session lapsed). Short timeouts (session 1500 ms,
heartbeat 300 ms) keep the test quick. Every wait polls with a bound; the server is killed in the
fixture's finalizer whatever happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from simulator import BrokerPhase, BrokerSimulator

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SESSION_TIMEOUT_MS = 1500
HEARTBEAT_MS = 300
WAIT_S = 20.0  # bound for every state change we wait for (each takes ~2 s at most)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass
class EmbeddedServer:
    url: str
    internal_url: str
    env: dict[str, str]
    broker_token: str
    admin_token: str
    log: Path

    def manage(
        self, *args: str, timeout: float = 120, extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(extra_env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def brokers(self) -> dict[int, dict[str, Any]]:
        """The admin API's view: broker id -> broker."""
        response = httpx.get(
            f"{self.url}/api/v1/brokers",
            params={"page_size": 100},
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=10,
        )
        response.raise_for_status()
        return {b["broker_id"]: b for b in response.json()["results"]}


def _token(server_env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [PYTHON, "manage.py", "create_principal", *args],
        cwd=ROOT,
        env=server_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def embedded_server(tmp: Path, **settings: str) -> Iterator[EmbeddedServer]:
    """One embedded gunicorn process on SQLite (also the controller), migrated, with a broker
    principal `sim` and a super user `admin`; `settings` are extra environment variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CP_", "DATABASE_", "CELERY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "controlplane.settings",
            "CP_SQLITE_PATH": str(tmp / "controlplane.sqlite3"),
            "CP_BROKER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "CP_BROKER_HEARTBEAT_INTERVAL_MS": str(HEARTBEAT_MS),
            "PYTHONUNBUFFERED": "1",
            **settings,
        }
    )
    migrate = subprocess.run(
        [PYTHON, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    broker_token = _token(env, "sim", "--broker")
    admin_token = _token(env, "admin", "--super-user")
    port, internal_port = free_port(), free_port()
    while internal_port == port:
        internal_port = free_port()
    env["CP_INTERNAL_PORT"] = str(internal_port)
    log = tmp / "gunicorn.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "gunicorn",
                "controlplane.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--bind",
                f"127.0.0.1:{internal_port}",
                "--workers",
                "1",
                "--threads",
                "8",
                "--no-control-socket",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    built = EmbeddedServer(
        f"http://127.0.0.1:{port}",
        f"http://127.0.0.1:{internal_port}",
        env,
        broker_token,
        admin_token,
        log,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"gunicorn exited:\n{log.read_text()[-3000:]}"
            try:
                built.brokers()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, f"gunicorn never answered:\n{log.read_text()}"
                time.sleep(0.2)
        yield built
    finally:
        _stop(proc)
        tail = log.read_text(errors="replace")[-3000:]
        if "Traceback" in tail:
            print(f"--- gunicorn.log ---\n{tail}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    with embedded_server(tmp_path_factory.mktemp("embedded")) as built:
        yield built


async def eventually(
    probe: Callable[[], Awaitable[tuple[bool, Any]]], what: str, timeout: float = WAIT_S
) -> Any:
    """Poll `probe` (-> (done, detail)) until done; fail with the last detail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        done, detail = await probe()
        if done:
            return detail
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {detail}")
        await asyncio.sleep(0.1)


def test_simulated_brokers_fence_unfence_and_shut_down(server: EmbeddedServer) -> None:
    async def brokers(admin: httpx.AsyncClient) -> dict[int, dict[str, Any]]:
        response = await admin.get("/api/v1/brokers", params={"page_size": 100})
        response.raise_for_status()
        return {b["broker_id"]: b for b in response.json()["results"]}

    def states_are(
        admin: httpx.AsyncClient, wanted: dict[int, str]
    ) -> Callable[[], Awaitable[tuple[bool, Any]]]:
        async def probe() -> tuple[bool, Any]:
            view = await brokers(admin)
            states = {i: view[i]["state"] if i in view else None for i in wanted}
            return states == wanted, view if states == wanted else states

        return probe

    async def scenario() -> None:
        admin = httpx.AsyncClient(
            base_url=server.url,
            headers={"Authorization": f"Bearer {server.admin_token}"},
            timeout=10,
        )
        sim = BrokerSimulator(
            server.url,
            server.broker_token,
            internal_url=server.internal_url,
            brokers=3,
            canary=1,
            racks=2,
            heartbeat_interval_ms=HEARTBEAT_MS,
            connect_timeout_s=10,
            metadata_wait_ms=2000,
        )
        await sim.start()
        try:
            # 3 brokers + 1 canary over 2 racks all come up and unfence themselves.
            everyone = {0: "UNFENCED", 1: "UNFENCED", 2: "UNFENCED", 3: "UNFENCED"}
            view = await eventually(states_are(admin, everyone), "all four brokers UNFENCED")
            assert {i: view[i]["pod"] for i in everyone} == {
                0: "broker",
                1: "broker",
                2: "broker",
                3: "canary-broker",
            }
            assert {i: view[i]["rack"] for i in everyone} == {
                0: "rack-0",
                1: "rack-1",
                2: "rack-0",
                3: "rack-1",
            }
            assert await sim.wait_for(lambda s: s.status().unfenced == 4, WAIT_S), sim.status()
            assert all(b.phase is BrokerPhase.RUNNING for b in sim.brokers())

            # A partition with a replica on each regular broker: the one broker 1 leaves and
            # rejoins.
            created = await admin.post(
                "/api/v1/create-topics",
                json={
                    "topics": [
                        {
                            "name": "rejoin",
                            "assignments": [{"partition_index": 0, "broker_ids": [0, 1, 2]}],
                        }
                    ]
                },
            )
            assert created.json()["topics"][0]["error_code"] == 0, created.text

            async def isr() -> list[int]:
                answer = await admin.get("/api/v1/topics/rejoin")
                return list(answer.json()["partitions"][0]["isr_nodes"])

            # A silent broker is fenced once its session lapses; the others stay unfenced.
            epoch_1 = sim.broker(1).epoch
            assert view[1]["broker_epoch"] == epoch_1
            sim.stop_heartbeats(1)
            await eventually(
                states_are(admin, {0: "UNFENCED", 1: "FENCED", 2: "UNFENCED", 3: "UNFENCED"}),
                "broker 1 FENCED after its session lapsed",
            )
            assert 1 not in await isr()

            # Resumed, it is still registered with the same epoch and unfences again.
            sim.resume(1)
            view = await eventually(states_are(admin, everyone), "broker 1 UNFENCED again")
            assert view[1]["broker_epoch"] == epoch_1
            assert sim.broker(1).epoch == epoch_1 and sim.broker(1).registrations == 1
            assert await sim.wait_for(lambda s: s.broker(1).unfenced, WAIT_S), sim.broker(1)

            # Unfenced, it rejoins the ISR the fencing took it out of (its leader's AlterPartition).
            async def rejoined() -> tuple[bool, Any]:
                current = await isr()
                return sorted(current) == [0, 1, 2], current

            await eventually(rejoined, "broker 1 back in the ISR")

            # Unregistered behind its back, a broker gets STALE_BROKER_EPOCH and registers again
            # as a new incarnation with a new epoch.
            old = sim.broker(0)
            answer = await admin.post("/api/v1/unregister-broker", json={"broker_id": 0})
            assert answer.status_code == 200 and answer.json()["error_code"] == 0, answer.text
            assert await sim.wait_for(
                lambda s: s.broker(0).registrations == 2 and s.broker(0).unfenced, WAIT_S
            ), sim.broker(0)
            view = await eventually(states_are(admin, everyone), "broker 0 UNFENCED again")
            assert view[0]["incarnation_id"] == sim.broker(0).incarnation_id != old.incarnation_id
            assert old.epoch is not None and view[0]["broker_epoch"] > old.epoch
            assert sim.counters.stale_epochs >= 1 and sim.counters.re_registrations == 1

            # Benchmark mode: back-to-back heartbeats, all answered without error.
            load = await sim.run_heartbeat_load(1.0, concurrency=4)
            assert load.requests > 0 and load.ok == load.requests == len(load.latencies_ms)
            assert load.errors == {} and load.brokers == 4

            # Controlled shutdown of one broker: released and fenced, the others untouched.
            assert await sim.shutdown(2, timeout_s=WAIT_S) is True
            state = sim.broker(2)
            assert state.shut_down and state.clean_shutdown is True
            assert state.phase is BrokerPhase.NOT_RUNNING
            view = await eventually(
                states_are(admin, {0: "UNFENCED", 1: "UNFENCED", 2: "FENCED", 3: "UNFENCED"}),
                "broker 2 FENCED after its controlled shutdown",
            )
            assert view[2]["in_controlled_shutdown"] is False
            assert sim.status().shut_down == 1 and sim.status().unfenced == 3

            # Everyone else goes the same way.
            assert await sim.shutdown_all(timeout_s=WAIT_S) == {0: True, 1: True, 2: True, 3: True}
            await eventually(
                states_are(admin, {0: "FENCED", 1: "FENCED", 2: "FENCED", 3: "FENCED"}),
                "every broker FENCED after shutdown_all",
            )
            assert sim.status().shut_down == 4
        finally:
            await sim.close()
            await admin.aclose()

    asyncio.run(asyncio.wait_for(scenario(), timeout=180))

    result = server.manage("verify_metadata")
    assert result.returncode == 0, result.stderr


def test_cli_runs_for_a_duration_and_shuts_down_cleanly(server: EmbeddedServer) -> None:
    result = server.manage(
        "simulate_brokers",
        "--url",
        server.url,
        "--internal-url",
        server.internal_url,
        "--brokers",
        "2",
        "--duration",
        "3",
        "--heartbeat-ms",
        str(HEARTBEAT_MS),
        "--first-id",
        "100",
        "--status-every",
        "1",
        timeout=90,
        extra_env={"CP_BROKER_TOKEN": server.broker_token},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    status_lines = re.findall(
        r"^\[\s*[\d.]+s\] 2 brokers: \d+ registered, \d+ unfenced, .*heartbeats/s.*$",
        result.stdout,
        re.MULTILINE,
    )
    assert status_lines, result.stdout
    assert "2 shut down" in status_lines[-1], result.stdout
    view = server.brokers()
    assert {i: view[i]["state"] for i in (100, 101)} == {100: "FENCED", 101: "FENCED"}
    verify = server.manage("verify_metadata")
    assert verify.returncode == 0, verify.stderr


def test_cli_exits_non_zero_when_the_server_is_unreachable(server: EmbeddedServer) -> None:
    result = server.manage(
        "simulate_brokers",
        "--internal-url",
        f"http://127.0.0.1:{free_port()}",
        "--token",
        "nope",
        "--brokers",
        "1",
        "--connect-timeout",
        "1",
        timeout=60,
    )
    assert result.returncode != 0
    assert "Could not reach" in result.stderr, result.stderr


def test_cli_refuses_a_listener_without_the_brokers_api(server: EmbeddedServer) -> None:
    """The public port answers the brokers' API with 404: the simulator names the mistake."""
    result = server.manage(
        "simulate_brokers",
        "--internal-url",
        server.url,
        "--token",
        server.broker_token,
        "--brokers",
        "1",
        "--connect-timeout",
        "5",
        timeout=60,
    )
    assert result.returncode != 0
    assert f"{server.url} does not serve the brokers' API" in result.stderr, result.stderr
