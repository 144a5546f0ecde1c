"""Benchmark: moving replicas (KIP-455).

**Simulated brokers** (`simulated`): the real stack (PostgreSQL, Redis, gunicorn, one
`run_controller` logging each commit at INFO) and six simulated brokers whose new replicas copy
`--partition-bytes` at `--catch-up-rate` before their leaders take them into the ISR with
AlterPartition. For 1,000 and then 10,000 partitions (RF 3 on brokers 0-2), one
AlterPartitionReassignments moves one replica of each to broker 3, 4 or 5, as Kafka's tool sends
it (one request); the figures: the request's time, the time until ListPartitionReassignments is
empty, the controller's commits in between (how many, their records, and the controller's time
per move: handling, encoding and the transaction, summed over them, per partition moved) and the
fencing timer's worst lag (its rounds 250 ms or more late, as the controller logs them).

**Real brokers** (`real`): side by side in one run, three stock brokers (the pinned jars) under
this control plane and under Kafka's own KRaft controller (one `process.roles=controller` node;
as bench.real_cluster_failover starts both): a topic of `--real-partitions` partitions at RF 2 on
brokers 1 and 2, and Kafka's own ReassignPartitionsCommand moving each partition's second
replica to broker 3 through a broker; the figure is the time until every broker's own Metadata
shows every partition on its target replicas alone (the tool's run included, and apart).

    make bench-reassign        # or: python -m bench.reassign [--parts simulated real]
Writes bench/results/reassign.json (a part not run keeps its last figures there) and prints it;
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.kafka_controllers import BROKER_SETTINGS, KAFKA_CONTROLLER_ID, kafkas_own_cluster
from bench.real_cluster_failover import answering
from bench.replica_state import bearer_client, controller_commits
from bench.verify import fail_unless_clean, verify_stack
from devtools.real_brokers import brokers_running, brokers_under, start_controller_listener
from devtools.stack import BENCH_SETTINGS, Stack, running_stack
from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker

RESULTS = Path(__file__).resolve().parent / "results"
SIMULATED_BROKERS = 6
SIZES = (1_000, 10_000)
LATE_ROUND = re.compile(r"the fencing round ran (\d+) ms late")
REAL_TOPIC = "moving"
NODE_IDS = (1, 2, 3)


def log(message: str) -> None:
    print(f"[bench-reassign] {message}", file=sys.stderr, flush=True)


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        with contextlib.suppress(Exception):
            if check():
                return time.monotonic() - began
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {timeout} s")


# --- simulated brokers -------------------------------------------------------------------
class Simulator:
    """A BrokerSimulator on an event loop in a thread of its own."""

    def __init__(self, stack: Stack, base: str, internal: str, args: argparse.Namespace) -> None:
        from simulator import BrokerSimulator

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.sim = BrokerSimulator(
            base,
            stack.tokens["broker"],
            internal_url=internal,
            brokers=SIMULATED_BROKERS,
            log_dirs=1,
            heartbeat_interval_ms=1000,
            metadata_wait_ms=2000,
            metadata_max_records=10_000,
            admin_token=stack.tokens["admin"],
            client_id="bench-reassign",
            partition_bytes=args.partition_bytes,
            catch_up_bytes_per_s=args.catch_up_rate,
        )

    def run(self, coroutine: Any, timeout: float = 600) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.run(self.sim.close(), timeout=120)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)


def moves_of(size: int) -> list[dict[str, Any]]:
    """Partition i on [i%3, (i+1)%3, (i+2)%3] (brokers 0-2): its third replica to 3 + i%3."""
    return [
        {"partition_index": i, "replicas": [i % 3, (i + 1) % 3, 3 + i % 3]} for i in range(size)
    ]


def simulated_move(stack: Stack, http: Any, admin: Any, size: int) -> dict[str, Any]:
    topic = f"moving-{size}"
    body = {
        "topics": [
            {
                "name": topic,
                "assignments": [
                    {"partition_index": i, "broker_ids": [i % 3, (i + 1) % 3, (i + 2) % 3]}
                    for i in range(size)
                ],
            }
        ]
    }
    answer = admin.post("/api/v1/create-topics", json=body).json()
    assert answer["topics"][0]["error_code"] == 0, answer
    wait_until(lambda: isr_whole(stack, topic, size), 600, f"{topic}'s ISRs whole", every=0.5)
    commits_before = len(controller_commits(stack))
    log_before = controller_log(stack)
    offset_before = last_offset(stack)
    cpu_before = cpu_seconds(stack.procs["controller"].pid)
    started = time.monotonic()
    moved = admin.post(
        "/api/v1/alter-partition-reassignments",
        json={"topics": [{"name": topic, "partitions": moves_of(size)}]},
    ).json()
    request_s = time.monotonic() - started
    codes = {p["error_code"] for t in moved["responses"] for p in t["partitions"]}
    assert codes == {0}, moved
    done_s = wait_until(
        lambda: not admin.get("/api/v1/partition-reassignments").json()["topics"],
        1800,
        f"{size} moves complete",
        every=0.2,
    )
    cpu_s = cpu_seconds(stack.procs["controller"].pid) - cpu_before
    time.sleep(1)  # the controller's log lines of the last commits
    logged = controller_commits(stack)[commits_before:]
    late = [int(m) for m in LATE_ROUND.findall(controller_log(stack)[len(log_before) :])]
    # One commit, one timestamp: the window's commits are its records' distinct timestamps.
    commits, records, changes = stack.sql(
        "SELECT count(DISTINCT timestamp_ms), count(*), count(*) FILTER"
        " (WHERE record_type = 'PartitionChangeRecord') FROM cp_metadata_record"
        ' WHERE "offset" > %s',
        offset_before,
    )[0]
    start_commit = next((c for c in logged if c["records"] == size), None)
    figures = {
        "partitions_moved": size,
        "request_ms": round(request_s * 1000),
        "all_complete_s": round(done_s, 2),
        "on_their_targets": on_targets_sim(stack, topic),
        "commits": int(commits),
        "records_committed": int(records),
        "partition_changes": int(changes),
        "controller_cpu_s": round(cpu_s, 2),
        "controller_cpu_us_per_move": round(cpu_s * 1e6 / size, 1),
        "start_commit": start_commit,
        "fencing_timer_worst_lag_ms": max(late, default=0),
        "fencing_rounds_250ms_late": len(late),
    }
    log(f"{size} moves: {figures}")
    return figures


def cpu_seconds(pid: int) -> float:
    """A process's CPU time (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def last_offset(stack: Stack) -> int:
    return int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def on_targets_sim(stack: Stack, topic: str) -> int:
    """The topic's partitions on the replicas the moves named (`moves_of`), none moving."""
    rows = stack.sql(
        "SELECT p.partition_index, p.replicas, p.reassigning FROM cp_partition p"
        " JOIN cp_topic t ON t.topic_id = p.topic_id WHERE t.name = %s",
        topic,
    )
    targets = {m["partition_index"]: m["replicas"] for m in moves_of(len(rows))}
    return sum(1 for index, replicas, moving in rows if replicas == targets[index] and not moving)


