"""Benchmark: what a hostile frame costs the Kafka protocol listener.

A real `serve_kafka` (PLAINTEXT, ANONYMOUS) is sent a hostile request: a CreateAcls v3 of
150,000 creations (about 11.6 MB, far over the 10,000 items a request may hold). The listener
must refuse it from the list's announced length, before decoding anything: this measures the
time until it closes the connection and the listener's peak resident memory (VmHWM) before and
after, then checks that an ordinary request is still served.

    .venv/bin/python -m bench.wire_hostile_frame
Writes bench/results/wire_hostile_frame.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.verify import fail_unless_clean, verify_stack
from devtools.stack import BENCH_SETTINGS, PYTHON, free_port, running_stack, wait_for

RESULTS = Path(__file__).resolve().parent / "results"
CREATIONS = 150_000


def log(message: str) -> None:
    print(f"[bench-wire-hostile-frame] {message}", file=sys.stderr, flush=True)


def memory_mib(pid: int) -> dict[str, float]:
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = round(int(value.split()[0]) / 1024, 1)
    return fields


def hostile_frame() -> bytes:
    from kio.schema.create_acls.v3 import request as create_acls_v3
    from kio.static.primitive import i8

    from tests.wire.rawclient import encode_request

    creation = create_acls_v3.AclCreation(
        resource_type=i8(2),
        resource_name="t" * 60,
        resource_pattern_type=i8(3),
        principal="User:eve",
        host="*",
        operation=i8(3),
        permission_type=i8(3),
    )
    return encode_request(create_acls_v3.CreateAclsRequest(creations=(creation,) * CREATIONS))


def still_served(port: int) -> bool:
    from kio.schema.api_versions.v3 import request as api_versions_v3

    from tests.wire.rawclient import RawClient

    with RawClient("127.0.0.1", port) as client:
        answer = client.request(
            api_versions_v3.ApiVersionsRequest(
                client_software_name="bench", client_software_version="1"
            )
        )
    return int(answer.error_code) == 0


def main() -> None:
    frame = hostile_frame()
    with (
        tempfile.TemporaryDirectory(prefix="bench-hostile-") as logs,
        running_stack(Path(logs), settings=BENCH_SETTINGS) as stack,
    ):
        port = free_port()
        proc = stack.spawn(
            "serve_kafka",
            [PYTHON, "manage.py", "serve_kafka", "--listener", f"PLAINTEXT://127.0.0.1:{port}"],
        )

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_for(listening, 30, "serve_kafka to listen")
        assert still_served(port)
        before = memory_mib(proc.pid)
        log(f"sending a {len(frame) / 1e6:.1f} MB CreateAcls of {CREATIONS} creations")
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            sock.sendall(frame)
            closed = sock.recv(4) == b""
        elapsed = time.perf_counter() - started
        after = memory_mib(proc.pid)
        result: dict[str, Any] = {
            "frame_mb": round(len(frame) / 1e6, 1),
            "creations": CREATIONS,
            "closed_unanswered": closed,
            "seconds_to_close": round(elapsed, 3),
            "listener_mib_before": before,
            "listener_mib_after": after,
            "peak_growth_mib": round(after["VmHWM"] - before["VmHWM"], 1),
            "still_serves_others": still_served(port),
            "verify_metadata": verify_stack(stack),
        }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "wire_hostile_frame.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(result["verify_metadata"], "wire_hostile_frame")


if __name__ == "__main__":
    main()
