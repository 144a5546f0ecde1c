"""The export is exactly-once across runs killed at random points and rerun (issue 10): real
`manage.py export_audit` processes killed -9 while they read, write, place their files or
commit, on the real database, with writes going on between the runs."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from audit.models import AuditEvent
from audit.spark import storage as store
from controlplane.models import MetadataRecord
from tests.audit_files import committed_rows
from tests.audit_workload import Workload

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
FAILPOINTS = ("after-staging", "mid-placing", "before-commit", "after-commit")


def database_url() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or "postgres"
    return (
        f"postgres://{user}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


def start_export(path: Path, failpoint: str = "") -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "CP_EXPORT_FAILPOINT": failpoint,
        "DATABASE_URL": database_url(),
        "PYTHONUNBUFFERED": "1",
        "CP_LOG_LEVEL": "ERROR",
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "export_audit", "--to", str(path), "--batch-rows", "800"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_and_kill(path: Path, *, after_s: float | None, failpoint: str = "") -> int:
    """Start an export; kill -9 it after `after_s` seconds, or let it die at `failpoint`.
    Answers its exit status (negative: the signal that ended it)."""
    proc = start_export(path, failpoint)
    try:
        proc.communicate(timeout=after_s if after_s is not None else 120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)  # reaped: its lock's pid is gone
    return int(proc.returncode)


def check_exactly_once(path: Path, *, complete: bool) -> None:
    """What readers see is each record and event once; with `complete`, all of them."""
    offsets = [r["offset"] for r in committed_rows(path, "metadata_log")]
    assert len(offsets) == len(set(offsets)), "a record exported twice"
    assert offsets == [] or sorted(offsets) == list(range(max(offsets) + 1)), "a gap"
    ids = [e["id"] for e in committed_rows(path, "audit_events")]
    assert len(ids) == len(set(ids)), "an audit event exported twice"
    if complete:
        assert sorted(offsets) == list(range(MetadataRecord.objects.count()))
        assert sorted(ids) == sorted(AuditEvent.objects.values_list("id", flat=True))


def test_runs_killed_at_random_points_and_rerun_export_everything_exactly_once(
    api: Any, tokens: dict[str, str], register: Any, tmp_path: Path
) -> None:
    day = Workload(api, tokens, register)
    day.phase_one()
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "wide", "num_partitions": 6_000, "replication_factor": 2}]},
        token=tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    path = tmp_path / "export"
    started = time.monotonic()
    assert run_and_kill(tmp_path / "scratch", after_s=None) == 0
    whole_run_s = time.monotonic() - started  # start-up included: kills land anywhere in it
    rng = random.Random(20261124)
    left_behind = 0  # kills that left files or staging a reader must not see
    plans: list[tuple[float | None, str]] = [(None, point) for point in FAILPOINTS]
    plans += [(rng.uniform(0.1, whole_run_s), "") for _ in range(8)]
    rng.shuffle(plans)
    for n, (after_s, point) in enumerate(plans):
        status = run_and_kill(path, after_s=after_s, failpoint=point)
        assert status in (0, -signal.SIGKILL), status
        storage = store.open_storage(str(path))
        if store.uncommitted_files(storage) or (path / store.TEMPORARY).exists():
            left_behind += 1
        check_exactly_once(path, complete=False)
        if n % 3 == 0:  # the cluster goes on between the runs
            day.configs("TOPIC", "payments", retention_ms=str(1_000_000 + n))
            day.denied()
    final = start_export(path)
    out, _ = final.communicate(timeout=120)
    assert final.returncode == 0, out
    check_exactly_once(path, complete=True)
    assert store.uncommitted_files(store.open_storage(str(path))) == []
    assert not (path / "_export/LOCK").exists()
    # Kills before any file or after a commit's clean-up leave nothing; these died mid-write.
    assert left_behind >= len(FAILPOINTS)
