"""Benchmark: three stock Apache Kafka brokers lose the busiest one, under this control plane and
under Kafka's own KRaft controller with the same settings.

Each side runs the pinned Kafka jars as three brokers (`process.roles=broker`, a 256 MiB heap,
`broker.heartbeat.interval.ms` 500) and one topic of `--partitions` partitions at replication
factor 2, so each broker leads about a third; a kafka-python producer (`acks=all`) sends
throughout. Then, twice:

- `kill -9` of the broker leading the most partitions: `live_leaders_s` is the time until every
  live broker's own Metadata names a live leader for every partition (the session timeout,
  `--session-timeout-ms`, included: the controller learns of the death by it);
- its restart, then a controlled shutdown (SIGTERM) of the busiest broker: the same time,
  counted from the signal (no session timeout: the broker asks to leave).

Each phase also has the producer's p99 acknowledgement latency while it lasted (sends that
failed counted apart). This control plane's side is the real stack (PostgreSQL, Redis, gunicorn,
`run_controller`, `serve_kafka` with a CONTROLLER listener); Kafka's is one controller node
(`process.roles=controller`, `broker.session.timeout.ms` the same).

    .venv/bin/python -m bench.real_cluster_failover [--partitions 3000]
Writes bench/results/real_cluster_failover.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.replica_state import bearer_client
from devtools.real_brokers import brokers_running, brokers_under, start_controller_listener
from devtools.stack import BENCH_SETTINGS, running_stack
from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "failover"
NODE_IDS = (1, 2, 3)
KAFKA_CONTROLLER_ID = 3000


def log(message: str) -> None:
    print(f"[bench-real-cluster-failover] {message}", file=sys.stderr, flush=True)


class KafkaController(KafkaBroker):
    """Kafka's own KRaft controller: one `process.roles=controller` node, PLAINTEXT."""

    def properties(self) -> dict[str, str]:
        endpoint = f"CONTROLLER://{self.host}:{self.port}"
        return {
            "process.roles": "controller",
            "node.id": str(self.node_id),
            "listeners": endpoint,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "controller.quorum.voters": f"{self.node_id}@{self.host}:{self.port}",
            "log.dirs": str(self.data_dir),
            **self.overrides,
        }


class Producing:
    """acks=all sends, one every few ms, each acknowledgement's latency kept with its time."""

    def __init__(self, bootstrap: str) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", retries=2**31 - 1, linger_ms=0
        )
        self.acks: list[tuple[float, float]] = []  # (sent at, latency s)
        self.failed: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.monotonic()
            future = self.producer.send(TOPIC, b"x" * 100)
            future.add_callback(lambda _, s=sent: self.acks.append((s, time.monotonic() - s)))
            future.add_errback(lambda _, s=sent: self.failed.append(s))
            time.sleep(0.005)

    def window(self, began: float, ended: float) -> dict[str, Any]:
        latencies = sorted(lat for at, lat in list(self.acks) if began <= at <= ended)
        p99 = latencies[int(0.99 * (len(latencies) - 1))] if latencies else None
        return {
            "acknowledged": len(latencies),
            "failed": sum(1 for at in list(self.failed) if began <= at <= ended),
            "p99_ms": None if p99 is None else round(p99 * 1000, 1),
            "median_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        }

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.producer.flush(timeout=60)
        self.producer.close(timeout=30)


def described(bootstrap: str) -> list[dict[str, Any]]:
    """The topic's partitions as the broker at `bootstrap` knows them (its own Metadata)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        (topic,) = admin.describe_topics([TOPIC])
    finally:
        admin.close()
    return list(topic["partitions"])


def leaders(bootstrap: str) -> dict[int, int]:
    """Each partition's leader as the broker at `bootstrap` knows it."""
    return {p["partition_index"]: p["leader_id"] for p in described(bootstrap)}


def isrs_whole(brokers: Sequence[KafkaBroker], partitions: int) -> bool:
    """Every partition's ISR holds every replica, as the first broker knows it: a failure
    now leaves each partition a live ISR member (no unclean election needed)."""
    seen = described(brokers[0].bootstrap)
    return len(seen) == partitions and all(
        set(p["isr_nodes"]) == set(p["replica_nodes"]) for p in seen
    )


def busiest(brokers: Sequence[KafkaBroker]) -> KafkaBroker:
    led = list(leaders(brokers[0].bootstrap).values())
    return max(brokers, key=lambda b: led.count(b.node_id))


def live_leaders_everywhere(live: Sequence[KafkaBroker], gone: int, partitions: int) -> bool:
    for broker in live:
        seen = leaders(broker.bootstrap)
        if len(seen) != partitions or any(leader in (gone, -1) for leader in seen.values()):
            return False
    return True


def wait_until(check: Any, timeout: float, what: str, every: float = 0.2) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        with contextlib.suppress(Exception):  # a broker may be restarting
            if check():
                return time.monotonic() - began
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {timeout} s")


def lose_busiest(
    brokers: list[KafkaBroker], partitions: int, what: str, signal_it: Callable[[KafkaBroker], Any]
) -> tuple[KafkaBroker, dict[str, Any]]:
    """Signal the broker leading the most partitions; the time until every other broker's own
    Metadata names a live leader for every partition, and the phase's (start, end) as
    `window` for the producer's figures."""
    leaving = busiest(brokers)
    led = list(leaders(leaving.bootstrap).values()).count(leaving.node_id)
    rest = [b for b in brokers if b is not leaving]
    began = time.monotonic()
    signal_it(leaving)
    elapsed = wait_until(
        lambda: live_leaders_everywhere(rest, leaving.node_id, partitions), 120, f"after {what}"
    )
    log(f"{what}: broker {leaving.node_id} led {led}; live leaders after {elapsed:.2f} s")
    phase = {
        "broker": leaving.node_id,
        "led": led,
        "live_leaders_s": round(elapsed, 3),
        "window": (began, time.monotonic()),
    }
    return leaving, phase


def sigterm(broker: KafkaBroker) -> None:
    assert broker.process is not None
    broker.process.send_signal(signal.SIGTERM)


def failover(brokers: list[KafkaBroker], partitions: int) -> dict[str, Any]:
    """kill -9 of the busiest broker, its restart, a controlled shutdown of the busiest."""
    result: dict[str, Any] = {}
    victim, result["kill_9"] = lose_busiest(brokers, partitions, "kill -9", KafkaBroker.kill)
    victim.start(format_storage=False)
    wait_until(lambda: answering(victim) and leaders(victim.bootstrap), 120, "the restart")
    wait_until(lambda: isrs_whole(brokers, partitions), 300, "back in every ISR", every=1)
    time.sleep(6)  # the preferred leaders back (leader.imbalance.check.interval.seconds 5)
    leaving, result["controlled_shutdown"] = lose_busiest(
        brokers, partitions, "controlled shutdown", sigterm
    )
    assert leaving.process is not None
    leaving.process.wait(timeout=60)
    return result


BROKER_SETTINGS = {
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    "leader.imbalance.check.interval.seconds": "5",
    "num.partitions": "1",
}


def create_topic(bootstrap: str, partitions: int) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
    try:
        admin.create_topics([NewTopic(TOPIC, partitions, 2)], timeout_ms=120_000)
    finally:
        admin.close()


def measure(
    brokers: list[KafkaBroker], partitions: int, create: Callable[[], None]
) -> dict[str, Any]:
    wait_until(lambda: all(answering(b) for b in brokers), 180, "the brokers up", every=1)
    create()
    wait_until(
        lambda: live_leaders_everywhere(brokers, -2, partitions), 300, "the topic led", every=1
    )
    # Followers caught up before any failure (on a loaded machine they take a while).
    wait_until(lambda: isrs_whole(brokers, partitions), 300, "every ISR whole", every=1)
    producing = Producing(",".join(b.bootstrap for b in brokers))
    try:
        time.sleep(3)
        phases = failover(brokers, partitions)
    finally:
        producing.stop()  # every send answered: the windows' figures are whole
    for phase in phases.values():
        phase["produce"] = producing.window(*phase.pop("window"))
    return phases


def answering(broker: KafkaBroker) -> bool:
    """The broker's client listener answers (a client bootstraps from it)."""
    from kafka import KafkaAdminClient

    KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=5000).close()
    return True


