"""The export on the full stack (issue 10): real PostgreSQL, Redis, gunicorn, `run_controller`,
a Celery worker and Celery beat. Beat exports periodically; POST /api/v1/audit-exports on a
web node starts an export that the worker runs, followed over HTTP to its end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtools.stack import Http, running_stack, wait_for
from tests.audit_files import committed_rows
from tests.conftest import need_service
from tests.integration.test_controller_full_stack import verify

pytestmark = pytest.mark.integration


def exports(http: Http, token: str) -> list[dict[str, Any]]:
    status, body = http.get("/api/v1/audit-exports", token)
    assert status == 200, body
    return list(body["results"])


def test_beat_exports_periodically_and_the_worker_runs_an_export_started_over_http(
    tmp_path: Path,
) -> None:
    need_service("PostgreSQL", "127.0.0.1", 5432)
    need_service("Redis", "127.0.0.1", 6379)
    export_path = tmp_path / "audit"
    settings = {
        "CP_AUDIT_EXPORT_PATH": str(export_path),
        "CP_AUDIT_EXPORT_INTERVAL_SECONDS": "4",
    }
    with running_stack(tmp_path / "logs", settings=settings) as stack:
        stack.start_controller("controller", 3000)
        stack.wait_active("controller")
        http = stack.start_web(workers=1, threads=4)
        stack.start_worker()
        token = stack.tokens["admin"]
        for n in range(5):
            config = {"name": "log.retention.ms", "config_operation": "SET", "value": str(n + 1)}
            body = {
                "resources": [{"resource_type": "BROKER", "resource_name": "", "configs": [config]}]
            }
            assert http.post("/api/v1/incremental-alter-configs", body, token)[0] == 200

        status, started = http.post("/api/v1/audit-exports", {}, token)
        assert status == 202, started

        def finished() -> dict[str, Any] | None:
            answer = http.get(f"/api/v1/audit-exports/{started['id']}", token)[1]
            return answer if answer["state"] in ("SUCCEEDED", "FAILED") else None

        done = wait_for(finished, 120, "the worker to run the export")
        assert done["state"] == "SUCCEEDED", done
        assert done["commit"] == 1 and done["progress"]["percent"] == 100.0
        [(records,)] = stack.sql("SELECT count(*) FROM cp_metadata_record")
        [(events,)] = stack.sql("SELECT count(*) FROM cp_audit_event")
        assert done["rows"] == {"metadata_log": records, "audit_events": events}
        assert len(committed_rows(export_path, "metadata_log")) == records

        # Beat: the periodic export, as the controller, picks up what came since.
        assert http.post("/api/v1/incremental-alter-configs", body, token)[0] == 200
        stack.start_beat()
        periodic = wait_for(
            lambda: [
                e
                for e in exports(http, token)
                if e["requested_by"] == "User:controller" and e["state"] == "SUCCEEDED"
            ],
            120,
            "beat's periodic export",
        )
        assert periodic[0]["commit"] == 2
        [(records,)] = stack.sql("SELECT count(*) FROM cp_metadata_record")
        offsets = sorted(r["offset"] for r in committed_rows(export_path, "metadata_log"))
        assert offsets == list(range(records))
        ids = sorted(e["id"] for e in committed_rows(export_path, "audit_events"))
        assert ids == [row[0] for row in stack.sql("SELECT id FROM cp_audit_event ORDER BY id")]
        verify(stack)
