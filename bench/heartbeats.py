"""Benchmark: sustained broker heartbeats through the real HTTP stack.

gunicorn + PostgreSQL + Redis + a controller worker. The broker simulator registers the brokers,
unfences them and keeps them alive at their normal interval; a lean keep-alive client then
alternates rounds against a trivial authenticated endpoint (`GET /api/v1/whoami`) and
heartbeats that change nothing, at the same concurrency, in the same run. Writes JSON to
bench/results/heartbeats.json and prints it.

    make bench            # or: python -m bench.heartbeats --seconds 10 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.cpu import proc_stat, process_cpu_s
from bench.loadgen import LoadResult, build_request, run_in_subprocess
from devtools.stack import (
    BENCH_SETTINGS,
    WORKER_CLASS,
    Stack,
    running_stack,
    server_description,
    wait_for,
)

RESULTS = Path(__file__).resolve().parent / "results"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class SimulatorThread:
    """The broker simulator on its own event loop, keeping every broker's session alive."""

    def __init__(self, url: str, internal_url: str, token: str, brokers: int, canary: int) -> None:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
        from simulator import BrokerSimulator

        self.sim = BrokerSimulator(
            url,
            token,
            internal_url=internal_url,
            brokers=brokers,
            canary=canary,
            racks=3,
            heartbeat_interval_ms=2000,
            client_id="bench-sim",
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.sim.start(), self.loop).result(timeout=120)

    def all_unfenced(self) -> bool:
        return all(state.unfenced for state in self.sim.brokers())

    def epochs(self) -> dict[int, int]:
        return {s.broker_id: int(s.epoch) for s in self.sim.brokers() if s.epoch is not None}

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.sim.close(), self.loop).result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)


def heartbeat_requests(host: str, token: str, epochs: dict[int, int], offset: int) -> list[bytes]:
    return [
        build_request(
            "POST",
            host,
            "/internal/v1/broker-heartbeat",
            token,
            json.dumps(
                {
                    "broker_id": broker_id,
                    "broker_epoch": epoch,
                    "current_metadata_offset": offset,
                    "want_fence": False,
                    "want_shut_down": False,
                }
            ).encode(),
        )
        for broker_id, epoch in sorted(epochs.items())
    ]


def server_pids(stack: Stack) -> list[int]:
    """gunicorn's workers, every PostgreSQL backend and redis-server: the server side."""
    master = stack.procs["web"].pid
    pids = []
    for entry in Path("/proc").iterdir():
        found = proc_stat(int(entry.name)) if entry.name.isdigit() else None
        if found is None:
            continue
        name, ppid, _ = found
        if ppid == master or name.startswith(("postgres", "redis-server")):
            pids.append(int(entry.name))
    return pids


def cpu_seconds(pids: list[int]) -> float:
    return sum(process_cpu_s(pid) for pid in pids)


def measured(pids: list[int], run: Any) -> tuple[LoadResult, float]:
    """Run a load and return it with the server CPU seconds it cost."""
    before = cpu_seconds(pids)
    result = run()
    return result, cpu_seconds(pids) - before


