"""Integration tests run on a real stack: PostgreSQL, Redis, gunicorn and controller processes.

The services are shared with other runs: each stack has its own database and Redis key prefix,
and a test that talks to Redis itself uses `key_prefix` (its keys are deleted afterwards).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.reports import TestReport

from devtools.stack import Stack, delete_keys, redis_url, running_stack, unique_key_prefix, wait_for
from tests.conftest import need_postgres, need_redis

__all__ = ["Stack", "wait_for"]

LOG_TAIL_LINES = 60


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """When a full-stack test fails, its processes' last log lines join the failure's report:
    a run on another machine (CI) leaves no logs behind to read afterwards."""
    report: TestReport = yield
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when == "call" and report.failed and tmp_path is not None:
        for log in sorted(Path(tmp_path).rglob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            tail = "\n".join(line[:400] for line in lines)
            report.sections.append((f"{log.relative_to(tmp_path)}, last lines", tail))
    return report


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    need_postgres()
    need_redis()
    settings = {
        "CP_CONTROLLER_LEASE_MS": "2000",
        "CP_BROKER_SESSION_TIMEOUT_MS": "3000",
        "CP_BROKER_HEARTBEAT_INTERVAL_MS": "500",
        "CP_REQUEST_TIMEOUT_MS": "20000",
    }
    with running_stack(tmp_path / "logs", settings=settings) as built:
        yield built


@pytest.fixture
def key_prefix() -> Iterator[str]:
    """A Redis key prefix of this test's own; its keys are deleted afterwards (no FLUSHDB)."""
    need_redis()
    prefix = unique_key_prefix()
    yield prefix
    delete_keys(redis_url(), prefix)


@pytest.fixture
def shared_redis(key_prefix: str) -> Iterator[Any]:
    """A client of the shared Redis (`CP_TEST_REDIS_URL`); write only under `key_prefix`."""
    import redis

    client = redis.Redis.from_url(redis_url())
    yield client
    client.close()
