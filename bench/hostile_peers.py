"""Benchmark: what the anonymous flood costs a broker of this control plane.

The real stack (PostgreSQL, Redis, gunicorn, one `run_controller`, one `serve_kafka` serving
clients on PLAINTEXT and SASL_PLAINTEXT and brokers on its CONTROLLER listener, all in one
process as a deployment runs it), three stock Kafka brokers of the pinned jars under it (500 ms
heartbeats) with an idempotent acks=all producer on a topic of theirs (RF 3, min.insync 2), and
a probe broker on the controller listener (registered as broker 900, as the broker principal):
every 250 ms it sends a Raft Fetch at the log's end (Fetch v17, no wait: the round trip of a
caught-up broker's fetch) and its BrokerHeartbeat, and times each. Three phases of `--seconds`
each (five sessions by default):

- `no_flood`;
- `client_listeners_flooded`: on each client listener `--connections` connections announce the
  largest frame it takes and send nothing (PLAINTEXT, ANONYMOUS: 100 MiB - 4 KiB, and the
  finding's 27 of 8 B to 2 KiB; SASL_PLAINTEXT before authentication: up to 512 KiB), opened
  again as the listener closes them (devtools.flood, a process of its own);
- `controller_listener_flooded`: the same number on the controller listener (up to 512 KiB).

Each phase: the probe's Fetch and heartbeat round trips (p50, p99, max), the brokers fenced (the
stock ones and the probe: fencing records in the log), the producer's acknowledgements, failed
sends and longest stall, and what the flood held. `verify_metadata` at the end.

    make bench-hostile-peers       # or: .venv/bin/python -m bench.hostile_peers [--help]
Writes bench/results/hostile_peers.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.raft_fetch import Follower
from bench.replica_state import bearer_client
from bench.verify import fail_unless_clean, verify_stack
from bench.wire_protocol import percentile
from devtools.campaign_report import longest_stall
from devtools.flood import MAX_FRAME, SMALL_SIZES, UNAUTHENTICATED_SIZES, Flood, Target
from devtools.kafka_clients import Producing, broker_metadata
from devtools.real_brokers import brokers_running, brokers_under, start_controller_listener
from devtools.stack import BENCH_SETTINGS, Stack, free_port, running_stack, wait_for
from stock_kafka import jars as kafka

RESULTS = Path(__file__).resolve().parent / "results"
NODE_IDS = (1, 2, 3)
PROBE_ID = 900
CONTROLLER_ID = 3000
TOPIC = "hostile-peers"
PARTITIONS = 6
HEARTBEAT_MS = 500
PROBE_EVERY_S = 0.25
FINDINGS_SMALL = 27
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "offsets.topic.replication.factor": "3",
    "min.insync.replicas": "2",
}
FEATURES = (  # what a Kafka 4.1 broker declares
    ("metadata.version", 7, 27),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
)


def log(message: str) -> None:
    print(f"[bench-hostile-peers] {message}", file=sys.stderr, flush=True)


class Probe:
    """A broker of its own on the controller listener: a Raft follower at the log's end and a
    heartbeat, each timed."""

    def __init__(self, stack: Stack, port: int) -> None:
        cluster_id, epoch = stack.sql("SELECT cluster_id, controller_epoch FROM cp_cluster")[0]
        self.follower = Follower(port, stack.tokens["broker"], str(cluster_id), PROBE_ID)
        self.epoch = int(epoch)
        self.offset, self.last_epoch = 0, 0
        self.broker_epoch = self._register(str(cluster_id))
        self.catch_up()
        self.heartbeat()  # caught up: unfenced

    def _register(self, cluster_id: str) -> int:
        from kio.schema.broker_registration.v4 import request as registration_v4

        request = registration_v4.BrokerRegistrationRequest(
            broker_id=PROBE_ID,  # type: ignore[arg-type]
            cluster_id=cluster_id,
            incarnation_id=uuid.uuid4(),
            listeners=(
                registration_v4.Listener(
                    name="PLAINTEXT", host="127.0.0.1", port=free_port(), security_protocol=0
                ),  # type: ignore[arg-type]
            ),
            features=tuple(
                registration_v4.Feature(name=n, min_supported_version=lo, max_supported_version=hi)  # type: ignore[arg-type]
                for n, lo, hi in FEATURES
            ),
            rack=None,
            is_migrating_zk_broker=False,
            log_dirs=(uuid.uuid4(),),
            previous_broker_epoch=-1,  # type: ignore[arg-type]
        )
        answer = self.follower.client.request(request)
        assert int(answer.error_code) == 0, answer
        return int(answer.broker_epoch)

    def fetch(self) -> float:
        """One fetch from where the probe is; the seconds it took."""
        from controlplane.controller.kraft.batches import decode_batches

        started = time.perf_counter()
        answer = self.follower.fetch(self.offset, self.last_epoch, self.epoch)
        took = time.perf_counter() - started
        (partition,) = answer.responses[0].partitions
        for batch in decode_batches(bytes(partition.records or b"")):
            self.offset, self.last_epoch = batch.last_offset + 1, batch.partition_leader_epoch
        return took

    def catch_up(self) -> None:
        before = -1
        while self.offset != before:
            before = self.offset
            self.fetch()

    def heartbeat(self) -> float:
        from kio.schema.broker_heartbeat.v1 import request as heartbeat_v1

        request = heartbeat_v1.BrokerHeartbeatRequest(
            broker_id=PROBE_ID,  # type: ignore[arg-type]
            broker_epoch=self.broker_epoch,  # type: ignore[arg-type]
            current_metadata_offset=self.offset - 1,  # type: ignore[arg-type]
            want_fence=False,
            want_shut_down=False,
            offline_log_dirs=(),
        )
        started = time.perf_counter()
        answer = self.follower.client.request(request)
        took = time.perf_counter() - started
        assert int(answer.error_code) == 0, answer
        return took


def spread(samples: list[float]) -> dict[str, float | int]:
    return {
        "n": len(samples),
        "p50_ms": round(percentile(samples, 50) * 1000, 2),
        "p99_ms": round(percentile(samples, 99) * 1000, 2),
        "max_ms": round(max(samples) * 1000, 2),
    }


def fencings_since(stack: Stack, offset: int) -> dict[str, int]:
    rows = stack.sql(
        'SELECT broker_id, count(*) FROM cp_metadata_record WHERE "offset" > %s'
        " AND record_type = 'BrokerRegistrationChangeRecord' AND (data->>'fenced')::int = 1"
        " GROUP BY broker_id",
        offset,
    )
    fenced = {int(broker): int(count) for broker, count in rows}
    return {
        "stock_brokers_fenced": sum(n for b, n in fenced.items() if b in NODE_IDS),
        "probe_fenced": fenced.get(PROBE_ID, 0),
    }


def log_end(stack: Stack) -> int:
    return int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def phase(
    stack: Stack, probe: Probe, producing: Producing, seconds: float, flood: list[Target]
) -> dict[str, Any]:
    offset = log_end(stack)
    fetches: list[float] = []
    heartbeats: list[float] = []
    running = Flood(flood) if flood else None
    if running is not None:
        running.start()  # every connection held before the phase's clock starts
    try:
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            fetches.append(probe.fetch())
            heartbeats.append(probe.heartbeat())
            time.sleep(PROBE_EVERY_S)
        ended = time.monotonic()
    finally:
        held = running.stop() if running is not None else []
    return {
        "seconds": round(ended - began, 1),
        "raft_fetch_rtt": spread(fetches),
        "heartbeat_rtt": spread(heartbeats),
        **fencings_since(stack, offset),
        "produce_acknowledged": producing.acknowledged_between(began, ended),
        "produce_errors": producing.errors_between(began, ended),
        "produce_longest_stall_s": longest_stall(producing.ack_times(), began, ended),
        "flood": [
            {k: t[k] for k in ("target", "count", "held_max", "held_min", "closed_by_listener")}
            for t in held
        ],
    }


@dataclasses.dataclass
class Running:
    controller_port: int
    client_ports: dict[str, int]  # PLAINTEXT, SASL_PLAINTEXT
    bootstrap: str  # the stock brokers'


@contextlib.contextmanager
def cluster(stack: Stack, work: Path, heap: str) -> Iterator[Running]:
    """The web node, the controller, `serve_kafka` and the three brokers, their topic created."""
    web = stack.start_web(workers=1, threads=8)
    stack.start_controller("controller", CONTROLLER_ID)
    stack.wait_active("controller")
    clients = {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port()}
    port = start_controller_listener(stack, client_ports=clients)
    brokers = brokers_under(
        stack,
        port,
        work,
        NODE_IDS,
        controller_id=CONTROLLER_ID,
        heap=heap,
        overrides=BROKER_PROPERTIES,
    )
    with brokers_running(brokers):
        unfenced = f"SELECT count(*) FROM cp_broker WHERE NOT fenced AND broker_id < {PROBE_ID}"
        wait_for(lambda: stack.sql(unfenced)[0][0] == len(NODE_IDS), 240, "brokers unfenced")
        with bearer_client(web.base, stack.tokens["admin"], timeout_s=60) as http:
            topic = {"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 3}
            answer = http.post("/api/v1/create-topics", json={"topics": [topic]}).json()
            assert answer["topics"][0]["error_code"] == 0, answer
        wait_for(
            lambda: all(len(broker_metadata(b, TOPIC)) == PARTITIONS for b in brokers),
            60,
            "the topic on every broker",
        )
        yield Running(port, clients, ",".join(b.bootstrap for b in brokers))


def measure(stack: Stack, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    with cluster(stack, work, args.heap) as running:
        port, listeners = running.controller_port, running.client_ports
        probe = Probe(stack, port)
        host, count = "127.0.0.1", args.connections
        floods = {
            "no_flood": [],
            "client_listeners_flooded": [
                Target(host, listeners["PLAINTEXT"], (MAX_FRAME,), count),
                Target(host, listeners["PLAINTEXT"], SMALL_SIZES, FINDINGS_SMALL, delay_s=1),
                Target(host, listeners["SASL_PLAINTEXT"], UNAUTHENTICATED_SIZES, count),
            ],
            "controller_listener_flooded": [Target(host, port, UNAUTHENTICATED_SIZES, count)],
        }
        phases = {}
        with Producing(running.bootstrap, "bench", TOPIC, client_id="bench-producer") as producing:
            wait_for(lambda: producing.acknowledged_count() >= 50, 90, "messages acknowledged")
            for name, targets in floods.items():
                log(f"{name}: {args.seconds:g} s")
                phases[name] = phase(stack, probe, producing, args.seconds, targets)
                log(json.dumps(phases[name]))
        return {"phases": phases, "producer_errors": len(producing.errors)}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hostile_peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="each phase (30)")
    parser.add_argument("--connections", type=int, default=1000, help="per flooded listener")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    parser.add_argument("--logs", default=None, help="keep the stack's and brokers' logs here")
    args = parser.parse_args()
    if not kafka.installed():
        raise SystemExit(f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh)")
    settings = {**BENCH_SETTINGS, "CP_BROKER_SESSION_TIMEOUT_MS": str(args.session_timeout_ms)}
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-hp-"))
        work = Path(logs).resolve()
        with running_stack(work / "stack", settings=settings) as stack:
            measured = measure(stack, work, args)
            verdict = verify_stack(stack)
    result = {
        "kafka_version": kafka.chosen_version(),
        "stock_brokers": len(NODE_IDS),
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "connections_per_listener": args.connections,
        "cpus": os.cpu_count(),
        **measured,
        "verify_metadata": verdict,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "hostile_peers.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(verdict, "hostile_peers")


if __name__ == "__main__":
    main()
