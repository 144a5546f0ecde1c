"""scripts/ensure-services.sh: what `make test` needs, started only when missing (issue 32)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from devtools.stack import free_port
from tests.conftest import need_postgres, need_redis

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-services.sh"


def ensure(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_services_that_answer_are_left_as_they_are() -> None:
    need_postgres()
    need_redis()
    result = ensure(CP_REQUIRE_SERVICES="1")
    assert result.returncode == 0, result.stderr
    assert "Starting" not in result.stdout and "Installing" not in result.stdout


def test_a_redis_that_does_not_answer_is_started_without_persistence() -> None:
    need_postgres()
    port = free_port()
    result = ensure(CP_TEST_REDIS_URL=f"redis://127.0.0.1:{port}/0", CP_REQUIRE_SERVICES="1")
    try:
        assert result.returncode == 0, result.stderr
        assert f"Starting Redis (port {port}" in result.stdout
        config = subprocess.run(
            ["redis-cli", "-p", str(port), "config", "get", "save"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert config[-1] == "save" or config == ["save"]  # an empty `save`: no snapshots
        bind = subprocess.run(
            ["redis-cli", "-p", str(port), "config", "get", "bind"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert bind[1:] == ["127.0.0.1"]
    finally:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)


def test_a_service_on_another_host_is_never_installed_here() -> None:
    """A URL naming another host is the user's own service: nothing is installed or started,
    and under CP_REQUIRE_SERVICES=1 its absence fails the command."""
    need_postgres()
    need_redis()
    # A name that never resolves (RFC 6761's .invalid): no packet leaves the machine.
    result = ensure(CP_TEST_REDIS_URL="redis://nowhere.invalid:6379/0", CP_REQUIRE_SERVICES="1")
    assert result.returncode == 1
    assert "Starting Redis" not in result.stdout
    assert "Redis is not answering at nowhere.invalid:6379" in result.stderr
