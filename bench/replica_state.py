"""Benchmark: topic creation and a 10,000-partition log dir failure (KIP-589), end to end.

gunicorn + PostgreSQL + Redis + a `run_controller` worker, 60 brokers kept alive over HTTP.

1. Create RF 3 topics of 10,000 partitions with rack-aware placement: wall time of the request.
2. One broker leads 10,000 partitions (RF 3). It sends ONE AlterReplicaState naming all of them;
   a follower long-polls the metadata fetch until it has seen a new leader for every one. The
   figure is the time from sending the request to that moment.
3. The controller logs each large commit (handle time, commit time, SQL statements). Its commit
   rate (partition changes per second) is compared with a raw PostgreSQL bulk UPDATE of the same
   10,000 partition rows in the same database, in the same run.
4. The same failure with 1,000 partitions on another broker: the SQL statement count of the
   commit must be the same as for 10,000.

    make bench-replicas      # or: python -m bench.replica_state --partitions 10000
Writes bench/results/replica_state.json and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.verify import fail_unless_clean, verify_stack
from devtools.stack import (
    BENCH_SETTINGS,
    WORKER_CLASS,
    Stack,
    running_stack,
    server_description,
    wait_for,
)

RESULTS = Path(__file__).resolve().parent / "results"
COMMIT_LINE = re.compile(
    r"committed (\d+) records of (\d+) event\(s\): handled in (\d+) ms, encoded in (\d+) ms, "
    r"the log's transaction of (\d+) ms \(the brokers woken\), the tables' of (\d+) ms, "
    r"(\d+) SQL statements, image applied in (\d+) ms \((.*)\)"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def registration_body(
    broker_id: int, cluster_id: str, *, pod: str = "broker", log_dirs: int = 1
) -> dict[str, Any]:
    """A broker's BrokerRegistration: a PLAINTEXT listener, on one of three racks."""
    return {
        "broker_id": broker_id,
        "cluster_id": cluster_id,
        "incarnation_id": str(uuid.uuid4()),
        "listeners": [
            {
                "name": "PLAINTEXT",
                "host": "localhost",
                "port": 9092 + broker_id,
                "security_protocol": "PLAINTEXT",
            }
        ],
        "rack": f"rack-{broker_id % 3}",
        "pod": pod,
        "log_dirs": [str(uuid.uuid4()) for _ in range(log_dirs)],
    }


class Brokers:
    """Registers brokers and keeps their sessions alive with heartbeats every 2 s."""

    def __init__(self, base: str, token: str, cluster_id: str, count: int, canary: int = 0) -> None:
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        self.cluster_id = cluster_id
        self.count = count
        self.canary = canary  # the last `canary` brokers are in pod canary-broker (KIP-1095)
        self.epochs: dict[int, int] = {}
        self.offset = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat_forever, daemon=True)

    def register_all(self) -> None:
        for broker_id in range(self.count):
            pod = "canary-broker" if broker_id >= self.count - self.canary else "broker"
            body = registration_body(broker_id, self.cluster_id, pod=pod, log_dirs=2)
            answer = self.client.post("/internal/v1/broker-registration", json=body).json()
            self.epochs[broker_id] = answer["broker_epoch"]
        self.offset = 10**12  # caught up: the heartbeat unfences
        self.beat_all()
        self._thread.start()

    def beat_all(self) -> list[dict[str, Any]]:
        answers = []
        for broker_id, epoch in self.epochs.items():
            body = {
                "broker_id": broker_id,
                "broker_epoch": epoch,
                "current_metadata_offset": self.offset,
            }
            answers.append(self.client.post("/internal/v1/broker-heartbeat", json=body).json())
        return answers

    def _beat_forever(self) -> None:
        while not self._stop.wait(2.0):
            try:
                self.beat_all()
            except httpx.HTTPError as error:
                log(f"heartbeat round failed: {error}")

    def stop(self) -> None:
        self._stop.set()


def bearer_client(base: str, token: str, *, timeout_s: float) -> httpx.Client:
    return httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s
    )


def brokers_unfenced(stack: Stack, internal: str, count: int) -> Brokers:
    """`count` brokers registered on the internal listener, heartbeating, every one unfenced."""
    cluster_id = stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0]
    brokers = Brokers(internal, stack.tokens["broker"], cluster_id, count)
    brokers.register_all()
    wait_for(
        lambda: stack.sql("SELECT count(*) FROM cp_broker WHERE NOT fenced")[0][0] == count,
        30,
        "every broker unfenced",
    )
    return brokers