def ours(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    settings = {
        **BENCH_SETTINGS,
        "CP_BROKER_SESSION_TIMEOUT_MS": str(args.session_timeout_ms),
        "CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS": "5",
    }
    with running_stack(work / "stack", settings=settings) as stack:
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

        def create() -> None:  # as the admin (a broker's PLAINTEXT client is ANONYMOUS here)
            with bearer_client(web.base, stack.tokens["admin"], timeout_s=120) as http:
                body = {
                    "topics": [
                        {"name": TOPIC, "num_partitions": args.partitions, "replication_factor": 2}
                    ]
                }
                answer = http.post("/api/v1/create-topics", json=body).json()
                assert answer["topics"][0]["error_code"] == 0, answer

        with brokers_running(brokers):
            return measure(brokers, args.partitions, create)


def kafkas_own_cluster(
    work: Path, heap: str, controller_overrides: dict[str, str]
) -> tuple[KafkaController, list[KafkaBroker]]:
    """Kafka's own KRaft controller (one `process.roles=controller` node) and the three brokers
    under it, on plaintext listeners: the side-by-side benchmarks' other side."""
    cluster_id = kafka_cluster_id()
    controller = KafkaController(
        node_id=KAFKA_CONTROLLER_ID,
        cluster_id=cluster_id,
        controller="",
        principal="",
        token="",
        work_dir=work / "kafka-controller",
        heap=heap,
        overrides=controller_overrides,
    )
    plain = {
        **BROKER_SETTINGS,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }
    brokers = [
        KafkaBroker(
            node_id=node,
            cluster_id=cluster_id,
            controller=f"127.0.0.1:{controller.port}",
            controller_id=KAFKA_CONTROLLER_ID,
            principal="unused",
            token="unused",
            work_dir=work / f"kafka-{node}",
            heap=heap,
            overrides=plain,
        )
        for node in NODE_IDS
    ]
    return controller, brokers


def kafkas(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    controller, brokers = kafkas_own_cluster(
        work, args.heap, {"broker.session.timeout.ms": str(args.session_timeout_ms)}
    )
    with controller, brokers_running(brokers):
        return measure(
            brokers, args.partitions, lambda: create_topic(brokers[0].bootstrap, args.partitions)
        )


def kafka_cluster_id() -> str:
    """A new cluster id as `kafka-storage random-uuid` makes one (16 random bytes, base64)."""
    import base64
    import uuid

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.real_cluster_failover",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    parser.add_argument("--logs", default=None, help="keep the stacks' and brokers' logs here")
    args = parser.parse_args()
    if not kafka.installed():
        raise SystemExit(f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh)")
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-rcf-"))
        work = Path(logs).resolve()
        log("this control plane")
        result_ours = ours(args, work)
        log("Kafka's own controller")
        result_kafka = kafkas(args, work)
    result = {
        "kafka_version": kafka.pinned_version(),
        "partitions": args.partitions,
        "replication_factor": 2,
        "session_timeout_ms": args.session_timeout_ms,
        "heap": args.heap,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "this_control_plane": result_ours,
        "kafka_controller": result_kafka,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "real_cluster_failover.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
