"""Benchmark: canary-aware placement (KIP-1095) against placement with canary isolation off.

60 brokers (6 in pod canary-broker, 3 racks), gunicorn + PostgreSQL + Redis + `run_controller`.
Topics of 10,000 partitions, RF 3, are created alternately with percent.canary.partition 3.125
(313 canary partitions, striped over the canary brokers alone, the rest kept off them) and 0
(no canary partition), in the same run. The figures:

1. wall time of the create-topics request, per setting (median of the runs) and their ratio;
2. the controller's own time for the event (handle + encode + commit, from its commit log line);
3. the pure core alone (`create_topics` on an in-memory image of the same cluster), many runs.

The goal: canary isolation costs at most 1.1x the same topic without it. Every canary-on topic
is checked: 313 canary partitions, all isolated, no other partition on a canary broker.

    make bench-canary        # or: python -m bench.canary_placement --runs 5
Writes bench/results/canary_placement.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.replica_state import (
    Brokers,
    controller_commits,
    create_topic,
    log,
    run_with_controller,
)
from bench.verify import verify_stack
from controlplane.controller.canary.rules import canary_partitions
from devtools.stack import Stack, wait_for

RESULTS = Path(__file__).resolve().parent / "results"
PERCENT = "3.125"
GOAL = 1.1


def topic(name: str, partitions: int, percent: str) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 3,
        "configs": [{"name": "percent.canary.partition", "value": percent}],
    }


def check_placement(stack: Stack, topic_id: str, canary_ids: set[int]) -> dict[str, int]:
    rows = stack.sql(
        "SELECT partition_index, is_canary, canary_isolated, replicas::text FROM cp_partition "
        "WHERE topic_id = %s",
        topic_id,
    )
    canary = [r for r in rows if r[1]]
    off_canary = [r for r in rows if not r[1] and set(json.loads(r[3])) & canary_ids]
    return {
        "canary_partitions": len(canary),
        "canary_isolated": sum(1 for r in canary if r[2]),
        "regular_partitions_on_canary_brokers": len(off_canary),
    }


def core_times(brokers: int, canary: int, partitions: int, runs: int) -> dict[str, Any]:
    """The pure core's CreateTopics on an in-memory image: no HTTP, no database."""
    from controlplane.controller.dispatch import run_event
    from controlplane.controller.env import ControllerEnv
    from controlplane.controller.image import MetadataDelta, MetadataImage

    image = MetadataImage(cluster_id="bench")
    env = ControllerEnv(now_ms=0, activated_ms=0, sessions={})
    for broker_id in range(brokers):
        delta = MetadataDelta(image)
        run_event(
            delta,
            "BrokerRegistration",
            {
                "broker_id": broker_id,
                "cluster_id": "bench",
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [],
                "rack": f"rack-{broker_id % 3}",
                "pod": "canary-broker" if broker_id >= brokers - canary else "broker",
                "log_dirs": [],
            },
            env,
        )
        image.apply(delta)
        delta = MetadataDelta(image)
        run_event(
            delta,
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": image.broker(broker_id).epoch,
                "current_metadata_offset": 10**12,
            },
            env,
        )
        image.apply(delta)
    times: dict[str, list[float]] = {"off": [], "on": []}
    for run in range(runs):
        for setting, percent in (("off", "0"), ("on", PERCENT)):
            delta = MetadataDelta(image)  # never applied: every run sees the same cluster
            started = time.perf_counter()
            answer = run_event(
                delta,
                "CreateTopics",
                {"topics": [topic(f"core-{setting}-{run}", partitions, percent)]},
                env,
            )
            times[setting].append(time.perf_counter() - started)
            assert answer["topics"][0]["error_code"] == 0, answer
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    return {
        "runs": runs,
        "off_median_s": round(off, 4),
        "on_median_s": round(on, 4),
        "ratio": round(on / off, 3),
    }


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    http = stack.start_web(workers=args.workers, threads=args.threads)
    cluster_id = stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0]
    brokers = Brokers(
        http.internal, stack.tokens["broker"], cluster_id, args.brokers, canary=args.canary
    )
    brokers.register_all()
    wait_for(
        lambda: stack.sql("SELECT count(*) FROM cp_broker WHERE NOT fenced")[0][0] == args.brokers,
        30,
        "every broker unfenced",
    )
    canary_ids = set(range(args.brokers - args.canary, args.brokers))
    admin = httpx.Client(
        base_url=http.base,
        headers={"Authorization": f"Bearer {stack.tokens['admin']}"},
        timeout=120,
    )
    log(f"{args.brokers} brokers ({args.canary} canary) unfenced; warming up")
    create_topic(admin, topic("warm-up", args.partitions, PERCENT))
    wall: dict[str, list[float]] = {"off": [], "on": []}
    checks = []
    for run in range(args.runs):
        # Alternate, and swap the order every run, so neither setting always goes first.
        order = [("off", "0"), ("on", PERCENT)]
        for setting, percent in order if run % 2 == 0 else order[::-1]:
            elapsed, answer = create_topic(
                admin, topic(f"{setting}-{run}", args.partitions, percent)
            )
            wall[setting].append(elapsed)
            log(f"  run {run} canary {setting}: {elapsed * 1000:.0f} ms")
            if setting == "on":
                assert answer["canary_isolated"] is True, answer
                assert answer["canary_partitions"] == canary_partitions(0, args.partitions, 3.125)
            checks.append(
                {"setting": setting, **check_placement(stack, answer["topic_id"], canary_ids)}
            )
    time.sleep(0.5)
    commits = [
        c for c in controller_commits(stack) if c["records"] >= args.partitions and c["events"] == 1
    ][-2 * args.runs :]
    # Commits come in the order the topics were created.
    order = [
        s for run in range(args.runs) for s in (("off", "on") if run % 2 == 0 else ("on", "off"))
    ]
    controller: dict[str, list[float]] = {"off": [], "on": []}
    for setting, commit in zip(order, commits, strict=True):
        controller[setting].append(
            (commit["handle_ms"] + commit["encode_ms"] + commit["transaction_ms"]) / 1000
        )
    verify = verify_stack(stack)
    brokers.stop()
    off_wall, on_wall = statistics.median(wall["off"]), statistics.median(wall["on"])
    off_ctl, on_ctl = statistics.median(controller["off"]), statistics.median(controller["on"])
    core = core_times(args.brokers, args.canary, args.partitions, args.core_runs)
    expected = len(canary_partitions(0, args.partitions, 3.125))
    placement_ok = all(
        c["regular_partitions_on_canary_brokers"] == 0
        and c["canary_partitions"] == (expected if c["setting"] == "on" else 0)
        and c["canary_isolated"] == c["canary_partitions"]
        for c in checks
    )
    return {
        "setup": {
            "brokers": args.brokers,
            "canary_brokers": args.canary,
            "racks": 3,
            "partitions": args.partitions,
            "replication_factor": 3,
            "percent_canary_partition": float(PERCENT),
            "canary_partitions_per_topic": expected,
            "runs_per_setting": args.runs,
            "web": f"gunicorn {args.workers}x{args.threads}",
            "database": "PostgreSQL",
        },
        "create_topics_wall_s": {
            "isolation_off": [round(t, 4) for t in wall["off"]],
            "isolation_on": [round(t, 4) for t in wall["on"]],
            "off_median": round(off_wall, 4),
            "on_median": round(on_wall, 4),
            "ratio": round(on_wall / off_wall, 3),
            # Each run's on / off pair, back to back: cancels the drift of a shared machine.
            "paired_ratio_median": round(
                statistics.median(
                    on / off for on, off in zip(wall["on"], wall["off"], strict=True)
                ),
                3,
            ),
        },
        "controller_event_s": {
            "isolation_off": [round(t, 4) for t in controller["off"]],
            "isolation_on": [round(t, 4) for t in controller["on"]],
            "ratio": round(on_ctl / off_ctl, 3),
        },
        "pure_core_create_topics": core,
        "goal_ratio": GOAL,
        "within_goal": on_wall / off_wall <= GOAL and on_ctl / off_ctl <= GOAL,
        "placement_checked": placement_ok,
        "placement_checks": checks,
        "verify_metadata": verify,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--canary", type=int, default=6)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--core-runs", type=int, default=9)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    run_with_controller(measure, parser.parse_args(), "canary_placement.json")


if __name__ == "__main__":
    main()