def controller_log(stack: Stack) -> str:
    path = stack.logs / "controller.log"
    return path.read_text(errors="replace") if path.exists() else ""


def isr_whole(stack: Stack, topic: str, size: int) -> bool:
    rows = stack.sql(
        "SELECT count(*) FROM cp_partition p JOIN cp_topic t ON t.topic_id = p.topic_id"
        " WHERE t.name = %s AND p.isr_count = p.replica_count",
        topic,
    )
    return int(rows[0][0]) == size


def simulated(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    settings = {
        **BENCH_SETTINGS,
        "CP_LOG_LEVEL": "INFO",
        "CP_MAX_BODY_BYTES": "16777216",
        "CP_BROKER_HEARTBEAT_INTERVAL_MS": "1000",
    }
    with running_stack(work / "simulated", settings=settings) as stack:
        stack.spawn(
            "controller",
            [sys.executable, "manage.py", "run_controller", "--loglevel", "INFO"],
            {"CP_NODE_ID": "controller", "CP_CONTROLLER_ID": "3000"},
        )
        stack.wait_active("controller")
        http = stack.start_web(workers=2, threads=8)
        sim = Simulator(stack, http.base, http.internal, args)
        try:
            sim.run(sim.sim.start())
            assert sim.run(
                sim.sim.wait_for(lambda s: s.status().unfenced == SIMULATED_BROKERS, 120)
            )
            with bearer_client(http.base, stack.tokens["admin"], timeout_s=600) as admin:
                figures = {
                    str(size): simulated_move(stack, http, admin, size) for size in args.sizes
                }
        finally:
            sim.close()
        figures["verify_metadata"] = verify_stack(stack)
        return figures


# --- real brokers --------------------------------------------------------------------------
def reassignment_json(partitions: int, work: Path) -> Path:
    plan = {
        "version": 1,
        "partitions": [
            {"topic": REAL_TOPIC, "partition": i, "replicas": [1, 3]} for i in range(partitions)
        ],
    }
    path = work / f"reassign-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(plan))
    return path


def on_targets(brokers: list[KafkaBroker], partitions: int) -> bool:
    """Every broker's own Metadata shows every partition on [1, 3] alone."""
    from kafka import KafkaAdminClient

    for broker in brokers:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
        try:
            (topic,) = admin.describe_topics([REAL_TOPIC])
        finally:
            admin.close()
        found = topic["partitions"]
        if len(found) != partitions or any(sorted(p["replica_nodes"]) != [1, 3] for p in found):
            return False
    return True


def real_move(
    brokers: list[KafkaBroker], partitions: int, create: Callable[[], None], work: Path
) -> dict[str, Any]:
    wait_until(lambda: all(answering(b) for b in brokers), 180, "the brokers up", every=1)
    create()
    plan = reassignment_json(partitions, work)
    started = time.monotonic()
    tool = subprocess.run(
        [
            sys.executable,
            "-m",
            "stock_kafka",
            "tool",
            "ReassignPartitionsCommand",
            "--bootstrap-server",
            brokers[0].bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--execute",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    tool_s = time.monotonic() - started
    assert tool.returncode == 0, tool.stdout + tool.stderr
    wait_until(lambda: on_targets(brokers, partitions), 1800, "every move complete", every=0.5)
    return {
        "tool_s": round(tool_s, 2),
        "all_complete_s": round(time.monotonic() - started, 2),
    }


def ours(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    with running_stack(work / "stack", settings=dict(BENCH_SETTINGS)) as stack:
        web = stack.start_web(workers=1, threads=8)
        stack.start_controller("controller", KAFKA_CONTROLLER_ID)
        stack.wait_active("controller")
        port = start_controller_listener(stack)
        brokers = brokers_under(
            stack,
            port,
            work,
            NODE_IDS,
            controller_id=KAFKA_CONTROLLER_ID,
            prefix="ours",
            heap=args.heap,
            overrides=BROKER_SETTINGS,
        )

        def create() -> None:  # the topic, and the tool's (ANONYMOUS, through a broker) rights
            with bearer_client(web.base, stack.tokens["admin"], timeout_s=300) as http:
                acls = [
                    {
                        "resource_type": kind,
                        "resource_name": name,
                        "pattern_type": "LITERAL",
                        "principal": "User:ANONYMOUS",
                        "host": "*",
                        "operation": "ALL",
                        "permission_type": "ALLOW",
                    }
                    for kind, name in (("CLUSTER", "kafka-cluster"), ("TOPIC", "*"))
                ]
                http.post("/api/v1/create-acls", json={"creations": acls}).raise_for_status()
                body = {"topics": [{"name": REAL_TOPIC, "assignments": assignment(args)}]}
                answer = http.post("/api/v1/create-topics", json=body).json()
                assert answer["topics"][0]["error_code"] == 0, answer
            wait_until(lambda: on_start(brokers, args.real_partitions), 600, "the topic", every=1)

        with brokers_running(brokers):
            figures = real_move(brokers, args.real_partitions, create, work)
        figures["verify_metadata"] = verify_stack(stack)
        return figures


def assignment(args: argparse.Namespace) -> list[dict[str, Any]]:
    return [{"partition_index": i, "broker_ids": [1, 2]} for i in range(args.real_partitions)]


def on_start(brokers: list[KafkaBroker], partitions: int) -> bool:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=brokers[0].bootstrap, request_timeout_ms=10_000)
    try:
        (topic,) = admin.describe_topics([REAL_TOPIC])
    finally:
        admin.close()
    found = topic["partitions"]
    return len(found) == partitions and all(len(p["isr_nodes"]) == 2 for p in found)


def kafkas(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    (controller,), brokers = kafkas_own_cluster(work, args.heap, {})

    def create() -> None:
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=brokers[0].bootstrap, request_timeout_ms=300_000)
        try:
            placement = {i: [1, 2] for i in range(args.real_partitions)}
            admin.create_topics(
                [NewTopic(REAL_TOPIC, -1, -1, replica_assignments=placement)], timeout_ms=300_000
            )
        finally:
            admin.close()
        wait_until(lambda: on_start(brokers, args.real_partitions), 600, "the topic", every=1)

    with controller, brokers_running(brokers):
        return real_move(brokers, args.real_partitions, create, work)


def real(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    log("real brokers under this control plane")
    here = ours(args, work)
    log(f"  {here}")
    log("real brokers under Kafka's own controller")
    theirs = kafkas(args, work)
    log(f"  {theirs}")
    return {
        "kafka_version": kafka.chosen_version(),
        "partitions": args.real_partitions,
        "replication_factor": 2,
        "move": "each partition's second replica, broker 2 -> broker 3 (Kafka's tool, --execute)",
        "this_control_plane": here,
        "kafka_controller": theirs,
        "ratio_all_complete": round(here["all_complete_s"] / theirs["all_complete_s"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reassign",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--parts", nargs="+", choices=["simulated", "real"], default=["simulated", "real"]
    )
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--partition-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--catch-up-rate", type=float, default=64 * 1024 * 1024)
    parser.add_argument("--real-partitions", type=int, default=3000)
    parser.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    parser.add_argument("--logs", default=None, help="keep the stacks' and brokers' logs here")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-ra-"))
        work = Path(logs).resolve()
        if "simulated" in args.parts:
            result["simulated"] = {
                "brokers": SIMULATED_BROKERS,
                "replication_factor": 3,
                "partition_bytes": args.partition_bytes,
                "catch_up_bytes_per_s": args.catch_up_rate,
                "moves": simulated(args, work),
            }
        if "real" in args.parts:
            if not kafka.installed():
                raise SystemExit(f"no Kafka jars in {kafka.libs_dir()}")
            result["real"] = real(args, work)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "reassign.json"
    if out.exists():  # a part not run this time keeps its last figures
        kept = json.loads(out.read_text())
        result = {**{k: v for k, v in kept.items() if k in ("simulated", "real")}, **result}
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if "simulated" in result:
        fail_unless_clean(result["simulated"]["moves"]["verify_metadata"], "reassign (simulated)")
    if "real" in result:
        fail_unless_clean(result["real"]["this_control_plane"]["verify_metadata"], "reassign")


if __name__ == "__main__":
    main()
