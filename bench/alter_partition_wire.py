"""Benchmark: a leader's AlterPartition on the controller listener, answered once the log holds it.

The real stack (PostgreSQL, Redis, gunicorn, one `run_controller`, `serve_kafka` with a
CONTROLLER listener). Three brokers of the bench's own speak Kafka's protocol on it, as a stock
broker does: each registers (BrokerRegistration v4), follows the metadata log by Raft Fetch and
heartbeats (every 500 ms, its own connection), so they stay unfenced. A topic of
`--partitions` partitions (RF 3) is led by broker 1. Then broker 1, as a leader whose followers
drop out of and come back into sync, sends AlterPartition v3 for `--batch` of them at a time
(the ISR shrunk to the leader and one follower, then whole again, each with the epochs the last
answer gave), one request in flight as Kafka's AlterPartitionManager sends them, `--rounds`
times: each request's round trip, p50 / p99 / max, and the changes a second. A stock broker
paces every ISR change (and a reassignment's end) by this answer. `verify_metadata` at the end.

    make bench-alter-partition     # or: .venv/bin/python -m bench.alter_partition_wire [--help]
Writes bench/results/alter_partition_wire.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.hostile_peers import Probe
from bench.raft_fetch import Follower
from bench.replica_state import bearer_client
from bench.verify import fail_unless_clean, verify_stack
from bench.wire_protocol import percentile
from devtools.real_brokers import start_controller_listener
from devtools.stack import BENCH_SETTINGS, Stack, running_stack, wait_for

RESULTS = Path(__file__).resolve().parent / "results"
CONTROLLER_ID = 3000
BROKER_IDS = (1, 2, 3)
TOPIC = "isr-changes"
HEARTBEAT_S = 0.5


def log(message: str) -> None:
    print(f"[bench-alter-partition] {message}", file=sys.stderr, flush=True)


class WireBroker:
    """A broker on the controller listener (`Probe`: registered, caught up on the log), its
    heartbeat on that connection every 500 ms once `beat` starts, and `client`, a connection of
    its own for AlterPartition."""

    def __init__(self, stack: Stack, port: int, broker_id: int) -> None:
        (cluster_id,) = stack.sql("SELECT cluster_id FROM cp_cluster")[0]
        self.probe = Probe(stack, port, broker_id)
        self.broker_id = broker_id
        self.broker_epoch = self.probe.broker_epoch
        self.client = Follower(port, stack.tokens["broker"], str(cluster_id), broker_id).client
        self._stop = threading.Event()
        self._beating = threading.Thread(target=self._beat, daemon=True)

    def beat(self) -> None:
        self._beating.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.probe.heartbeat()

    def stop(self) -> None:
        self._stop.set()
        if self._beating.is_alive():
            self._beating.join(timeout=5)


@contextlib.contextmanager
def wire_brokers(stack: Stack, port: int) -> Iterator[list[WireBroker]]:
    brokers: list[WireBroker] = []
    try:
        for broker_id in BROKER_IDS:
            brokers.append(WireBroker(stack, port, broker_id))
        for broker in brokers:  # caught up past the others' registrations too
            broker.probe.catch_up()
            broker.probe.heartbeat()
            broker.beat()
        unfenced = "SELECT count(*) FROM cp_broker WHERE NOT fenced"
        wait_for(lambda: stack.sql(unfenced)[0][0] == len(BROKER_IDS), 30, "brokers unfenced")
        yield brokers
    finally:
        for broker in brokers:
            broker.stop()


def alter_request(
    leader: WireBroker, topic_id: uuid.UUID, states: dict[int, tuple[int, int]], isr: list[int]
) -> Any:
    from kio.schema.alter_partition.v3 import request as alter_v3

    return alter_v3.AlterPartitionRequest(
        broker_id=leader.broker_id,  # type: ignore[arg-type]
        broker_epoch=leader.broker_epoch,  # type: ignore[arg-type]
        topics=(
            alter_v3.TopicData(
                topic_id=topic_id,
                partitions=tuple(
                    alter_v3.PartitionData(
                        partition_index=index,  # type: ignore[arg-type]
                        leader_epoch=leader_epoch,  # type: ignore[arg-type]
                        new_isr_with_epochs=tuple(
                            # -1: an epoch not given (KIP-903's check skipped)
                            alter_v3.BrokerState(broker_id=b, broker_epoch=-1)  # type: ignore[arg-type]
                            for b in isr
                        ),
                        leader_recovery_state=0,
                        partition_epoch=partition_epoch,  # type: ignore[arg-type]
                    )
                    for index, (leader_epoch, partition_epoch) in states.items()
                ),
            ),
        ),
    )


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    web = stack.start_web(workers=1, threads=8)
    stack.start_controller("controller", CONTROLLER_ID)
    stack.wait_active("controller")
    port = start_controller_listener(stack)
    with wire_brokers(stack, port) as brokers:
        leader = brokers[0]
        assignments = [
            {"partition_index": i, "broker_ids": list(BROKER_IDS)} for i in range(args.partitions)
        ]
        with bearer_client(web.base, stack.tokens["admin"], timeout_s=60) as http:
            topic = {"name": TOPIC, "assignments": assignments}
            answer = http.post("/api/v1/create-topics", json={"topics": [topic]}).json()
            assert answer["topics"][0]["error_code"] == 0, answer
        rows = stack.sql(
            "SELECT p.partition_index, p.leader_epoch, p.partition_epoch, p.topic_id "
            "FROM cp_partition p JOIN cp_topic t ON t.topic_id = p.topic_id WHERE t.name = %s",
            TOPIC,
        )
        topic_id = uuid.UUID(str(rows[0][3]))
        states = {int(i): (int(le), int(pe)) for i, le, pe, _ in rows}
        samples: list[float] = []
        changes = 0
        began = time.perf_counter()
        for round_number in range(args.rounds):
            shrink = round_number % 2 == 0
            isr = [1, 2] if shrink else list(BROKER_IDS)
            first = (round_number // 2 * args.batch) % args.partitions
            batch = {
                i % args.partitions: states[i % args.partitions]
                for i in range(first, first + args.batch)
            }
            started = time.perf_counter()
            answer = leader.client.request(alter_request(leader, topic_id, batch, isr))
            samples.append(time.perf_counter() - started)
            assert int(answer.error_code) == 0, answer
            for partition in answer.topics[0].partitions:
                assert int(partition.error_code) == 0, partition
                states[int(partition.partition_index)] = (
                    int(partition.leader_epoch),
                    int(partition.partition_epoch),
                )
                changes += 1
        elapsed = time.perf_counter() - began
    ms = sorted(s * 1000 for s in samples)
    return {
        "partitions": args.partitions,
        "partitions_per_request": args.batch,
        "requests": len(samples),
        "round_trip_ms": {
            "p50": round(percentile(ms, 50), 2),
            "p99": round(percentile(ms, 99), 2),
            "max": round(ms[-1], 2),
        },
        "isr_changes_per_s": round(changes / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.alter_partition_wire",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=100, help="partitions per AlterPartition")
    parser.add_argument("--rounds", type=int, default=200, help="AlterPartition requests")
    parser.add_argument("--logs", default=None, help="keep the stack's logs here")
    args = parser.parse_args()
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-ap-"))
        with running_stack(Path(logs).resolve() / "stack", settings=BENCH_SETTINGS) as stack:
            log(f"{args.rounds} AlterPartitions of {args.batch} of {args.partitions} partitions")
            measured = measure(stack, args)
            log(json.dumps(measured))
            verdict = verify_stack(stack)
    result = {"cpus": os.cpu_count(), **measured, "verify_metadata": verdict}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "alter_partition_wire.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(verdict, "alter_partition_wire")


if __name__ == "__main__":
    main()
