"""The command line: `python -m bench.scale [--help]`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench import scale
from bench.replica_state import RESULTS, log
from bench.scale.common import (
    BROKERS,
    GOALS,
    SHAPES,
    SIZES,
    Layout,
    growth_table,
    shape_comparison,
)
from bench.scale.run import run_one, setup
from bench.verify import fail_unless_clean

PHASES = ("probes", "shutdown", "bootstrap", "failover")


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=scale.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES[:2])), help="partitions")
    parser.add_argument("--shapes", default=",".join(map(str, SHAPES)), help="partitions per topic")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"of {','.join(PHASES)}")
    parser.add_argument("--brokers", type=int, default=BROKERS)
    parser.add_argument("--processes", type=int, default=4, help="OS processes of followers")
    parser.add_argument(
        "--kill-at",
        type=float,
        default=-0.5,
        help="when to kill the active controller: a fraction of the change's expected time; "
        "negative: as soon as its commit writes the log (that fraction when never seen)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="per phase, seconds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--logs", help="keep every stack's logs under this directory")
    parser.add_argument("--output", default="scale.json", help="under bench/results/")
    args = parser.parse_args()
    args.phases = set(args.phases.split(",")) & set(PHASES)
    runs: list[dict[str, Any]] = []
    result: dict[str, Any] = {"setup": setup(args), "goals": GOALS, "runs": runs}
    RESULTS.mkdir(exist_ok=True)
    for size in _ints(args.sizes):
        for shape in _ints(args.shapes):
            layout = Layout(size, min(shape, size))
            runs.append(run_one(layout, args))
            result["growth"] = growth_table(runs)
            result["many_topics_vs_many_partitions"] = shape_comparison(runs)
            result["goals_met"] = {
                f"{run['partitions']}x{run['per_topic']}": {
                    name: figure.get("met") for name, figure in run["goals"].items()
                }
                for run in runs
            }
            # Written after each run: a long run's first figures survive a later failure.
            (RESULTS / args.output).write_text(json.dumps(result, indent=2) + "\n")
            log(f"wrote bench/results/{args.output}")
            fail_unless_clean(runs[-1]["verify_metadata"], f"scale {layout.name}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
