"""Report builds are bounded (issue 34: four reports asked at once started four Spark JVMs,
about 2 GB, each 85 s instead of 18.6 s): one build at a time per host by default, a bounded
number of askers waiting, 429 with Retry-After past it, and a bounded cache of built reports.
The Spark job itself is replaced by a stand-in that writes its file: what is tested is the
bound around it (the job is tested in tests/spark)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from audit import reports

pytestmark = pytest.mark.django_db


@pytest.fixture
def builds(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    settings.CP_AUDIT_REPORTS_PATH = str(tmp_path / "reports")
    settings.CP_AUDIT_REPORT_BUILDS = 1
    settings.CP_AUDIT_REPORT_QUEUE = 1
    state: dict[str, Any] = {"running": 0, "most": 0, "release": threading.Event()}
    lock = threading.Lock()

    def job(name: str, data: str, args: list[str], fmt: str, out: Path) -> None:
        with lock:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        state["release"].wait(timeout=20)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("[]")
        with lock:
            state["running"] -= 1

    monkeypatch.setattr(reports, "_run_job", job)
    monkeypatch.setattr(
        reports, "latest_export", lambda path=None: {"commit": 7, "committed_ms": 0}
    )
    return state


def ask(name: str, from_ms: int, errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            reports.audit_report(reports.ReportRequest(name, from_ms=from_ms))
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_one_build_at_a_time_one_waiting_and_the_rest_told_429(
    builds: dict[str, Any], api: Any, tokens: dict[str, str]
) -> None:
    name = reports.REPORT_NAMES[0]
    errors: list[BaseException] = []
    first = ask(name, 1, errors)
    deadline = time.monotonic() + 10
    while builds["running"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    second = ask(name, 2, errors)  # other parameters: waits for the slot
    time.sleep(0.3)
    assert builds["running"] == 1 and not errors
    # A third asker finds the queue full: told to come back, at once.
    status, answer = api.get(f"/api/v1/audit-reports/{name}?from=3", token=tokens["admin"])
    assert status == 429, answer
    assert answer["error"] == "THROTTLING_QUOTA_EXCEEDED"
    builds["release"].set()
    first.join(timeout=20)
    second.join(timeout=20)
    assert not errors
    assert builds["most"] == 1  # never two JVMs at once


def test_built_reports_are_kept_for_the_latest_two_export_commits(tmp_path: Path) -> None:
    root = tmp_path / "reports"
    for commit in (1, 2, 3):
        folder = root / f"{commit:010d}"
        folder.mkdir(parents=True)
        (folder / "r.json").write_text("[]")
    (root / ".build-slots").mkdir()
    reports._prune(root / f"{3:010d}")
    assert sorted(p.name for p in root.iterdir()) == [".build-slots", "0000000002", "0000000003"]
