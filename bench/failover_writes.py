"""Benchmark: admin writes through a controller failover, on the real stack.

PostgreSQL, Redis, gunicorn (1 worker x 8 threads), two `run_controller` (one active, one hot
standby). `--writers` admin clients create ACLs through the REST API back to back (each a commit
of its own or a share of one); each round kills the active controller with SIGKILL while they
write, waits `--after` seconds, and starts the killed one again as the standby. Per round: the
slowest write sent from just before the kill on, the writes answered and their status codes (-1:
answered, but not applied). A write the dead controller took with it is retried by its web node
with the same request id; how soon is what this measures (controlplane/runtime/channel.py).
`verify_metadata` runs at the end.

    .venv/bin/python -m bench.failover_writes [--rounds 4] [--writers 4] [--after 8]
Writes bench/results/failover_writes.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.replica_state import bearer_client
from bench.verify import fail_unless_clean, verify_stack
from devtools.stack import BENCH_SETTINGS, Stack, running_stack

RESULTS = Path(__file__).resolve().parent / "results"
CONTROLLER_ID = 3000
BEFORE_KILL_S = 2.0  # writing before each kill
SENT_BEFORE_KILL_S = 0.5  # writes sent this long before the kill count as the round's


def log(message: str) -> None:
    print(f"[bench-failover-writes] {message}", file=sys.stderr, flush=True)


class Writers:
    """`count` admin clients creating ACLs back to back, each write's (sent at, seconds, status)
    kept."""

    def __init__(self, stack: Stack, base: str, count: int, prefix: str) -> None:
        self.stack, self.base, self.prefix = stack, base, prefix
        self.writes: list[tuple[float, float, int]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(k,)) for k in range(count)]
        for thread in self._threads:
            thread.start()

    def _write(self, writer: int) -> None:
        with bearer_client(self.base, self.stack.tokens["admin"], timeout_s=60) as http:
            sent = 0
            while not self._stop.is_set():
                acl = {
                    "resource_type": "TOPIC",
                    "resource_name": f"{self.prefix}-{writer}-{sent}",
                    "pattern_type": "LITERAL",
                    "principal": "User:bench",
                    "host": "*",
                    "operation": "READ",
                    "permission_type": "ALLOW",
                }
                began = time.monotonic()
                answer = http.post("/api/v1/create-acls", json={"creations": [acl]})
                took = time.monotonic() - began
                applied = answer.status_code == 200 and all(
                    r["error_code"] == 0 for r in answer.json()["results"]
                )
                self.writes.append((began, took, answer.status_code if applied else -1))
                sent += 1

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=90)


def one_round(stack: Stack, base: str, args: argparse.Namespace, number: int) -> dict[str, Any]:
    active = "controller" if number % 2 == 0 else "standby"
    writers = Writers(stack, base, args.writers, f"round{number}")
    try:
        time.sleep(BEFORE_KILL_S)
        killed = time.monotonic()
        stack.kill(active)
        time.sleep(args.after)
    finally:
        writers.stop()
    around = [w for w in writers.writes if w[0] >= killed - SENT_BEFORE_KILL_S]
    seconds = [w[1] for w in around]
    figures = {
        "killed": active,
        "slowest_write_s": round(max(seconds), 3),
        "median_write_ms": round(statistics.median(seconds) * 1000, 1),
        "writes_after_kill": len(around),
        "status_codes": sorted({w[2] for w in writers.writes}),
    }
    log(f"round {number}: killed {active}; {figures}")
    stack.start_controller(active, CONTROLLER_ID)  # back, as the standby
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.failover_writes", description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--after", type=float, default=8.0, help="seconds written after a kill")
    parser.add_argument("--logs", default=None, help="keep the stack's logs here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-failover-writes-") as scratch:
        logs = Path(args.logs or scratch)
        with running_stack(logs / "stack", settings=dict(BENCH_SETTINGS)) as stack:
            web = stack.start_web(workers=1, threads=8)
            stack.start_controller("controller", CONTROLLER_ID)
            stack.wait_active("controller")
            stack.start_controller("standby", CONTROLLER_ID)
            rounds = []
            for number in range(args.rounds):
                time.sleep(3)  # the restarted controller follows the log as a standby
                rounds.append(one_round(stack, web.base, args, number))
            verdict = verify_stack(stack)
    slowest = [r["slowest_write_s"] for r in rounds]
    result = {
        "setup": {"writers": args.writers, "web": "1 worker x 8 threads", "controllers": 2},
        "rounds": rounds,
        "slowest_write_s": {"median": statistics.median(slowest), "max": max(slowest)},
        "verify_metadata": verdict,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "failover_writes.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(verdict, "failover_writes")


if __name__ == "__main__":
    main()
