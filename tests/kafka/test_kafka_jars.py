"""Kafka's own jars from Maven Central run through the launcher (issue 32)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stock_kafka import jars as kafka

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def launch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stock_kafka", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_the_launcher_runs_the_pinned_kafka_broker(kafka_jars: None) -> None:
    result = launch("--version")
    assert result.returncode == 0, result.stderr
    # kafka.Kafka --version prints the version of the jars on its class path, nothing else.
    assert result.stdout.strip().splitlines()[-1].startswith(kafka.chosen_version())


def test_the_launcher_runs_any_class_of_the_jars(kafka_jars: None) -> None:
    result = launch("run-class", "kafka.tools.StorageTool", "random-uuid")
    assert result.returncode == 0, result.stderr
    # A Kafka Uuid: 16 bytes in URL-safe base64 without padding.
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", result.stdout.strip().splitlines()[-1])


def test_the_server_command_takes_a_properties_file_and_a_heap() -> None:
    command = kafka.java_command("kafka.Kafka", ["server.properties"], heap="192m")
    assert command[-2:] == ["kafka.Kafka", "server.properties"]
    assert "-Xmx192m" in command and "-Xms192m" in command
    assert command[command.index("-cp") + 1] == f"{kafka.libs_dir()}/*"


def test_installed_jars_need_no_network_nor_maven(kafka_jars: None, tmp_path: Path) -> None:
    """Offline-safe when present: a second install with no working Maven is a no-op."""
    broken = tmp_path / "bin"
    broken.mkdir()
    mvn = broken / "mvn"
    mvn.write_text("#!/bin/sh\necho 'mvn must not run' >&2\nexit 3\n")
    mvn.chmod(0o755)
    env = {**os.environ, "PATH": f"{broken}:{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "scripts/install-kafka.sh"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "mvn must not run" not in result.stderr


def test_missing_jars_are_said_plainly(tmp_path: Path) -> None:
    env = {**os.environ, "CP_KAFKA_LIBS": str(tmp_path / "nothing")}
    env.pop("KAFKA_VERSION", None)  # the override names the pinned release's jars
    result = launch("--version", env=env)
    assert result.returncode != 0
    assert "install-kafka.sh" in result.stderr
