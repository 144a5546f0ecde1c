"""Benchmark: how long a new source topic takes to reach the target as its remote topic (KIP-710).

Two control planes (A, the source; B, the target holding the MirrorMaker configuration), each
its own database, controller, web process and three simulated brokers, and three mirror nodes on
127.0.0.2-4. The leader does not run MirrorSourceConnector, so every new topic takes the path of
the seed's scenario: the follower running the connector finds it at its next refresh, posts the
new task configs to the leader's REST server (signed), the leader persists them through B's
controller, and the member running the task creates the remote topic on B through B's admin API.

For each `refresh.topics.interval.seconds` asked (changed live: the configuration is stored
again, nothing restarts), `--topics` topics matching the filter are created on A at uniformly
random moments of a window of ten intervals (at least 30 s), so they arrive at every phase of
the connector's refresh; a watcher polls B's topics every 20 ms. The latency of a topic is from
its CreateTopics answer on A to the first poll that sees its remote topic on B. Goal: every topic
within one interval plus 1 s. Writes bench/results/mirror.json and prints it.

    make bench-mirror        # or: python -m bench.mirror --intervals 1 2 --topics 100
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from devtools.mirror_stack import (
    Cluster,
    mirror_config_text,
    running_cluster,
    start_mirror_node,
    write_secrets,
)
from devtools.stack import wait_for

RESULTS = Path(__file__).resolve().parent / "results"
HOSTS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
POLL_S = 0.02


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Watcher:
    """Polls the target's topics; remembers when each remote topic was first seen."""

    def __init__(self, target: Cluster) -> None:
        self.target = target
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                names = self.target.topics()
            except Exception:  # a slow answer: the next poll tells
                continue
            now = time.monotonic()
            for name in names:
                self.seen.setdefault(name, now)
            self._stop.wait(POLL_S)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def stable(b: Cluster) -> bool:
    flow = b.flow("A", "B")
    running = all(c["state"] == "RUNNING" for c in flow["connectors"])
    return flow["group_state"] == "Stable" and len(flow["nodes"]) == len(HOSTS) and running


def measure_interval(
    a: Cluster, b: Cluster, watcher: Watcher, interval_s: int, count: int, rng: random.Random
) -> dict[str, Any]:
    """`count` topics created at uniformly random moments of a window of several refresh
    intervals (so their arrivals fall at every phase of the refresh, independent of when the
    previous one appeared), then each one's time to its remote topic."""
    window = max(30.0, 10.0 * interval_s)
    moments = sorted(rng.uniform(0, window) for _ in range(count))
    created: dict[str, float] = {}
    start = time.monotonic()
    for index, moment in enumerate(moments):
        time.sleep(max(0.0, start + moment - time.monotonic()))
        name = f"bench.i{interval_s}.t{index:03d}"
        a.create_topic(name, partitions=2)
        created[name] = time.monotonic()
        if (index + 1) % 25 == 0:
            done = sum(1 for n in created if f"A.{n}" in watcher.seen)
            log(f"  interval {interval_s}s: {index + 1}/{count} created, {done} on the target")
    wait_for(
        lambda: all(f"A.{n}" in watcher.seen for n in created),
        interval_s + 60,
        f"every remote topic of interval {interval_s}s",
        0.05,
    )
    latencies = [watcher.seen[f"A.{name}"] - at for name, at in created.items()]
    goal = interval_s + 1.0
    return {
        "refresh_topics_interval_seconds": interval_s,
        "topics": count,
        "creation_window_s": window,
        "latency_p50_s": round(statistics.median(latencies), 3),
        "latency_p90_s": round(percentile(latencies, 0.9), 3),
        "latency_max_s": round(max(latencies), 3),
        "latency_mean_s": round(statistics.fmean(latencies), 3),
        "latency_min_s": round(min(latencies), 3),
        "goal_s": goal,
        "goal_met": max(latencies) <= goal,
        "over_goal": sum(1 for value in latencies if value > goal),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    with (
        tempfile.TemporaryDirectory(prefix="bench-mirror-") as tmp,
        running_cluster("A", Path(tmp) / "logs") as a,
        running_cluster("B", Path(tmp) / "logs") as b,
    ):
        log("two control planes up (A, B), three brokers each")
        a_token = a.principal("mm2-a", "--super-user")
        secrets = write_secrets(Path(tmp) / "mm2", b.principal("mm2-b", "--super-user"))
        node_token = b.principal("mirror-node", "--super-user")

        def configure(interval_s: int) -> None:
            text = mirror_config_text(
                a, b, secrets, topics=r"bench\..*", refresh_s=interval_s, sync_s=600
            )
            assert b.put_mirror_config(text) == 200

        configure(args.intervals[0])
        env = {"MM2_A_TOKEN": a_token}
        for index, host in enumerate(HOSTS):
            node_env = {**env, "MM2_NODE_NAME": f"node-{host}", "MM2_SOURCE_CLIENT_ID": host}
            start_mirror_node(
                b,
                name=f"mirror-{index}",
                host=host,
                token=node_token,
                clusters=("B",),
                env=node_env,
            )
            if index == 0:
                wait_for(lambda: b.flow("A", "B")["leader"], 60, "the first node to lead", 0.2)
        wait_for(lambda: stable(b), 90, "three members, every connector RUNNING", 0.3)
        flow = b.flow("A", "B")
        source = next(c for c in flow["connectors"] if c["name"] == "MirrorSourceConnector")
        assert source["worker_id"] != flow["leader"], "the leader must not run the source"
        log(f"flow A->B stable: leader {flow['leader']}, source connector on {source['worker_id']}")

        watcher = Watcher(b)
        watcher.start()
        results = []
        try:
            for interval_s in args.intervals:
                configure(interval_s)  # live: no node restarts
                time.sleep(interval_s + 1.5)  # the connector is running with the new interval
                log(f"interval {interval_s}s: {args.topics} topics")
                results.append(measure_interval(a, b, watcher, interval_s, args.topics, rng))
        finally:
            watcher.stop()
        hops = b.stack.sql(
            "SELECT count(*) FROM cp_metadata_record WHERE record_type = 'MirrorTaskConfigsRecord'"
        )[0][0]
        return {
            "benchmark": "mirror",
            "description": "new source topic to remote topic on the target, through the "
            "follower -> leader REST hop (KIP-710)",
            "nodes": len(HOSTS),
            "leader": flow["leader"],
            "source_connector_on": source["worker_id"],
            "watch_poll_ms": int(POLL_S * 1000),
            "task_config_records": int(hops),
            # The machine is shared: its load during the run, to read the figures by.
            "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "results": results,
            "goal_met": all(r["goal_met"] for r in results),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--intervals", type=int, nargs="+", default=[1, 2, 5])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--seed", type=int, default=710)
    result = run(parser.parse_args())
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mirror.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
