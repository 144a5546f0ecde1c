"""Benchmark: a rolling upgrade of three stock Apache Kafka brokers from 4.1.1 to 4.4.0 under
this control plane (the real stack: PostgreSQL, Redis, gunicorn, `run_controller`,
`serve_kafka` with a CONTROLLER listener), clients running throughout.

A topic of `--partitions` partitions at replication factor 3 (`min.insync.replicas` 2); a
kafka-python idempotent `acks=all` producer sends one message every 20 ms and a consumer group
reads them. Each broker in turn gets SIGTERM (a controlled shutdown), starts again as 4.4.0 on
the same data dirs, and is unfenced and back in every ISR before the next goes
(devtools/rolling_upgrade.py). Then Kafka 4.4's own `kafka-features` finalizes metadata.version
4.4-IV2 on the controller listener.

Figures: how long each broker took to be back, the producer's longest stall (the longest time
without an acknowledgement while it kept sending), the group's longest stall and its largest lag
(acknowledged but unread, in messages and in time), acknowledged messages lost (0), and how long
the features' upgrade took to reach every broker.

    .venv/bin/python -m bench.rolling_upgrade [--partitions 12]
Writes bench/results/rolling_upgrade.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.replica_state import bearer_client
from devtools.real_brokers import brokers_running, brokers_under, start_controller_listener
from devtools.rolling_upgrade import roll
from devtools.stack import BENCH_SETTINGS, Stack, running_stack
from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker
from stock_kafka.broker_config import jaas_plain

RESULTS = Path(__file__).resolve().parent / "results"
FROM, TO = "4.1.1", "4.4.0"
TOPIC = "rolling"
NODE_IDS = (1, 2, 3)
CONTROLLER_ID = 3000
BROKER_SETTINGS = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "10000",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "min.insync.replicas": "2",
}


def log(message: str) -> None:
    print(f"[bench-rolling-upgrade] {message}", file=sys.stderr, flush=True)


def unfenced(stack: Stack, broker: KafkaBroker) -> bool:
    """Registered, and unfenced."""
    fenced = stack.sql("SELECT fenced FROM cp_broker WHERE broker_id = %s", broker.node_id)
    return bool(fenced) and not fenced[0][0]


def back_in_every_isr(stack: Stack) -> Any:
    def back(broker: KafkaBroker) -> bool:
        if not unfenced(stack, broker):
            return False
        rows = stack.sql("SELECT replicas, isr, leader FROM cp_partition")
        return bool(rows) and all(
            sorted(isr) == sorted(replicas) and leader >= 0 for replicas, isr, leader in rows
        )

    return back


def finalize(stack: Stack, port: int, work: Path) -> float:
    """`kafka-features upgrade` (Kafka 4.4's own) on the controller listener; the seconds until
    the controller answered."""
    config = work / "controller.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f"sasl.jaas.config={jaas_plain('admin', stack.tokens['admin'])}\n"
    )
    command = kafka.java_command(
        kafka.tool_class("FeatureCommand", TO),
        [
            "--bootstrap-controller",
            f"127.0.0.1:{port}",
            "--command-config",
            str(config),
            "upgrade",
            "--feature",
            "metadata.version=33",
            "--feature",
            "share.version=2",
            "--feature",
            "streams.version=1",
        ],
        heap="192m",
        version=TO,
    )
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"kafka-features upgrade failed:\n{done.stdout}{done.stderr}")
    return time.monotonic() - started


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    with running_stack(work / "stack", settings=dict(BENCH_SETTINGS)) as stack:
        web = stack.start_web(workers=1, threads=8)
        stack.start_controller("controller", CONTROLLER_ID)
        stack.wait_active("controller")
        port = start_controller_listener(stack)
        brokers = brokers_under(
            stack,
            port,
            work,
            NODE_IDS,
            controller_id=CONTROLLER_ID,
            prefix="rolling",
            heap=args.heap,
            overrides=BROKER_SETTINGS,
            version=FROM,
        )
        with brokers_running(brokers):
            back = back_in_every_isr(stack)
            log(f"waiting for {len(brokers)} brokers of Kafka {FROM} to register, unfenced")
            deadline = time.monotonic() + 240
            while not all(unfenced(stack, b) for b in brokers):
                if time.monotonic() > deadline:
                    raise TimeoutError("the brokers never registered")
                time.sleep(1)
            log(f"creating {TOPIC!r}: {args.partitions} partitions, replication factor 3")
            with bearer_client(web.base, stack.tokens["admin"], timeout_s=120) as http:
                body = {
                    "topics": [
                        {"name": TOPIC, "num_partitions": args.partitions, "replication_factor": 3}
                    ]
                }
                answer = http.post("/api/v1/create-topics", json=body).json()
                assert answer["topics"][0]["error_code"] == 0, answer
            while not all(back(b) for b in brokers):
                time.sleep(1)
            log(f"rolling {FROM} -> {TO}")
            figures, _, _ = roll(
                brokers,
                TO,
                topic=TOPIC,
                group="rolling-readers",
                back=back,
                between=lambda b: log(f"broker {b.node_id} back as {TO}, in every ISR"),
            )
            log("finalizing metadata.version 4.4-IV2")
            took = finalize(stack, port, work)
            level = stack.sql(
                "SELECT level FROM cp_finalized_feature WHERE name = %s", "metadata.version"
            )
            return {
                **figures.as_dict(),
                "features_upgrade_s": round(took, 2),
                "metadata_version_after": level[0][0] if level else None,
            }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.rolling_upgrade",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    parser.add_argument("--logs", default=None, help="keep the stack's and brokers' logs here")
    args = parser.parse_args()
    for version in (FROM, TO):
        if not kafka.installed(version):
            raise SystemExit(
                f"Kafka {version} is not installed: bash scripts/install-kafka.sh {version}"
            )
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-ru-"))
        result = {
            "from": FROM,
            "to": TO,
            "partitions": args.partitions,
            "replication_factor": 3,
            "heap": args.heap,
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            **run(args, Path(logs).resolve()),
        }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "rolling_upgrade.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
