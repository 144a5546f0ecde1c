"""Integration tests run on a real stack: PostgreSQL, Redis, gunicorn and controller processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.stack import Stack, running_stack, wait_for
from tests.conftest import need_service

__all__ = ["Stack", "wait_for"]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    need_service("PostgreSQL", "127.0.0.1", 5432)
    need_service("Redis", "127.0.0.1", 6379)
    settings = {
        "CP_CONTROLLER_LEASE_MS": "2000",
        "CP_BROKER_SESSION_TIMEOUT_MS": "3000",
        "CP_BROKER_HEARTBEAT_INTERVAL_MS": "500",
        "CP_REQUEST_TIMEOUT_MS": "20000",
    }
    with running_stack(tmp_path / "logs", settings=settings) as built:
        yield built
