"""The command line: `python -m bench.fanout [--help]`."""

from __future__ import annotations

import argparse

from bench import fanout
from bench.fanout.common import ACCEPT, FAILING_BROKERS
from bench.fanout.heartbeat_shapes import SHAPES
from bench.fanout.run import measure
from bench.replica_state import run_with_controller


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fanout",
        description=fanout.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--sizes", default="10000,100000", help="partitions per failure, in order")
    parser.add_argument("--encoding", choices=sorted(ACCEPT), default="msgpack")
    parser.add_argument("--processes", type=int, default=3, help="OS processes of followers")
    parser.add_argument(
        "--one-process",
        action="store_true",
        help="every follower and every broker's heartbeats in one process",
    )
    parser.add_argument(
        "--heartbeats",
        choices=SHAPES,
        default=None,
        help="heartbeats from a process of their own as one agent for every broker in turn, or "
        "a thread per broker (bench.fanout.heartbeat_shapes), measured with where their time "
        "went; default: the bench's agent, unmeasured",
    )
    parser.add_argument(
        "--web-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the web tier's processes (e.g. CP_GIL_SWITCH_INTERVAL_MS=1)",
    )
    parser.add_argument("--max-records", type=int, default=100_000)
    parser.add_argument("--wait-ms", type=int, default=5000)
    parser.add_argument("--settle-ms", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=120.0, help="per size, seconds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    args.sizes = [int(size) for size in args.sizes.split(",")]
    if len(args.sizes) > len(FAILING_BROKERS):
        parser.error(f"at most {len(FAILING_BROKERS)} sizes")
    run_with_controller(measure, args, "fanout.json")


if __name__ == "__main__":
    main()
