"""Audit reports for the API and the UI: the PySpark job (`audit.spark.job`, the same one
`manage.py audit_report` and plain `spark-submit` run) over the latest export, in a process of
its own so that no web worker hosts a JVM; results are kept per export commit and parameters,
so asking again is instant and two askers share one run.

A report without `to` covers the export up to its last commit (not "now"), so the same export
always gives the same figures.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from audit.spark import storage as store
from audit.spark.catalog import REPORT_NAMES

FORMATS = {"json": "json", "html": "html", "csv": "csv"}
RUN_TIMEOUT_S = 600
_building: dict[str, threading.Lock] = {}
_building_lock = threading.Lock()


class ReportError(Exception):
    """A report that cannot be made, said in words (bad parameters, no export, a failed job)."""


class ReportBusy(ReportError):
    """Too many reports are being built or wait to be: ask again after `retry_after_s`
    (THROTTLING_QUOTA_EXCEEDED, HTTP 429 with Retry-After)."""

    retry_after_s = 10


@dataclasses.dataclass(frozen=True, slots=True)
class ReportRequest:
    name: str
    from_ms: int | None = None
    to_ms: int | None = None
    at_ms: int | None = None

    def args(self, commit: dict[str, Any]) -> list[str]:
        to_ms = self.to_ms if self.to_ms is not None else int(commit["committed_ms"])
        args = ["--to", str(to_ms)]
        if self.from_ms is not None:
            args += ["--from", str(self.from_ms)]
        if self.at_ms is not None:
            args += ["--at", str(self.at_ms)]
        return args


def latest_export(path: str | None = None) -> dict[str, Any]:
    """The latest commit of the export at `path` (default CP_AUDIT_EXPORT_PATH)."""
    target = path or str(settings.CP_AUDIT_EXPORT_PATH)
    if store.is_uri(target):
        raise ReportError(f"Reports from the API read a local export; {target} is a URI.")
    commit = store.latest_commit(store.open_storage(target))
    if commit is None:
        raise ReportError(f"No export at {target} yet: start one (POST /api/v1/audit-exports).")
    return commit


def audit_report(request: ReportRequest, *, fmt: str = "json") -> Path:
    """The report's file for the latest export: made now, or the one made before."""
    if request.name not in REPORT_NAMES:
        raise ReportError(f"Unknown report {request.name!r}; known: {', '.join(REPORT_NAMES)}.")
    data = str(settings.CP_AUDIT_EXPORT_PATH)
    commit = latest_export(data)
    args = request.args(commit)
    key = hashlib.sha256(json.dumps([request.name, args, fmt]).encode()).hexdigest()[:16]
    out = Path(
        settings.CP_AUDIT_REPORTS_PATH,
        f"{int(commit['commit']):010d}",
        f"{request.name}-{key}.{FORMATS[fmt]}",
    )
    with _lock_for(str(out)):
        if not out.exists():
            with build_slot():
                _run_job(request.name, data, args, fmt, out)
            _prune(out.parent)
    return out


# --- bounds: a Spark JVM per build is about half a GiB and a core ----------------------------
# Unbounded, four reports asked at once with different parameters would start four JVMs (about
# 2 GB), each taking 85 s instead of 18.6 s and holding a listener thread. Builds take one of
# CP_AUDIT_REPORT_BUILDS slots, file locks beside the reports, so the bound holds across every
# process of the host; past CP_AUDIT_REPORT_QUEUE askers waiting in this process, an asker is
# told to come back (429). Built reports are kept for the latest two export commits, at most
# REPORTS_KEPT files each.
REPORTS_KEPT = 100
_waiting = 0
_waiting_lock = threading.Lock()


@contextlib.contextmanager
def build_slot() -> Iterator[None]:
    """Hold one of the host's build slots while building; ReportBusy when too many wait."""
    global _waiting
    with _waiting_lock:
        if _waiting >= settings.CP_AUDIT_REPORT_QUEUE:
            raise ReportBusy(
                f"{_waiting} reports are waiting to be built; ask again in "
                f"{ReportBusy.retry_after_s} s."
            )
        _waiting += 1
    try:
        slot = _slot_taken(time.monotonic() + RUN_TIMEOUT_S)
    finally:
        with _waiting_lock:
            _waiting -= 1
    try:
        yield
    finally:
        fcntl.flock(slot, fcntl.LOCK_UN)
        slot.close()


def _slot_taken(deadline: float) -> IO[str]:
    """A slot file, locked (a lock the kernel drops should this process die)."""
    slots = Path(settings.CP_AUDIT_REPORTS_PATH, ".build-slots")
    slots.mkdir(parents=True, exist_ok=True)
    while True:
        for index in range(max(1, settings.CP_AUDIT_REPORT_BUILDS)):
            handle = open(slots / f"slot-{index}", "a")  # noqa: SIM115 (held while building)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            return handle
        if time.monotonic() > deadline:
            raise ReportBusy("No report build slot freed in time; ask again later.")
        time.sleep(0.2)


def _prune(commit_dir: Path) -> None:
    """Keep the reports of the latest two export commits, at most REPORTS_KEPT each."""
    root = commit_dir.parent
    commits = sorted(p for p in root.iterdir() if p.is_dir() and p.name.isdigit())
    for old in commits[:-2]:
        shutil.rmtree(old, ignore_errors=True)
    made = sorted((p for p in commit_dir.iterdir() if p.is_file()), key=lambda p: p.stat().st_mtime)
    for old_report in made[:-REPORTS_KEPT]:
        old_report.unlink(missing_ok=True)


def audit_report_rows(request: ReportRequest) -> dict[str, Any]:
    rows = json.loads(audit_report(request, fmt="json").read_text())
    commit = latest_export()
    return {
        "name": request.name,
        "export_commit": commit["commit"],
        "parameters": {"from": request.from_ms, "to": request.to_ms, "at": request.at_ms},
        "count": len(rows),
        "rows": rows,
    }


def _lock_for(key: str) -> threading.Lock:
    with _building_lock:
        return _building.setdefault(key, threading.Lock())


def _run_job(name: str, data: str, args: list[str], fmt: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "audit.spark.job", name, "--data", data, *args]
    command += ["--format", fmt, "--out", str(out), "--master", settings.CP_SPARK_MASTER]
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    try:
        done = subprocess.run(
            command,
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ReportError(f"The {name} report did not finish within {RUN_TIMEOUT_S} s.") from None
    if done.returncode != 0 or not out.exists():
        lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        problem = lines[-1].removeprefix("error:").strip() if lines else "the Spark job failed"
        raise ReportError(f"The {name} report could not be made: {problem}")
