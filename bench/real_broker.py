"""Benchmark: a stock Apache Kafka broker's time from process start to registered, caught up and
unfenced under this control plane; then `kill -9` to fenced, and a restart to unfenced again.

The real stack: PostgreSQL, Redis, gunicorn, one `run_controller`, one `serve_kafka` with a
CONTROLLER listener (SASL_PLAINTEXT). Each run starts one broker of the pinned Kafka jars
(stock_kafka.broker: `process.roles=broker`, a 256 MiB heap, a fresh log dir formatted with
this cluster's id) as the broker principal, and polls the REST API (`GET /api/v1/brokers/ID`,
every 50 ms) and the broker's own log from the moment its JVM is started:

- `format_s`: `StorageTool format` (a JVM of its own, before the broker's);
- `registered_s`: the controller has its registration (REST: the broker exists);
- `caught_up_s`: the broker logs that the controller found it caught up (IsCaughtUp);
- `unfenced_s`: REST says UNFENCED (null when it never was within `--timeout`);
- `server_started_s`: the broker logs "Kafka Server started" (its client listener is open);
- `fenced_after_kill_s`: from `kill -9` to REST saying FENCED (the session timeout, lowered to
  `--session-timeout-ms` for the stack);
- `restart_unfenced_s`: the same broker (same log dir: a new incarnation) from its restart to
  UNFENCED again.

    .venv/bin/python -m bench.real_broker [--runs 3]
Writes bench/results/real_broker.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.replica_state import bearer_client
from devtools.real_brokers import start_controller_listener
from devtools.stack import BENCH_SETTINGS, Stack, running_stack
from stock_kafka import jars as kafka
from stock_kafka.broker import STARTED, KafkaBroker

RESULTS = Path(__file__).resolve().parent / "results"
POLL_S = 0.05
CAUGHT_UP = r"The broker has caught up"
MILESTONES = (
    "registered_s",
    "caught_up_s",
    "unfenced_s",
    "server_started_s",
    "fenced_after_kill_s",
    "restart_unfenced_s",
)


def log(message: str) -> None:
    print(f"[bench-real-broker] {message}", file=sys.stderr, flush=True)


def broker_state(http: httpx.Client, node_id: int) -> tuple[str, str] | None:
    """REST's (state, incarnation id) of the broker (state FENCED, UNFENCED, ...), None while
    it is not registered."""
    answer = http.get(f"/api/v1/brokers/{node_id}")
    if answer.status_code != 200:
        return None
    body = answer.json()
    return str(body["state"]), str(body["incarnation_id"])


def in_state(http: httpx.Client, node_id: int, state: str, other_than: str = "") -> bool:
    """REST says the broker is in `state`, as an incarnation other than `other_than`."""
    found = broker_state(http, node_id)
    return found is not None and found[0] == state and found[1] != other_than


def watch(
    broker: KafkaBroker,
    since: float,
    checks: dict[str, Callable[[], bool]],
    timeout: float,
    *,
    alive: bool = True,
) -> dict[str, float | None]:
    """Seconds from `since` (monotonic) to each check first holding, polled together every
    POLL_S until all hold or `timeout` (or the broker, `alive`, exits); None for a check that
    never held."""
    seen: dict[str, float | None] = dict.fromkeys(checks)
    deadline = since + timeout
    while time.monotonic() < deadline and any(value is None for value in seen.values()):
        for name, check in checks.items():
            if seen[name] is None and check():
                seen[name] = round(time.monotonic() - since, 3)
        if alive and broker.process is not None and broker.process.poll() is not None:
            code = broker.process.returncode
            log(f"broker {broker.node_id} exited {code}:\n{broker.log_tail(30)}")
            break
        time.sleep(POLL_S)
    return seen


def in_log(broker: KafkaBroker, pattern: str) -> Callable[[], bool]:
    import re

    compiled = re.compile(pattern)
    return lambda: compiled.search(broker.output()) is not None


def one_run(
    stack: Stack, http: httpx.Client, port: int, cluster_id: str, node_id: int, args: Any
) -> dict[str, Any]:
    broker = KafkaBroker(
        node_id=node_id,
        cluster_id=cluster_id,
        controller=f"127.0.0.1:{port}",
        principal="broker",
        token=stack.tokens["broker"],
        work_dir=stack.logs / f"broker-{node_id}",
        heap=args.heap,
    )
    result: dict[str, Any] = {"node_id": node_id}
    started = time.monotonic()
    broker.format_storage()
    result["format_s"] = round(time.monotonic() - started, 3)
    try:
        broker.start(format_storage=False)
        assert broker.started_at is not None
        result.update(
            watch(
                broker,
                broker.started_at,
                {
                    "registered_s": lambda: broker_state(http, node_id) is not None,
                    "caught_up_s": in_log(broker, CAUGHT_UP),
                    "unfenced_s": lambda: in_state(http, node_id, "UNFENCED"),
                    "server_started_s": in_log(broker, STARTED),
                },
                args.timeout,
            )
        )
        if result["unfenced_s"] is None:
            log(f"broker {node_id} was not unfenced; its last lines:\n{broker.log_tail(40)}")
            return result
        first = broker_state(http, node_id)
        incarnation = first[1] if first is not None else ""
        killed = time.monotonic()
        broker.kill()
        result.update(
            watch(
                broker,
                killed,
                {"fenced_after_kill_s": lambda: in_state(http, node_id, "FENCED")},
                args.session_timeout_ms / 1000 + 45,  # past CP_FENCING_HOLD_OFF_MAX_MS too
                alive=False,
            )
        )
        broker.start(format_storage=False)
        assert broker.started_at is not None
        result.update(
            watch(
                broker,
                broker.started_at,
                {
                    "restart_unfenced_s": lambda: in_state(
                        http, node_id, "UNFENCED", other_than=incarnation
                    )
                },
                args.timeout,
            )
        )
        return result
    finally:
        broker.stop(timeout=20)


def median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    http_urls = stack.start_web(workers=1, threads=8)
    stack.start_controller("controller", 3000)
    stack.wait_active("controller")
    port = start_controller_listener(stack)
    cluster_id = stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0]
    http = bearer_client(http_urls.base, stack.tokens["admin"], timeout_s=30)
    runs = []
    try:
        for index in range(args.runs):
            node_id = index + 1
            log(f"run {index + 1}/{args.runs}: broker {node_id}")
            runs.append(one_run(stack, http, port, cluster_id, node_id, args))
            log(json.dumps(runs[-1]))
    finally:
        http.close()
    return {
        "kafka_version": kafka.chosen_version(),
        "heap": args.heap,
        "session_timeout_ms": args.session_timeout_ms,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "runs": runs,
        "median": {key: median(runs, key) for key in ("format_s", *MILESTONES)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.real_broker",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=3, help="brokers started, one after another")
    parser.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for each")
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--logs", default=None, help="keep the stack's and brokers' logs here")
    args = parser.parse_args()
    if not kafka.installed():
        raise SystemExit(f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh)")
    settings = {
        **BENCH_SETTINGS,
        "CP_BROKER_SESSION_TIMEOUT_MS": str(args.session_timeout_ms),
    }
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-rb-"))
        stack = scope.enter_context(running_stack(Path(logs).resolve(), settings=settings))
        result = measure(stack, args)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "real_broker.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