def create_topic(http: httpx.Client, topic: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = http.post("/api/v1/create-topics", json={"topics": [topic]})
    elapsed = time.perf_counter() - started
    answer = response.json()["topics"][0]
    if answer["error_code"] != 0:
        raise SystemExit(f"create-topics failed: {answer}")
    return elapsed, answer


def fail_log_dir(
    broker_http: httpx.Client,
    *,
    broker_id: int,
    epoch: int,
    topic: str,
    topic_id: str,
    partitions: int,
    after_offset: int,
) -> dict[str, Any]:
    """Send one AlterReplicaState, then follow the metadata log until every partition has a
    new leader; answers the timings."""
    body = {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "new_state": 1,
        "reason": "log dir failure (benchmark)",
        "topics": [{"name": topic, "partitions": list(range(partitions))}],
    }
    started = time.perf_counter()
    response = broker_http.post("/internal/v1/alter-replica-state", json=body)
    acknowledged = time.perf_counter() - started
    answer = response.json()
    if response.status_code != 200 or answer["error_code"] != 0:
        raise SystemExit(f"alter-replica-state failed: {response.status_code} {answer}")
    moved: set[int] = set()
    offset = after_offset
    fetches = 0
    while len(moved) < partitions:
        if time.perf_counter() - started > 60:
            raise SystemExit(f"only {len(moved)} of {partitions} partitions moved in 60 s")
        fetched = broker_http.get(
            "/internal/v1/metadata",
            params={"after_offset": offset, "max_records": 10000, "wait_ms": 1000},
        ).json()
        fetches += 1
        for record in fetched["records"]:
            offset = record["offset"]
            data = record["data"]
            if (
                record["type"] == "PartitionChangeRecord"
                and data["topic_id"] == topic_id
                and data["leader"] >= 0
                and data["leader"] != broker_id
            ):
                moved.add(data["partition_id"])
    visible = time.perf_counter() - started
    return {
        "partitions": partitions,
        "acknowledged_s": round(acknowledged, 4),
        "all_new_leaders_visible_s": round(visible, 4),
        "metadata_fetches": fetches,
    }


def controller_commits(stack: Stack, name: str = "controller") -> list[dict[str, Any]]:
    """The commit lines of controller `name`'s log (none while it has written no log)."""
    path = stack.logs / f"{name}.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return [
        {
            "records": int(m[1]),
            "events": int(m[2]),
            "handle_ms": int(m[3]),
            "encode_ms": int(m[4]),
            # The log's transaction (the brokers are woken when it commits), the tables' after.
            "log_transaction_ms": int(m[5]),
            "tables_transaction_ms": int(m[6]),
            "transaction_ms": int(m[5]) + int(m[6]),
            "sql_statements": int(m[7]),
            "image_apply_ms": int(m[8]),
            "statement_timings": m[9],
        }
        for m in COMMIT_LINE.finditer(text)
    ]


def raw_bulk_update_s(stack: Stack, topic_id: str, partitions: int, repeat: int = 3) -> float:
    """The floor for what PostgreSQL itself needs: the same partition rows, in a copy of the
    partitions table (same indexes and fill factor), changed with one raw UPDATE and committed
    (a commit, like the controller's, waits for its WAL to reach disk)."""
    import psycopg

    url = stack.env["DATABASE_URL"].replace("postgres://", "postgresql://")
    indexes = list(range(partitions))
    times = []
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE bench_partition (LIKE cp_partition INCLUDING ALL)")
        conn.execute("ALTER TABLE bench_partition SET (fillfactor = 70)")
        conn.execute(
            "INSERT INTO bench_partition SELECT * FROM cp_partition WHERE topic_id = %s",
            [topic_id],
        )
        conn.commit()
        for attempt in range(repeat):
            leaders = [1 + ((i + attempt) % 50) for i in indexes]
            isrs = [f"[{leader}]" for leader in leaders]
            started = time.perf_counter()
            with conn.cursor() as cursor:
                cursor.execute(
                    "UPDATE bench_partition AS p SET leader = v.leader, isr = v.isr::jsonb, "
                    "leader_epoch = p.leader_epoch + 1, partition_epoch = p.partition_epoch + 1 "
                    "FROM unnest(%b::int[], %b::int[], %b::text[]) AS v(idx, leader, isr) "
                    "WHERE p.topic_id = %s AND p.partition_index = v.idx",
                    [indexes, leaders, isrs, topic_id],
                )
            conn.commit()
            times.append(time.perf_counter() - started)
        conn.execute("DROP TABLE bench_partition")
        conn.commit()
    return statistics.median(times)