def merge(results: list[LoadResult]) -> LoadResult:
    merged = LoadResult(0, 0, 0.0, [], {})
    for result in results:
        merged.requests += result.requests
        merged.errors += result.errors
        merged.seconds += result.seconds
        merged.latencies_ms.extend(result.latencies_ms)
        for status, count in result.statuses.items():
            merged.statuses[status] = merged.statuses.get(status, 0) + count
    return merged


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    # The closed loop sends each broker's heartbeat far faster than its interval to find the
    # listener's capacity: without the per-broker rate, as that is what it measures.
    http = stack.start_web(
        workers=args.workers,
        threads=args.threads,
        worker_class=args.worker_class,
        extra_env={"CP_HEARTBEAT_RATE_LIMIT": "0"},
    )
    # whoami is on the public listener, heartbeats on the internal one: same process, two ports.
    host_port = http.base.removeprefix("http://")
    host, port = host_port.split(":")
    internal_host_port = http.internal.removeprefix("http://")
    internal_port = internal_host_port.split(":")[1]
    sim = SimulatorThread(
        http.base, http.internal, stack.tokens["broker"], args.brokers, args.canary
    )
    log(f"simulator: registering {args.brokers} brokers + {args.canary} canary brokers ...")
    sim.start()
    wait_for(sim.all_unfenced, 120, "every simulated broker to be unfenced", 0.5)
    offset = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])
    log(f"simulator: all {args.brokers + args.canary} brokers unfenced at offset {offset}")

    trivial = [build_request("GET", host_port, "/api/v1/whoami", stack.tokens["broker"])]
    beats = heartbeat_requests(internal_host_port, stack.tokens["broker"], sim.epochs(), offset)
    run_in_subprocess(
        "closed", host, int(port), trivial, concurrency=args.concurrency, seconds=8, label="warm-up"
    )
    run_in_subprocess(
        "closed",
        host,
        int(internal_port),
        beats,
        concurrency=args.concurrency,
        seconds=8,
        label="warm-up",
    )

    pids = server_pids(stack)
    phases = {
        "trivial": (trivial, "whoami", port),
        "heartbeat": (beats, "heartbeat", internal_port),
    }
    cpu = dict.fromkeys(phases, 0.0)
    runs: dict[str, list[LoadResult]] = {phase: [] for phase in phases}
    records_before = int(stack.sql("SELECT count(*) FROM cp_metadata_record")[0][0])
    for round_ in range(1, args.rounds + 1):
        for phase, (requests, label, phase_port) in phases.items():
            log(f"round {round_}/{args.rounds}: {phase}")
            result, spent = measured(
                pids,
                lambda r=requests, lb=label, pp=phase_port: run_in_subprocess(
                    "closed",
                    host,
                    int(pp),
                    r,
                    concurrency=args.concurrency,
                    seconds=args.seconds,
                    label=lb,
                ),
            )
            runs[phase].append(result)
            cpu[phase] += spent
    trivial_runs, heartbeat_runs = runs["trivial"], runs["heartbeat"]
    log(
        f"sustained heartbeats: {args.rate:.0f}/s open loop over {args.brokers + args.canary}"
        f" broker connections (as {int(args.rate * 2)} brokers heartbeating every 2 s)"
    )
    paced = {
        "rate": args.rate,
        "connections": args.brokers + args.canary,
        "seconds": args.seconds * 2,
    }
    sustained = run_in_subprocess(
        "paced", host, int(internal_port), beats, **paced, label="sustained heartbeats"
    )
    # The same open-loop load on the trivial endpoint: what the host and client alone add.
    sustained_trivial = run_in_subprocess(
        "paced", host, int(port), trivial, **paced, label="sustained trivial"
    )
    records_after = int(stack.sql("SELECT count(*) FROM cp_metadata_record")[0][0])
    sim.stop()

    trivial_all, heartbeat_all = merge(trivial_runs), merge(heartbeat_runs)
    ratio = heartbeat_all.rate / trivial_all.rate if trivial_all.rate else 0.0
    return {
        "benchmark": "broker_heartbeats",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "setup": {
            "server": server_description(args.worker_class, args.workers, args.threads)
            + ", bound to the public and the internal listener's ports",
            "database": "PostgreSQL 127.0.0.1:5432",
            "sessions": "Redis 127.0.0.1:6379",
            "controller": "manage.py run_controller (Celery worker, queue 'controller')",
            "brokers": args.brokers,
            "canary_brokers": args.canary,
            "concurrency": args.concurrency,
            "seconds_per_round": args.seconds,
            "rounds": args.rounds,
            "cpus": os.cpu_count(),
            "load_generator": "bench/loadgen.py (asyncio, HTTP/1.1 keep-alive), same machine",
        },
        "trivial_authenticated_endpoint": trivial_all.summary(),
        "heartbeat": heartbeat_all.summary(),
        "per_round_requests_per_second": {
            "trivial": [round(r.rate, 1) for r in trivial_runs],
            "heartbeat": [round(r.rate, 1) for r in heartbeat_runs],
        },
        "heartbeat_to_trivial_throughput_ratio": round(ratio, 3),
        "server_cpu_ms_per_request": {
            "trivial": round(cpu["trivial"] * 1000 / trivial_all.requests, 3),
            "heartbeat": round(cpu["heartbeat"] * 1000 / heartbeat_all.requests, 3),
            "note": "gunicorn workers + PostgreSQL + Redis CPU time over requests served",
        },
        "heartbeat_to_trivial_cpu_cost_ratio": round(
            (cpu["trivial"] / trivial_all.requests) / (cpu["heartbeat"] / heartbeat_all.requests), 3
        ),
        "sustained_heartbeats_open_loop": {
            "offered_per_second": args.rate,
            **sustained.summary(),
            "note": "latency measured from each request's scheduled time",
        },
        "sustained_trivial_open_loop_same_rate": sustained_trivial.summary(),
        "metadata_records_written_during_measurement": records_after - records_before,
        "targets": {
            "ratio_at_least": 0.7,
            "sustained_heartbeat_p99_ms_under": 50,
            "metadata_records_written": 0,
        },
        "met": {
            "ratio": ratio >= 0.7,
            "p99": sustained.percentile(99) < 50,
            "no_records": records_after == records_before,
            "no_errors": heartbeat_all.errors == 0 and trivial_all.errors == 0,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--canary", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--rate",
        type=float,
        default=250.0,
        help="sustained heartbeats per second (open loop) for the latency phase",
    )
    parser.add_argument(
        "--worker-class",
        default=WORKER_CLASS,
        help="gunicorn worker class (gthread: the old server, to compare)",
    )
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_stack(Path(tmp) / "logs", settings=BENCH_SETTINGS) as stack,
    ):
        stack.start_controller("bench-controller", 3000)
        stack.wait_active("bench-controller")
        result = measure(stack, args)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "heartbeats.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
