"""The command line: `python -m bench.admin_forwarding [--help]`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from bench import admin_forwarding
from bench.admin_forwarding.common import RESULTS, log
from bench.admin_forwarding.run import measure
from bench.verify import fail_unless_clean
from devtools.stack import BENCH_SETTINGS, ROOT, WORKER_CLASS, running_stack


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.admin_forwarding",
        description=admin_forwarding.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--worker-class",
        default=WORKER_CLASS,
        help="gunicorn worker class (gthread: the old server, to compare)",
    )
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (cores + 1)")
    parser.add_argument(
        "--threads",
        type=int,
        default=8,
        help="threads per gunicorn worker (admin writes wait for the controller)",
    )
    parser.add_argument("--brokers", type=int, default=3, help="registered brokers")
    parser.add_argument("--sequential", type=int, default=1000, help="sequential requests per way")
    parser.add_argument(
        "--block", type=int, default=50, help="sequential: the ways alternate every N requests"
    )
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[8, 16, 32],
        help="closed-loop concurrency levels, comma-separated (default 8,16,32)",
    )
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="seconds per round, way and concurrency level"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="throughput: rounds per concurrency level, the ways taking turns (default 3)",
    )
    parser.add_argument("--probes", type=int, default=200, help="floor measurements of each kind")
    parser.add_argument(
        "--simulator-requests",
        type=int,
        default=100,
        help="requests forwarded through BrokerSimulator.forward_admin_request",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=300,
        help="at the end, this many requests per way through the views in-process, then (the "
        "controller process stopped) this many writes handled by the controller in-process, "
        "timed and profiled (0: skip)",
    )
    parser.add_argument(
        "--controller-loglevel",
        default="INFO",
        help="the controller worker's log level; INFO logs each event's run time (default INFO)",
    )
    parser.add_argument("--ratio-target", type=float, default=1.5)
    parser.add_argument("--writes-target", type=float, default=300.0)
    args = parser.parse_args()
    controller = "controller"
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_stack(Path(tmp) / "logs", settings=BENCH_SETTINGS) as stack,
    ):
        stack.spawn(
            controller,
            [
                sys.executable,
                "manage.py",
                "run_controller",
                "--loglevel",
                args.controller_loglevel,
            ],
            {"CP_NODE_ID": controller, "CP_CONTROLLER_ID": "3000"},
        )
        stack.wait_active(controller)
        log(f"controller active; starting gunicorn ({args.workers} x {args.threads})")
        result = measure(stack, args, controller)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "admin_forwarding.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    log(
        f"sequential p50/p99: direct {result['sequential_latency_ms']['direct']['latency']}, "
        f"ratio {result['sequential_latency_ms']['ratio_envelope_to_direct']}; best writes/s "
        f"{result['throughput_best_writes_per_s']}; met {result['met']}"
    )
    fail_unless_clean(result["verify_metadata"], "admin_forwarding")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
