"""Benchmark: a mass fencing, then the storm of brokers coming back, until the cluster converges.

On the real stack (PostgreSQL, Redis, gunicorn with 2 workers x 8 threads per listener, one
`run_controller`): `--brokers` brokers (60, then 100, each count on a stack of its own) and
`--partitions` partitions (100,000: topics of 10,000 at RF 3, placed by the controller, leaders
spread over every broker). Then, for each heartbeat shape (bench.fanout.heartbeat_shapes: one
agent for every broker in turn, or a thread per broker):

1. every broker heartbeats in that shape, all unfenced;
2. a mass fencing: all brokers but `--heard` go silent; the controller fences each once its
   session lapses (the few still heard keep the silence the brokers', not the controller's),
   and most partitions are left without a live leader;
3. every broker heartbeats again at once, in that shape: the storm. Until every broker is
   unfenced and no partition is leaderless (every broker is live, so every partition has a live
   ISR member), `converged_s`, against the goal of 2 x the session timeout. Meanwhile: the
   longest gap between a broker's answered heartbeats, the heartbeats' p99, brokers fenced
   again although they heartbeated, the records written and the large commits they took.

`verify_metadata` runs on each stack at the end.

    make bench-converge     # or: python -m bench.converge --brokers 60,100 --shapes agent,threads
Writes bench/results/converge.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import httpx

from bench.fanout.heartbeat_shapes import SHAPES, HeartbeatShape
from bench.fanout.run import fencing_records
from bench.replica_state import (
    bearer_client,
    brokers_unfenced,
    controller_commits,
    controller_stack,
    log,
    write_result,
)
from bench.verify import verify_stack
from devtools.stack import WORKER_CLASS, Stack, server_description, wait_for

SESSION_TIMEOUT_S = 9.0  # the stack's broker.session.timeout.ms (CP_BROKER_SESSION_TIMEOUT_MS)
CONVERGE_GOAL_S = 2 * SESSION_TIMEOUT_S
TOPIC_PARTITIONS = 10_000
WEB_WORKERS, WEB_THREADS = 2, 8


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.converge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--brokers", default="60,100", help="broker counts, a stack each")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="heartbeat shapes, in order")
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--heard", type=int, default=3, help="brokers that keep heartbeating")
    parser.add_argument("--timeout", type=float, default=180.0, help="per phase, seconds")
    args = parser.parse_args()
    shapes = args.shapes.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            parser.error(f"heartbeat shape {shape!r}: one of {SHAPES}")
    runs = []
    verdicts = []
    for brokers in (int(count) for count in args.brokers.split(",")):
        with controller_stack() as stack:
            figures, verdict = cluster(stack, brokers, shapes, args)
        runs.extend(figures)
        verdicts.append(verdict)
    write_result(report(args, runs, verdicts), "converge.json")


def cluster(
    stack: Stack, brokers: int, shapes: list[str], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    http = stack.start_web(workers=WEB_WORKERS, threads=WEB_THREADS)
    log(f"{brokers} brokers registering")
    keeper = brokers_unfenced(stack, http.internal, brokers)
    admin = bearer_client(http.base, stack.tokens["admin"], timeout_s=600)
    created = create_topics(admin, args.partitions)
    log(f"{args.partitions} partitions created in {created:.1f} s")
    epochs = dict(keeper.epochs)
    token = stack.tokens["broker"]
    steady = HeartbeatShape(shapes[0], http.internal, token, epochs).start()
    keeper.stop()
    figures = []
    for index, shape in enumerate(shapes):
        if index:  # the steady heartbeats of the previous shape hand over to this one
            following = HeartbeatShape(shape, http.internal, token, epochs).start()
            steady.stop()
            steady = following
        run, steady = storm(stack, http.internal, token, epochs, shape, steady, args)
        figures.append({"brokers": brokers, "partitions": args.partitions, **run})
    steady.stop()
    log("verify_metadata")
    return figures, verify_stack(stack)


def create_topics(admin: httpx.Client, partitions: int) -> float:
    started = time.perf_counter()
    for start in range(0, partitions, TOPIC_PARTITIONS):
        topic = {
            "name": f"storm-{start // TOPIC_PARTITIONS}",
            "num_partitions": min(TOPIC_PARTITIONS, partitions - start),
            "replication_factor": 3,
        }
        answer = admin.post("/api/v1/create-topics", json={"topics": [topic]}).json()
        if answer["topics"][0]["error_code"] != 0:
            raise SystemExit(f"create-topics failed: {answer}")
    return time.perf_counter() - started


def storm(
    stack: Stack,
    internal: str,
    token: str,
    epochs: dict[int, int],
    shape: str,
    steady: HeartbeatShape,
    args: argparse.Namespace,
) -> tuple[dict[str, Any], HeartbeatShape]:
    """One mass fencing and the storm after it, in `shape`; answers the figures and the
    heartbeats that go on (every broker's, in that shape)."""
    wait_for(lambda: fenced(stack) == 0, args.timeout, "every broker unfenced")
    heard_ids = sorted(epochs)[: args.heard]
    silent = len(epochs) - len(heard_ids)
    heard = HeartbeatShape(shape, internal, token, {b: epochs[b] for b in heard_ids}).start()
    steady.stop()
    silenced = time.monotonic()
    log(f"[{shape}] {silent} brokers silent, {len(heard_ids)} heard")
    wait_for(lambda: fenced(stack) == silent, args.timeout, "the silent brokers fenced", 0.2)
    fenced_s = time.monotonic() - silenced
    leaderless_at_storm = leaderless(stack)
    log(f"[{shape}] {silent} fenced after {fenced_s:.1f} s; {leaderless_at_storm} leaderless")
    offset, fencings, commits = log_head(stack), fencing_records(stack), commit_count(stack)
    back = HeartbeatShape(shape, internal, token, epochs).start()
    storm_began = time.monotonic()
    heard.stop()
    progress = Progress(shape)
    converged = progress.wait(stack, args.timeout)
    converged_s = time.monotonic() - storm_began
    log(f"[{shape}] {'converged' if converged else 'NOT converged'} after {converged_s:.2f} s")
    time.sleep(SESSION_TIMEOUT_S)  # a session more: the storm is over, no broker fenced again
    beats = back.record.summary()
    refenced = fencing_records(stack) - fencings
    return {
        "shape": shape,
        "silent_brokers": silent,
        "heard_brokers": len(heard_ids),
        "fenced_after_s": round(fenced_s, 2),
        "leaderless_when_the_storm_began": leaderless_at_storm,
        "converged_s": round(converged_s, 2),
        "converged": converged,
        "fenced_at_the_end": progress.fenced,
        "leaderless_at_the_end": progress.leaderless,
        "unfenced_at_s": progress.unfenced_at_s,
        "longest_heartbeat_gap_s": beats["longest_gap_s"],
        "heartbeat_p50_ms": beats["latency_p50_ms"],
        "heartbeat_p99_ms": beats["latency_p99_ms"],
        "heartbeat_errors": beats["errors"],
        "brokers_fenced_again": refenced,
        "records_written": log_head(stack) - offset,
        "large_commits": commit_count(stack) - commits,
        "largest_commit_records": largest_commit(stack, commits),
    }, back


class Progress:
    """Polls the tables until the cluster converged, noting when the last broker unfenced."""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.began = time.monotonic()
        self.unfenced_at_s: float | None = None
        self.fenced = self.leaderless = -1  # as last seen
        self.last_said = 0.0

    def wait(self, stack: Stack, timeout_s: float) -> bool:
        """Whether the cluster converged within `timeout_s` (polled every 0.1 s)."""
        while time.monotonic() - self.began < timeout_s:
            if self.converged(stack):
                return True
            time.sleep(0.1)
        return False

    def converged(self, stack: Stack) -> bool:
        still_fenced, without_leader = fenced(stack), leaderless(stack)
        now = time.monotonic() - self.began
        if not still_fenced and self.unfenced_at_s is None:
            self.unfenced_at_s = round(now, 2)
        self.fenced, self.leaderless = still_fenced, without_leader
        if now - self.last_said >= 2:
            self.last_said = now
            log(f"[{self.shape}] {now:.0f} s: {still_fenced} fenced, {without_leader} leaderless")
        return not still_fenced and not without_leader


def fenced(stack: Stack) -> int:
    return int(stack.sql("SELECT count(*) FROM cp_broker WHERE fenced")[0][0])


def leaderless(stack: Stack) -> int:
    return int(stack.sql("SELECT count(*) FROM cp_partition WHERE leader = -1")[0][0])


def log_head(stack: Stack) -> int:
    return int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def commit_count(stack: Stack) -> int:
    """The controller's commits it logged with their timings: those of many records."""
    return len(controller_commits(stack))


def largest_commit(stack: Stack, after: int) -> int:
    """Records in the largest commit the controller logged since the `after`-th (0: none was
    large enough to be logged)."""
    return max((commit["records"] for commit in controller_commits(stack)[after:]), default=0)


def report(
    args: argparse.Namespace, runs: list[dict[str, Any]], verdicts: list[dict[str, Any]]
) -> dict[str, Any]:
    goals = {
        f"converged_s_{run['brokers']}_{run['shape']}": {
            "figure": run["converged_s"],
            "goal": CONVERGE_GOAL_S,
            "met": run["converged"] and run["converged_s"] <= CONVERGE_GOAL_S,
        }
        for run in runs
    }
    goals["no_broker_fenced_again"] = {
        "figure": sum(run["brokers_fenced_again"] for run in runs),
        "met": all(run["brokers_fenced_again"] == 0 for run in runs),
    }
    clean = all(verdict["clean"] for verdict in verdicts)
    return {
        "setup": {
            "partitions": args.partitions,
            "replication_factor": 3,
            "heard_brokers": args.heard,
            "session_timeout_s": SESSION_TIMEOUT_S,
            "heartbeat_interval_s": 2.0,
            "web": server_description(WORKER_CLASS, WEB_WORKERS, WEB_THREADS),
            "database": "PostgreSQL",
        },
        "runs": runs,
        "goals": goals,
        "verify_metadata": {
            "clean": clean,
            "problems": sum(verdict["problems"] for verdict in verdicts),
            "output": [line for verdict in verdicts for line in verdict["output"]],
        },
    }


if __name__ == "__main__":
    main()
