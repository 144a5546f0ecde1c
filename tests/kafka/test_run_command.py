"""The README's run command with real brokers of the newest Kafka 4.x:
`KAFKA_VERSION=4.4.0 make run KAFKA_BROKERS=3` (scripts/run-embedded.sh, which `make run` runs
once installed). The embedded control plane starts, three stock brokers of that release register,
are unfenced and lead the demo topic; the banner names the release; Ctrl-C (SIGINT) stops the
brokers and the control plane. Its own SQLite database and broker dirs, in a temporary dir."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from devtools.stack import free_port
from stock_kafka import jars as kafka
from tests.kafka.conftest import need_kafka_jars

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NEWEST = kafka.MATRIX_VERSIONS[-1]
BROKERS = 3
FIRST_BROKER_ID = 100  # scripts/run-embedded.sh's KAFKA_FIRST_BROKER_ID
STARTUP_S = 300


def get(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def test_make_run_with_three_brokers_of_the_newest_release(tmp_path: Path) -> None:
    need_kafka_jars()
    if not kafka.installed(NEWEST):
        pytest.fail(f"Kafka {NEWEST} is not installed: bash scripts/install-kafka.sh {NEWEST}")
    port = free_port()
    env = {
        **os.environ,
        "KAFKA_VERSION": NEWEST,
        "KAFKA_BROKERS": str(BROKERS),
        "PORT": str(port),
        "INTERNAL_PORT": str(free_port()),
        "KAFKA_PORT": str(free_port()),
        "KAFKA_SASL_PORT": str(free_port()),
        "KAFKA_CONTROLLER_PORT": str(free_port()),
        "KAFKA_BROKER_DIR": str(tmp_path / "brokers"),
        "CP_SQLITE_PATH": str(tmp_path / "controlplane.sqlite3"),
    }
    banner = tmp_path / "banner.txt"
    with banner.open("w") as out:
        run = subprocess.Popen(
            ["bash", "scripts/run-embedded.sh"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while "Ctrl-C stops everything" not in banner.read_text():
            assert run.poll() is None, banner.read_text()[-3000:]
            assert time.monotonic() < deadline, banner.read_text()[-3000:]
            time.sleep(1)
        text = banner.read_text()
        assert f"Real Kafka brokers (Apache Kafka {NEWEST}, stock jars)" in text, text
        token = text.split("Admin token (User:admin, super user):\n", 1)[1].split()[0]
        base = f"http://127.0.0.1:{port}"
        ids = range(FIRST_BROKER_ID, FIRST_BROKER_ID + BROKERS)
        while True:
            rows = [get(f"{base}/api/v1/brokers/{i}", token) for i in ids]
            topic = get(f"{base}/api/v1/topics/real-orders", token)
            led = all(p["leader_id"] in ids for p in topic["partitions"])
            if all(r["state"] == "UNFENCED" for r in rows) and led:
                break
            assert time.monotonic() < deadline, (rows, topic)
            time.sleep(1)
        launched = (tmp_path / "brokers" / f"broker-{FIRST_BROKER_ID}" / "broker.log").read_text()
        assert f"Kafka version: {NEWEST}" in launched
        assert len(topic["partitions"]) == 3
    finally:
        os.killpg(run.pid, signal.SIGINT)
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            raise
    assert "Stopping..." in banner.read_text()
    # Nothing it started outlives it: the brokers' JVMs, the server, the launcher.
    deadline = time.monotonic() + 30
    while group_alive(run.pid):
        assert time.monotonic() < deadline, "still running after Ctrl-C"
        time.sleep(0.5)


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
