"""The audit export and report pages through Django's test client (issue 10): start an export,
follow it, refusals, the report page's bad input. Reports made by Spark: tests/spark."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditExport
from controlplane.runtime.lease import now_ms
from tests.audit_workload import Workload
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db(transaction=True)

EXPORTS = "/ui/audit/exports/"
REPORTS = "/ui/audit/reports/"


@pytest.fixture
def export_path(tmp_path: Path, settings: Any) -> Path:
    settings.CP_AUDIT_EXPORT_PATH = str(tmp_path / "audit")
    return tmp_path / "audit"


def finished(export_id: int, timeout: float = 60) -> AuditExport:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        export = AuditExport.objects.get(pk=export_id)
        if export.state in ("SUCCEEDED", "FAILED"):
            return export
        time.sleep(0.05)
    raise AssertionError(f"export {export_id} did not finish")


def test_an_operator_starts_an_export_and_follows_it(
    api: Any, tokens: dict[str, str], register: Any, export_path: Path
) -> None:
    Workload(api, tokens, register).phase_one()
    client = Client()
    ui_login(client, "admin", tokens["admin"])
    page = client.get(EXPORTS)
    assert page.status_code == 200 and b"No export yet" in page.content
    assert str(export_path).encode() in page.content
    answer = client.post(f"{EXPORTS}start/")
    assert answer.status_code == 302 and answer["Location"] == EXPORTS
    export = finished(AuditExport.objects.get().pk)
    assert export.state == "SUCCEEDED" and export.requested_by == "User:admin"
    page = client.get(EXPORTS).content.decode()
    assert f'data-export-id="{export.pk}" data-state="SUCCEEDED"' in page
    assert f"metadata_log: {export.rows['metadata_log']}" in page
    reports = client.get(REPORTS).content.decode()
    assert "export commit 1" in reports and 'data-testid="report-state-at"' in reports


def test_the_progress_of_an_export_under_way_is_shown(
    tokens: dict[str, str], export_path: Path
) -> None:
    AuditExport.objects.create(
        path=str(export_path),
        requested_by="User:admin",
        state="RUNNING",
        created_ms=now_ms(),
        progress={
            "phase": "exporting",
            "dataset": "metadata_log",
            "rows_done": 250_000,
            "rows_total": 1_000_000,
            "percent": 25.0,
            "rows_per_second": 125_000.0,
            "eta_seconds": 6.0,
            "updated_ms": now_ms(),
        },
    )
    client = Client()
    ui_login(client, "admin", tokens["admin"])
    page = client.get(EXPORTS).content.decode()
    assert '<progress max="100" value="25"' in page
    assert "exporting: 250000 / 1000000 rows (25%), 125000 rows/s, ETA 6 s" in page
    assert "data-refresh" in page  # the page follows it


def test_a_principal_without_alter_on_the_cluster_cannot_start_one(
    tokens: dict[str, str], export_path: Path
) -> None:
    from controlplane.runtime.lease import cluster_get_or_create

    cluster_get_or_create()
    api_client = Client()
    ui_login(api_client, "admin", tokens["admin"])
    from tests.conftest import Api

    Api(api_client).post(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "CLUSTER",
                    "resource_name": "kafka-cluster",
                    "pattern_type": "LITERAL",
                    "principal": "User:alice",
                    "host": "*",
                    "operation": "DESCRIBE",
                    "permission_type": "ALLOW",
                }
            ]
        },
        token=tokens["admin"],
    )
    client = Client()
    ui_login(client, "alice", tokens["alice"])
    page = client.get(EXPORTS)
    assert page.status_code == 200 and b"Export now" not in page.content
    refused = client.post(f"{EXPORTS}start/")
    assert refused.status_code == 403 and b"ALTER on the cluster" in refused.content
    assert not AuditExport.objects.exists()


def test_reports_without_an_export_and_with_bad_input_say_so(
    tokens: dict[str, str], export_path: Path
) -> None:
    client = Client()
    ui_login(client, "admin", tokens["admin"])
    assert b"No export yet" in client.get(REPORTS).content
    unknown = client.get(f"{REPORTS}no-such-report/")
    assert unknown.status_code == 404 and b"No report named" in unknown.content
    bad_time = client.get(f"{REPORTS}state-at/", {"at": "yesterday"})
    assert bad_time.status_code == 400 and b"neither ISO 8601" in bad_time.content
    no_export = client.get(f"{REPORTS}admin-activity/")
    assert no_export.status_code == 400 and b"No export at" in no_export.content


def test_the_export_list_costs_the_same_queries_however_many_exports(
    tokens: dict[str, str], export_path: Path
) -> None:
    client = Client()
    ui_login(client, "admin", tokens["admin"])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(EXPORTS).status_code == 200
        return len(captured)

    def add(n: int) -> None:
        AuditExport.objects.bulk_create(
            AuditExport(
                path=str(export_path), requested_by="User:admin", state="SUCCEEDED", created_ms=i
            )
            for i in range(n)
        )

    add(2)
    queries()  # caches warm (the principal's ACLs)
    few = queries()
    add(40)
    assert queries() == few
