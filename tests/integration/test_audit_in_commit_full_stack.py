"""The audit row survives a web node killed right after the controller's commit (issue 10):
real PostgreSQL, Redis, gunicorn and `run_controller`.

The web node is stopped after it sent the write on the request channel and before the
controller answered; the controller then commits, and the web node is killed -9 at once, before
it could read the answer or write anything. The write's audit row is there all the same: the
controller wrote it in the commit of the write's records.
"""

from __future__ import annotations

import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from controlplane.runtime.channel import IDLE_WAIT_S, REQUESTS
from devtools.stack import redis_url, running_stack, wait_for
from tests.conftest import need_service
from tests.integration.test_controller_full_stack import verify

pytestmark = pytest.mark.integration


def set_retention(value: int) -> dict[str, Any]:
    config = {"name": "log.retention.ms", "config_operation": "SET", "value": str(value)}
    return {"resources": [{"resource_type": "BROKER", "resource_name": "", "configs": [config]}]}


def test_the_audit_row_survives_a_web_node_killed_right_after_the_commit(tmp_path: Path) -> None:
    need_service("PostgreSQL", "127.0.0.1", 5432)
    need_service("Redis", "127.0.0.1", 6379)
    with running_stack(tmp_path / "logs", settings={"CP_CONTROLLER_LEASE_MS": "20000"}) as stack:
        stack.start_controller("controller", 3000)
        stack.wait_active("controller")
        http = stack.start_web(workers=1, threads=4)
        token = stack.tokens["admin"]
        status, _ = http.post("/api/v1/incremental-alter-configs", set_retention(1), token)
        assert status == 200  # the stack works end to end before the fault

        # Hold the controller until its channel read times out, so the write waits in the list.
        stack.kill("controller", signal.SIGSTOP)
        threading.Event().wait(IDLE_WAIT_S + 0.5)
        request_id = f"dies-{uuid.uuid4().hex[:8]}"
        answers: list[Any] = []

        def client() -> None:
            try:
                answers.append(
                    http.post(
                        "/api/v1/incremental-alter-configs",
                        set_retention(2),
                        token,
                        headers={"X-Request-ID": request_id},
                        timeout=60,
                    )
                )
            except Exception as error:  # the killed node resets the connection
                answers.append(error)

        sender = threading.Thread(target=client, daemon=True)
        sender.start()
        channel = redis.Redis.from_url(redis_url())
        requests_key = stack.key_prefix + REQUESTS
        wait_for(lambda: channel.llen(requests_key) >= 1, 30, "the write on the request channel")
        stack.kill("web", signal.SIGSTOP)
        stack.kill("controller", signal.SIGCONT)

        def committed() -> bool:
            rows = stack.sql("SELECT 1 FROM cp_metadata_record WHERE request_id = %s", request_id)
            return bool(rows)

        wait_for(committed, 30, "the controller to commit the write", every=0.02)
        stack.kill("web", signal.SIGKILL)  # right after the commit, before it could answer
        sender.join(timeout=30)
        assert answers and not (isinstance(answers[0], tuple) and answers[0][0] == 200)

        [(offset,)] = stack.sql(
            'SELECT "offset" FROM cp_metadata_record WHERE request_id = %s', request_id
        )
        rows = stack.sql(
            "SELECT api, principal, outcome, error_code, first_offset, last_offset"
            " FROM cp_audit_event WHERE request_id = %s",
            request_id,
        )
        assert rows == [("IncrementalAlterConfigs", "User:admin", "SUCCESS", 0, offset, offset)]
        verify(stack)
