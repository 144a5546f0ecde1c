"""Issue 12's first defect, reproduced on the embedded default (`make run`: one process, SQLite,
the controller in-process, both listeners): 50 slow and half-open connections on the public
listener for 30 s. With gunicorn's gthread worker no request was answered and every broker was
fenced; now the brokers stay unfenced and every other request is answered. The latencies are
printed (the campaign report keeps the figure): no timed assertion here.

`CP_TEST_WORKER_CLASS=gthread` runs the same test on the old server, where it fails.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from devtools.embedded import embedded_server
from devtools.slow_clients import SlowClients, probe
from devtools.stack import WORKER_CLASS

pytestmark = pytest.mark.integration

ATTACK_S = 30.0
BROKERS = 6


def fencings_since(server: Any, offset: int) -> list[dict[str, Any]]:
    """BrokerRegistrationChangeRecords that fenced a broker after `offset`."""
    path = f"/api/v1/metadata-log?type=BrokerRegistrationChangeRecord&offset_min={offset + 1}"
    status, page = server.http.get(f"{path}&page_size=1000", server.tokens["admin"])
    assert status == 200, page
    return [r for r in page["results"] if r["data"].get("fenced") == 1]


def test_fifty_slow_connections_neither_freeze_the_server_nor_fence_the_brokers(
    tmp_path: Path,
) -> None:
    worker_class = os.environ.get("CP_TEST_WORKER_CLASS", WORKER_CLASS)
    with embedded_server(
        tmp_path / "run", brokers=BROKERS, threads=16, worker_class=worker_class
    ) as server:
        _, cluster = server.http.get("/api/v1/cluster", server.tokens["admin"])
        offset = cluster["metadata_offset"]
        host, port = server.public.removeprefix("http://").split(":")
        others: dict[str, Any] = {}

        def probe_internal() -> None:
            others["internal"] = probe(
                f"{server.internal}/internal/v1/metadata?after_offset={offset}&max_records=1",
                server.tokens["broker"],
                seconds=ATTACK_S,
            )

        with SlowClients(host, int(port), count=50, interval_s=5.0) as attack:
            internal = threading.Thread(target=probe_internal)
            internal.start()
            public = probe(
                f"{server.public}/api/v1/whoami", server.tokens["alice"], seconds=ATTACK_S
            )
            internal.join()
            held = attack.summary()
        print(json.dumps({"attack": held, "public": public, "internal": others["internal"]}))

        assert public["errors"] == 0 and public["statuses"] == {"200": public["requests"]}
        assert others["internal"]["errors"] == 0
        assert set(others["internal"]["statuses"]) == {"200"}
        assert held["closed_by_the_server"] >= 50  # the header deadline let go of every one
        assert fencings_since(server, offset) == []
        assert server.brokers_unfenced() == BROKERS
