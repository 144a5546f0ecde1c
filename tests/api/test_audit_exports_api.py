"""POST /api/v1/audit-exports and following it (issue 10): a background export with its
progress, authorized as the contract says; the periodic export; bad input."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from audit import services
from audit.models import AuditExport
from controlplane.models import MetadataRecord
from controlplane.runtime.lease import now_ms
from tests.audit_files import committed_rows
from tests.audit_workload import Workload

pytestmark = pytest.mark.django_db(transaction=True)

EXPORTS = "/api/v1/audit-exports"


@pytest.fixture
def export_path(tmp_path: Path, settings: Any) -> Path:
    settings.CP_AUDIT_EXPORT_PATH = str(tmp_path / "audit")
    return tmp_path / "audit"


@pytest.fixture
def workload(api: Any, tokens: dict[str, str], register: Any) -> Workload:
    day = Workload(api, tokens, register)
    day.phase_one()
    return day


def follow(api: Any, token: str, export_id: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = api.get(f"{EXPORTS}/{export_id}", token=token)
        assert status == 200, body
        if body["state"] in ("SUCCEEDED", "FAILED"):
            return dict(body)
        time.sleep(0.05)
    raise AssertionError(f"export {export_id} did not finish: {body}")


def test_an_export_runs_in_the_background_and_shows_its_progress(
    api: Any, tokens: dict[str, str], workload: Workload, export_path: Path
) -> None:
    status, started = api.post(EXPORTS, {}, token=tokens["admin"])
    assert status == 202, started
    assert {"id", "state", "progress"} <= set(started)
    assert started["state"] in ("PENDING", "RUNNING", "SUCCEEDED")
    done = follow(api, tokens["admin"], started["id"])
    assert done["state"] == "SUCCEEDED", done
    assert done["commit"] == 1 and done["requested_by"] == "User:admin"
    records = MetadataRecord.objects.count()
    assert done["rows"]["metadata_log"] == records
    progress = done["progress"]
    assert progress["phase"] == "done" and progress["percent"] == 100.0
    assert progress["rows_done"] == progress["rows_total"] == sum(done["rows"].values())
    assert progress["rows_per_second"] > 0 and progress["eta_seconds"] == 0.0
    assert len(committed_rows(export_path, "metadata_log")) == records
    status, listed = api.get(EXPORTS, token=tokens["admin"])
    assert status == 200 and listed["results"][0]["id"] == started["id"]


def test_exports_are_authorized_as_the_contract_says(
    api: Any, tokens: dict[str, str], workload: Workload, export_path: Path
) -> None:
    assert api.post(EXPORTS, {}, token=tokens["alice"])[0] == 403
    status, body = api.post(EXPORTS, {}, token=tokens["broker"])  # a broker never writes here
    assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    assert api.get(EXPORTS, token=tokens["alice"])[0] == 403
    assert api.post(EXPORTS, {}, token=None)[0] == 401
    assert not AuditExport.objects.exists()


@pytest.mark.parametrize(
    "body",
    [{"path": "/etc"}, [], "x", {"to": "s3a://elsewhere"}],
    ids=["path", "list", "str", "to"],
)
def test_an_export_takes_no_parameters(
    api: Any, tokens: dict[str, str], export_path: Path, body: Any
) -> None:
    status, answer = api.post(EXPORTS, body, token=tokens["admin"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    assert not AuditExport.objects.exists()


def test_an_unknown_export_is_404(api: Any, tokens: dict[str, str]) -> None:
    status, body = api.get(f"{EXPORTS}/999999", token=tokens["admin"])
    assert status == 404 and body["error_code"] == 42


def test_a_second_request_follows_the_export_under_way_and_a_stalled_one_is_failed(
    api: Any, tokens: dict[str, str], export_path: Path
) -> None:
    running = AuditExport.objects.create(
        path=str(export_path),
        requested_by="User:admin",
        state="RUNNING",
        created_ms=now_ms(),
        started_ms=now_ms(),
        progress={"phase": "exporting", "updated_ms": now_ms()},
    )
    status, body = api.post(EXPORTS, {}, token=tokens["admin"])
    assert status == 202 and body["id"] == running.pk
    AuditExport.objects.filter(pk=running.pk).update(
        progress={"phase": "exporting", "updated_ms": now_ms() - services.STALLED_MS - 1}
    )
    status, body = api.post(EXPORTS, {}, token=tokens["admin"])
    assert status == 202 and body["id"] != running.pk
    running.refresh_from_db()
    assert running.state == "FAILED" and "stopped" in running.message
    assert follow(api, tokens["admin"], body["id"])["state"] == "SUCCEEDED"


def test_a_failed_export_says_why(
    api: Any, tokens: dict[str, str], workload: Workload, tmp_path: Path, settings: Any
) -> None:
    (tmp_path / "file").write_text("")
    settings.CP_AUDIT_EXPORT_PATH = str(tmp_path / "file" / "audit")
    status, body = api.post(EXPORTS, {}, token=tokens["admin"])
    assert status == 202
    done = follow(api, tokens["admin"], body["id"])
    assert done["state"] == "FAILED" and "Cannot write to the export path" in done["message"]


def test_the_periodic_export_runs_as_the_controller(workload: Workload, export_path: Path) -> None:
    assert services.audit_export_periodic() == "SUCCEEDED"
    export = AuditExport.objects.get()
    assert export.requested_by == "User:controller" and export.commit == 1
    assert services.audit_export_periodic() == "SUCCEEDED"  # nothing new: no second commit
    assert AuditExport.objects.first().commit is None