def assigned(partitions: int, leader: int, brokers: int) -> list[dict[str, Any]]:
    others = [b for b in range(brokers) if b != leader]
    return [
        {
            "partition_index": i,
            "broker_ids": [leader, others[i % len(others)], others[(i + 7) % len(others)]],
        }
        for i in range(partitions)
    ]


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    http = stack.start_web(
        workers=args.workers, threads=args.threads, worker_class=args.worker_class
    )
    # The brokers (and the broker's AlterReplicaState) on the internal listener, the admin public.
    brokers = brokers_unfenced(stack, http.internal, args.brokers)
    admin = bearer_client(http.base, stack.tokens["admin"], timeout_s=60)
    broker_http = bearer_client(http.internal, stack.tokens["broker"], timeout_s=60)
    log(f"{args.brokers} brokers unfenced; creating {args.runs} topics of {args.partitions}")
    create_times = []
    for run in range(args.runs):
        elapsed, _ = create_topic(
            admin,
            {"name": f"placed-{run}", "num_partitions": args.partitions, "replication_factor": 3},
        )
        create_times.append(elapsed)
        log(f"  create-topics {args.partitions} partitions RF 3: {elapsed * 1000:.0f} ms")

    failures = []
    for failing, partitions in ((7, args.partitions), (11, args.partitions // 10)):
        topic = f"led-by-{failing}"
        _, answer = create_topic(
            admin, {"name": topic, "assignments": assigned(partitions, failing, args.brokers)}
        )
        head = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])
        log(f"broker {failing} leads {partitions} partitions; failing its log dir")
        result = fail_log_dir(
            broker_http,
            broker_id=failing,
            epoch=brokers.epochs[failing],
            topic=topic,
            topic_id=answer["topic_id"],
            partitions=partitions,
            after_offset=head,
        )
        log(f"  all new leaders visible after {result['all_new_leaders_visible_s'] * 1000:.0f} ms")
        result["topic_id"] = answer["topic_id"]
        failures.append(result)

    time.sleep(0.5)
    commits = controller_commits(stack)
    big = next(c for c in reversed(commits) if c["records"] == args.partitions and c["events"] == 1)
    small = next(c for c in reversed(commits) if c["records"] == args.partitions // 10)
    raw_s = raw_bulk_update_s(stack, failures[0]["topic_id"], args.partitions)
    commit_rate = args.partitions / (big["transaction_ms"] / 1000)
    controller_rate = args.partitions / (
        (big["handle_ms"] + big["encode_ms"] + big["transaction_ms"]) / 1000
    )
    raw_rate = args.partitions / raw_s
    verify = verify_stack(stack)
    brokers.stop()
    return {
        "setup": {
            "brokers": args.brokers,
            "partitions": args.partitions,
            "replication_factor": 3,
            "web": server_description(args.worker_class, args.workers, args.threads),
            "database": "PostgreSQL",
        },
        "create_topic_10k_rf3_s": {
            "runs": [round(t, 4) for t in create_times],
            "median": round(statistics.median(create_times), 4),
            "goal": 1.0,
        },
        "log_dir_failure": failures[0] | {"goal_s": 1.0},
        "log_dir_failure_small": failures[1],
        "controller_commit": big,
        "controller_commit_small": small,
        "sql_statements_constant": big["sql_statements"] == small["sql_statements"],
        "rates_per_s": {
            "controller_commit_transaction": round(commit_rate),
            "controller_handle_encode_and_commit": round(controller_rate),
            "raw_postgresql_bulk_update": round(raw_rate),
        },
        "ratio_commit_to_raw": round(commit_rate / raw_rate, 3),
        "ratio_handle_and_commit_to_raw": round(controller_rate / raw_rate, 3),
        "ratio_goals": {"commit_to_raw": 0.5, "handle_and_commit_to_raw": 0.3},
        "verify_metadata": verify,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--worker-class",
        default=WORKER_CLASS,
        help="gunicorn worker class (gthread: the old server, to compare)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    run_with_controller(measure, parser.parse_args(), "replica_state.json")


def run_with_controller(
    run: Callable[[Stack, argparse.Namespace], dict[str, Any]],
    args: argparse.Namespace,
    result_name: str,
) -> None:
    """`run` on a fresh stack with one `run_controller` worker logging at INFO (each large
    commit's timings); its figures go to bench/results/`result_name` and stdout."""
    with controller_stack() as stack:
        result = run(stack, args)
    write_result(result, result_name)


@contextlib.contextmanager
def controller_stack() -> Iterator[Stack]:
    """A fresh stack (PostgreSQL, Redis) with one `run_controller` worker logging at INFO, and
    no web tier yet (`stack.start_web`). Its processes' logs are kept under `BENCH_LOGS` when
    that names a directory (else they go with the run)."""
    kept = os.environ.get("BENCH_LOGS")
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_stack(
            Path(kept) if kept else Path(tmp) / "logs",
            # A 100,000-partition AlterReplicaState is a 4.8 MB body (the default bound: 1 MiB).
            settings={**BENCH_SETTINGS, "CP_LOG_LEVEL": "INFO", "CP_MAX_BODY_BYTES": "16777216"},
        ) as stack,
    ):
        stack.spawn(
            "controller",
            [sys.executable, "manage.py", "run_controller", "--loglevel", "INFO"],
            {"CP_NODE_ID": "controller", "CP_CONTROLLER_ID": "3000"},
        )
        stack.wait_active("controller")
        yield stack


def write_result(result: dict[str, Any], result_name: str) -> None:
    """The figures to bench/results/`result_name` and stdout; a run whose `verify_metadata`
    was not clean fails."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / result_name).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(result["verify_metadata"], result_name)


if __name__ == "__main__":
    main()
