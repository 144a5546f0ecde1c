"""Audit reports for the API and the UI: the PySpark job (`audit.spark.job`, the same one
`manage.py audit_report` and plain `spark-submit` run) over the latest export, in a process of
its own so that no web worker hosts a JVM; results are kept per export commit and parameters,
so asking again is instant and two askers share one run.

A report without `to` covers the export up to its last commit (not "now"), so the same export
always gives the same figures.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from django.conf import settings

from audit.spark import storage as store
from audit.spark.catalog import REPORT_NAMES

FORMATS = {"json": "json", "html": "html", "csv": "csv"}
RUN_TIMEOUT_S = 600
_building: dict[str, threading.Lock] = {}
_building_lock = threading.Lock()


class ReportError(Exception):
    """A report that cannot be made, said in words (bad parameters, no export, a failed job)."""


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
            _run_job(request.name, data, args, fmt, out)
    return out


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
