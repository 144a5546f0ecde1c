"""The canary rollout guard over HTTP against a real embedded server (gunicorn, its own
controller timer) and the broker simulator's CLI with `--canary 2`: a healthy canary version
answers HOLD while it bakes and PROCEED after canary.bake.time.ms; a version whose canary brokers
keep losing their sessions answers ROLLBACK. The simulator deploys it (`deploy ID VERSION` on its
stdin) and silences the canary brokers (`stop ID` / `resume ID`)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.test_simulator_embedded import (
    HEARTBEAT_MS,
    PYTHON,
    ROOT,
    EmbeddedServer,
    embedded_server,
)

pytestmark = pytest.mark.integration

BAKE_MS = 4000
WAIT_S = 30.0
REGULAR = (0, 1, 2)
CANARY = (3, 4)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    with embedded_server(tmp_path_factory.mktemp("canary")) as built:
        yield built


class Simulator:
    """`manage.py simulate_brokers` as a process, commands on its stdin."""

    def __init__(self, server: EmbeddedServer, log: Path, *args: str) -> None:
        self.log = log
        self.out = open(log, "ab")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [
                PYTHON,
                "manage.py",
                "simulate_brokers",
                "--url",
                server.url,
                "--internal-url",
                server.internal_url,
                "--heartbeat-ms",
                str(HEARTBEAT_MS),
                "--control",
                "stdin",
                "--status-every",
                "2",
                *args,
            ],
            cwd=ROOT,
            env={**server.env, "CP_BROKER_TOKEN": server.broker_token},
            stdin=subprocess.PIPE,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{line}\n".encode())
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.say("quit")
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        self.out.close()


def eventually(probe: Callable[[], tuple[bool, Any]], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        done, detail = probe()
        if done:
            return detail
        assert time.monotonic() < deadline, f"timed out waiting for {what}; last: {detail}"
        time.sleep(0.2)


def test_rollout_verdicts_follow_the_canary_brokers(server: EmbeddedServer, tmp_path: Path) -> None:
    admin = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.admin_token}"}, timeout=10
    )

    def states() -> dict[int, tuple[str, str | None, str]]:
        response = admin.get("/api/v1/brokers", params={"page_size": 100})
        response.raise_for_status()
        return {
            b["broker_id"]: (b["state"], b["software_version"], b["pod"])
            for b in response.json()["results"]
        }

    def all_unfenced(version_of: dict[int, str]) -> Callable[[], tuple[bool, Any]]:
        def probe() -> tuple[bool, Any]:
            view = states()
            wanted = {b: ("UNFENCED", v) for b, v in version_of.items()}
            got = {b: view[b][:2] if b in view else None for b in version_of}
            return got == wanted, got

        return probe

    def rollout(version: str) -> dict[str, Any]:
        response = admin.get("/api/v1/canary/rollout", params={"version": version})
        assert response.status_code == 200, response.text
        return dict(response.json())

    configured = admin.post(
        "/api/v1/incremental-alter-configs",
        json={
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {
                            "name": "canary.bake.time.ms",
                            "config_operation": "SET",
                            "value": str(BAKE_MS),
                        }
                    ],
                }
            ]
        },
    )
    assert configured.json()["responses"][0]["error_code"] == 0, configured.text
    sim = Simulator(
        server,
        tmp_path / "simulator.log",
        "--brokers",
        "3",
        "--canary",
        "2",
        "--software-version",
        "1.0",
        "--canary-software-version",
        "1.1",
    )
    try:
        versions = {0: "1.0", 1: "1.0", 2: "1.0", 3: "1.1", 4: "1.1"}
        eventually(all_unfenced(versions), "five brokers UNFENCED with their versions")
        assert {b: states()[b][2] for b in CANARY} == {3: "canary-broker", 4: "canary-broker"}

        # A healthy canary version: HOLD while it bakes, PROCEED once the bake time passed.
        baking = rollout("1.1")
        assert baking["verdict"] == "HOLD", baking
        assert "still baking" in baking["explanation"]
        assert baking["evidence"]["canary"]["brokers"] == [3, 4]
        assert baking["evidence"]["non_canary"]["brokers"] == [0, 1, 2]
        healthy = eventually(
            lambda: ((a := rollout("1.1"))["verdict"] == "PROCEED", a),
            "PROCEED after the bake time",
            timeout=BAKE_MS / 1000 + WAIT_S,
        )
        assert healthy["evidence"]["bake_elapsed_ms"] >= BAKE_MS
        assert healthy["evidence"]["canary"]["incidents"] == 0
        assert rollout("1.0")["verdict"] == "COMPLETE"  # the fleet's current version
        assert rollout("9.9")["verdict"] == "NOT_STARTED"

        # Version 1.2 goes to the canary brokers, and they keep losing their sessions.
        for broker_id in CANARY:
            sim.say(f"deploy {broker_id} 1.2")
        eventually(
            all_unfenced({**versions, 3: "1.2", 4: "1.2"}),
            "the canary brokers back, running 1.2",
        )
        assert rollout("1.2")["verdict"] == "HOLD"
        for _cycle in range(2):
            for broker_id in CANARY:
                sim.say(f"stop {broker_id}")
            eventually(
                lambda: (all(states()[b][0] == "FENCED" for b in CANARY), states()),
                "the silent canary brokers fenced when their sessions lapsed",
            )
            for broker_id in CANARY:
                sim.say(f"resume {broker_id}")
            eventually(all_unfenced({**versions, 3: "1.2", 4: "1.2"}), "canary brokers back")
        bad = rollout("1.2")
        assert bad["verdict"] == "ROLLBACK", bad
        assert bad["evidence"]["canary"]["session_expiries"] >= 4
        assert (
            bad["evidence"]["canary"]["incidents_per_broker"]
            > (bad["evidence"]["non_canary"]["incidents_per_broker"])
        )
        assert "Roll version 1.2 back" in bad["explanation"]
        # Rolling 1.1 back out again: 1.1 runs nowhere now.
        assert rollout("1.1")["verdict"] == "NOT_STARTED"
    finally:
        sim.stop()
        admin.close()
        tail = sim.log.read_text(errors="replace")[-2000:]
        print(f"--- simulator.log ---\n{tail}")
    verify = server.manage("verify_metadata")
    assert verify.returncode == 0, verify.stdout + verify.stderr
