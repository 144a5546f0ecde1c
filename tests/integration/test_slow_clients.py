"""Issue 12's first defect, reproduced on the embedded default (`make run`: one process, SQLite,
the controller in-process, both listeners): 50 slow and half-open connections on the public
listener for 30 s. With gunicorn's gthread worker no request was answered and every broker was
fenced; now the brokers stay unfenced and every other request is answered. The latencies are
printed (the campaign report keeps the figure): no timed assertion here.

`CP_TEST_WORKER_CLASS=gthread` runs the same test on the old server, where it fails.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
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


def test_long_polls_hold_no_thread_and_chunked_bodies_are_read(tmp_path: Path) -> None:
    """20 metadata long-polls from one broker token (wait_ms up to 60 s) held a worker thread
    each; with 4 threads per listener the other requests now go on, and a chunked create-topics
    is read, not taken for an empty body."""
    worker_class = os.environ.get("CP_TEST_WORKER_CLASS", WORKER_CLASS)
    with embedded_server(
        tmp_path / "run", brokers=1, threads=4, topic=None, worker_class=worker_class
    ) as server:
        _, cluster = server.http.get("/api/v1/cluster", server.tokens["admin"])
        head = cluster["metadata_offset"] + 1000  # nothing will come: every poll waits its all
        polls = [
            threading.Thread(
                target=server.http.get,
                args=(f"/internal/v1/metadata?after_offset={head}&wait_ms=15000",),
                kwargs={"token": server.tokens["broker"], "timeout": 30},
                daemon=True,
            )
            for _ in range(20)
        ]
        for poll in polls:
            poll.start()
        time.sleep(1.0)  # every poll is waiting now
        started = time.monotonic()
        internal = probe(
            f"{server.internal}/internal/v1/metadata?after_offset=-1&max_records=1",
            server.tokens["broker"],
            seconds=3,
        )
        public = probe(f"{server.public}/api/v1/whoami", server.tokens["alice"], seconds=3)
        print(json.dumps({"internal": internal, "public": public}))
        assert internal["errors"] == 0 and set(internal["statuses"]) == {"200"}
        assert public["errors"] == 0 and set(public["statuses"]) == {"200"}
        assert time.monotonic() - started < 15  # answered while the polls still wait
        assert sum(poll.is_alive() for poll in polls) == 20

        body = json.dumps({"topics": [{"name": "chunked", "num_partitions": 1}]}).encode()
        host, port = server.public.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.request(
            "POST",
            "/api/v1/create-topics",
            body=iter([body[:10], body[10:]]),
            headers={
                "Authorization": f"Bearer {server.tokens['admin']}",
                "Content-Type": "application/json",
                "Transfer-Encoding": "chunked",
            },
            encode_chunked=True,
        )
        answer = connection.getresponse()
        created = json.loads(answer.read())
        assert answer.status == 200, created
        assert created["topics"][0]["name"] == "chunked"
