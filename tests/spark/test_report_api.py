"""Reports over HTTP (issue 10): GET /api/v1/audit-reports/{name} and the UI's HTML and CSV,
each running the real job (`python -m audit.spark.job`, its own JVM) over the latest export,
kept per export commit and parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit import reports as web_reports
from audit.spark import storage as store
from audit.spark.params import Params
from audit.spark.render import rows_collect
from audit.spark.reports import REPORTS, report_build
from tests.conftest import Api
from tests.spark.conftest import Day
from tests.ui.conftest import ui_login

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def served(day: Day, settings: Any, tmp_path: Path) -> Path:
    settings.CP_AUDIT_EXPORT_PATH = str(day.export)
    settings.CP_AUDIT_REPORTS_PATH = str(tmp_path / "made")
    return tmp_path / "made"


def test_the_web_side_knows_every_report_the_jobs_have() -> None:
    assert tuple(REPORTS) == web_reports.REPORT_NAMES


def test_a_report_over_http_is_the_jobs_rows_made_once(
    day: Day, export: Any, served: Path, tokens: dict[str, str], api: Api
) -> None:
    commit = store.latest_commit(store.open_storage(str(day.export)))
    assert commit is not None
    status, body = api.get("/api/v1/audit-reports/forwarding", token=tokens["admin"])
    assert status == 200, body
    assert body["name"] == "forwarding" and body["export_commit"] == commit["commit"]
    expected = rows_collect(
        report_build("forwarding", export, Params(to_ms=int(commit["committed_ms"])))
    )
    assert body["rows"] == json.loads(json.dumps(expected)) and body["count"] == len(expected)
    assert body["count"] > 0
    made = sorted(served.rglob("*.json"))
    assert len(made) == 1
    again = api.get("/api/v1/audit-reports/forwarding", token=tokens["admin"])
    assert again == (200, body) and sorted(served.rglob("*.json")) == made  # kept, not re-run


def test_bad_report_requests_are_refused_clearly(
    served: Path, tokens: dict[str, str], api: Api
) -> None:
    status, body = api.get("/api/v1/audit-reports/no-such", token=tokens["admin"])
    assert status == 404 and "reports:" in body["error_message"]
    status, body = api.get("/api/v1/audit-reports/state-at?at=soon", token=tokens["admin"])
    assert status == 400 and "neither ISO 8601" in body["error_message"]
    status, body = api.get("/api/v1/audit-reports/forwarding?at=0", token=tokens["admin"])
    assert status == 400 and "state-at" in body["error_message"]
    assert api.get("/api/v1/audit-reports/forwarding", token=tokens["alice"])[0] == 403
    assert not list(served.rglob("*.json"))


def test_the_ui_serves_a_reports_html_sandboxed_and_its_csv(
    day: Day, served: Path, tokens: dict[str, str]
) -> None:
    client = Client()
    ui_login(client, "admin", tokens["admin"])
    page = client.get("/ui/audit/reports/", {})
    assert b'data-testid="report-state-at"' in page.content
    at = str(day.moment.at_ms)
    answer = client.get("/ui/audit/reports/state-at/", {"at": at, "format": "html"})
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/html")
    policy = answer["Content-Security-Policy"]
    assert "sandbox allow-scripts" in policy and "default-src 'none'" in policy
    text = answer.content.decode()
    assert "Chart.js v4" in text and "orders" in text
    assert all(secret not in text for secret in day.secrets)
    csv = client.get("/ui/audit/reports/state-at/", {"at": at, "format": "csv"})
    assert csv.status_code == 200 and csv["Content-Disposition"].endswith('state-at.csv"')
    assert (
        csv.content.decode()
        .splitlines()[0]
        .startswith(
            "kind,resource_type,resource_name,key_or_principal,value_or_operation,permission_type"
        )
    )
