"""Benchmark: three stock Apache Kafka brokers lose the busiest one, under this control plane and
under Kafka's own KRaft controller with the same settings.

Each side runs the pinned Kafka jars as three brokers (`process.roles=broker`, a 256 MiB heap,
`broker.heartbeat.interval.ms` 500) and one topic of `--partitions` partitions at replication
factor 2, so each broker leads about a third; a kafka-python producer (`acks=all`) sends
throughout. Then:

- `kill -9` of the broker leading the most partitions: `live_leaders_s` is the time until every
  live broker's own Metadata names a live leader for every partition (the session timeout,
  `--session-timeout-ms`, included: the controller learns of the death by it);
- its restart, then `--shutdowns` (3) controlled shutdowns (SIGTERM) of the busiest broker, each
  once the broker stopped before is back in every ISR and every partition is led by its
  preferred replica again (the controllers' automatic elections): the same time, counted from
  the signal (no session timeout: the broker asks to leave), and `exited_s`, until its process
  ended (the controller lets it go once the brokers taking over have the moves: what a rolling
  restart waits per broker). Each figure is the samples' median, every sample's beside it (one
  sample on this machine spreads more than the two controllers differ).

Then, the stopped broker back, every ISR whole and every partition led by its preferred replica
(as before each phase after it), a controller failover: `kill -9` of the
active controller (here: one `run_controller` with a hot standby; Kafka's: the quorum leader of
three `process.roles=controller` nodes), a topic created through a broker at once (the broker
forwards it to whichever controller takes over), and `controller_failover_s`: the time from the
kill until every broker's own Metadata names a live leader for each of its partitions. A standby
here takes over once the killed controller's database session ended (at once; the lease,
`CP_CONTROLLER_LEASE_MS`, `--lease-ms`, bounds the paused or cut-off holder only); Kafka's voters
elect a new leader once their fetch timeout (`controller.quorum.fetch.timeout.ms`, 2 s) lapsed.

Then Kafka's own Java AdminClient (`bench/java/ReassignPartitions.java`) reassigns every
partition of the topic through the first broker in one call (KIP-455; each keeps its leader and
moves its follower to the broker holding none of it): the time until the controller lists no
reassignment left, and until that broker describes every partition on its new replicas, all in
sync (`--no-reassign` skips it; `--led-by-first` has no such phase).

Then the AdminClient (`bench/java/CreateTopics.java`) creates `--create-topics` topics of
`--create-partitions` partitions (replication factor 2) through the first broker (forwarded to
the controller), in calls of `--create-batch` topics made at once (Kafka's controller refuses
one operation of more than 10,000 records): the time until its answer, and until that broker
describes a leader for every partition. Each side's controller process's peak memory (VmHWM)
is reported beside the other's. At the end this side's stack runs `verify_metadata` (the
state tables against the metadata log replayed; `verify_metadata` in the JSON): the bench fails
unless it is clean.

The broker failures and the creation also have a figure from the brokers' own logs
(`leaderships_logged_s`, `leaderships_logged_ms`; bench/broker_logs.py): when the last broker
logged taking its last new leaderships, free of the Metadata polls' resolution.

With both sides, `ratios` gives this side's time over Kafka's controller's for every figure both
measured (below 1: this side was faster), the kill -9's also with the session timeout taken off
both. With `--rounds N` the sides run in turn N times (the order swapped every other round, each
round in its own directory): each ratio is the median of the rounds' own ratios, every round's
ratio is beside it (`ratios_per_round`), each side's median figure in `figures_median`, and every
round's whole result in `rounds`.

Each phase also has the producer's p99 acknowledgement latency while it lasted (sends that
failed counted apart). This control plane's side is the real stack (PostgreSQL, Redis, gunicorn,
`run_controller` and its hot standby, `serve_kafka` with a CONTROLLER listener, a Celery worker
and beat); Kafka's is three
controller nodes (`process.roles=controller`, `broker.session.timeout.ms` the same).

With `--led-by-first`, every partition's preferred leader is the first broker (its second
replica alternating between the other two), and the failure is the controlled shutdown of that
broker, leading every partition (no kill -9: its restart would recover every log first).

    .venv/bin/python -m bench.real_cluster_failover [--partitions 3000] [--rounds 3]
    .venv/bin/python -m bench.real_cluster_failover --partitions 10000 --led-by-first \
        --create-topics 0
    .venv/bin/python -m bench.real_cluster_failover --partitions 10000 --led-by-first \
        --create-topics 0 --sides ours --setting CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT=5000
Writes bench/results/real_cluster_failover.json (with `--led-by-first`:
real_cluster_failover_led_by_first.json; one side only: `..._ours_only.json`, `..._kafka_only.json`)
and prints it; progress goes to stderr.
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

from bench.admin_client_phases import create_topics, reassign_every_partition, require_a_jdk
from bench.broker_logs import LeadershipLog
from bench.cpu import cpu_line
from bench.kafka_controllers import (
    BROKER_SETTINGS,
    KAFKA_CONTROLLER_ID,
    NODE_IDS,
    kafkas_own_cluster,
    quorum_leader,
)
from bench.replica_state import bearer_client
from bench.side_by_side import across_rounds, median_phase, ratios
from bench.verify import fail_unless_clean, verify_stack
from devtools.kafka_clients import broker_metadata
from devtools.real_brokers import brokers_running, brokers_under, start_controller_listener
from devtools.stack import BENCH_SETTINGS, running_stack
from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker

RESULTS = Path(__file__).resolve().parent / "results"
BULK_PREFIX = "bulk-"
AFTER_FAILOVER = f"{BULK_PREFIX}after-controller-failover"  # allowed here as the bulk topics
TOPIC = "failover"
IMBALANCE_CHECK_S = "5"  # both controllers' automatic preferred-leader elections, every 5 s


def log(message: str) -> None:
    print(f"[bench-real-cluster-failover] {message}", file=sys.stderr, flush=True)


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


def described(bootstrap: str, name: str = TOPIC) -> list[dict[str, Any]]:
    """The topic's partitions as the broker at `bootstrap` knows them (its own Metadata)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        (topic,) = admin.describe_topics([name])
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


def logs_created(brokers: Sequence[KafkaBroker], partitions: int) -> bool:
    """Every broker has made the log of every replica it holds: the brokers have done with the
    topic's creation (a new partition's ISR is whole in the metadata before any log exists, so
    `isrs_whole` alone could start a failure while the brokers are still making logs)."""
    seen = described(brokers[0].bootstrap)
    if len(seen) != partitions:
        return False
    for broker in brokers:
        made = {entry.name for d in broker.data_dirs for entry in d.iterdir()}
        held = {
            f"{TOPIC}-{p['partition_index']}" for p in seen if broker.node_id in p["replica_nodes"]
        }
        if not held <= made:
            return False
    return True


def busiest(brokers: Sequence[KafkaBroker]) -> KafkaBroker:
    led = list(leaders(brokers[0].bootstrap).values())
    return max(brokers, key=lambda b: led.count(b.node_id))


def own_leaders(broker: KafkaBroker, name: str = TOPIC) -> dict[int, int]:
    """Each partition's leader as this broker's own Metadata says: asked of it alone, on one
    connection (kafka-python's admin client asks whichever broker it deems least loaded, the
    one going away included, and its bootstrap alone takes a poll's time)."""
    return {index: int(p.leader_id) for index, p in broker_metadata(broker, name).items()}


def live_leaders_everywhere(live: Sequence[KafkaBroker], gone: int, partitions: int) -> bool:
    for broker in live:
        seen = own_leaders(broker)
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
    taken = LeadershipLog(rest)
    began = time.monotonic()
    signal_it(leaving)
    elapsed = wait_until(
        lambda: live_leaders_everywhere(rest, leaving.node_id, partitions),
        120,
        f"after {what}",
        every=0.05,
    )
    logged = taken.last_taken_s(until=time.time())
    log(
        f"{what}: broker {leaving.node_id} led {led}; live leaders after {elapsed:.2f} s "
        f"(the brokers logged their last leaderships after {logged} s)"
    )
    phase = {
        "broker": leaving.node_id,
        "led": led,
        "live_leaders_s": round(elapsed, 3),
        "leaderships_logged_s": logged,
        "window": (began, time.monotonic()),
    }
    return leaving, phase


def sigterm(broker: KafkaBroker) -> None:
    assert broker.process is not None
    broker.process.send_signal(signal.SIGTERM)


def failover(
    brokers: list[KafkaBroker], partitions: int, led_by_first: bool, shutdowns: int = 1
) -> dict[str, Any]:
    """kill -9 of the busiest broker and its restart, then `shutdowns` controlled shutdowns of
    the busiest, each from every partition led by its preferred replica (the stopped broker
    restarted and back in every ISR before the next). With every partition led by the first
    broker, its controlled shutdowns only: after a kill -9 its restart recovers every one of its
    logs first (not within minutes at 10,000 on two cores)."""
    result: dict[str, Any] = {}
    if not led_by_first:
        victim, result["kill_9"] = lose_busiest(brokers, partitions, "kill -9", KafkaBroker.kill)
        restarted(brokers, partitions, victim)
    samples = []
    for sample in range(shutdowns):
        if sample:
            (stopped,) = [b for b in brokers if not b.running]
            restarted(brokers, partitions, stopped)
        wait_until(lambda: preferred_leaders(brokers), 120, "the preferred leaders back")
        samples.append(shut_down_busiest(brokers, partitions))
    result["controlled_shutdown"] = median_phase(samples)
    return result


def shut_down_busiest(brokers: list[KafkaBroker], partitions: int) -> dict[str, Any]:
    """A controlled shutdown of the busiest broker, and `exited_s`: from the signal until its
    process ended (the controller tells it to once the others have the moves; a rolling
    restart waits this long per broker)."""
    leaving, phase = lose_busiest(brokers, partitions, "controlled shutdown", sigterm)
    assert leaving.process is not None
    leaving.process.wait(timeout=300)
    phase["exited_s"] = round(time.monotonic() - phase["window"][0], 3)
    log(f"controlled shutdown: broker {leaving.node_id} exited after {phase['exited_s']:.2f} s")
    return phase


def restarted(brokers: list[KafkaBroker], partitions: int, broker: KafkaBroker) -> None:
    broker.start(format_storage=False)
    wait_until(lambda: answering(broker) and leaders(broker.bootstrap), 120, "the restart")
    wait_until(lambda: isrs_whole(brokers, partitions), 300, "back in every ISR", every=1)


def preferred_leaders(brokers: Sequence[KafkaBroker]) -> bool:
    """Every partition led by its first replica, as the first broker knows it (the
    controllers' automatic preferred-leader elections, every 5 s here)."""
    return all(p["leader_id"] == p["replica_nodes"][0] for p in described(brokers[0].bootstrap))


def led_by_first(partitions: int) -> dict[int, list[int]]:
    """Every partition's replicas, the first broker first (its preferred leader), the second
    replica alternating between the other two brokers."""
    first, *others = NODE_IDS
    return {i: [first, others[i % len(others)]] for i in range(partitions)}


# Partitions per call when the bench places them: Kafka's controller refuses one operation of
# over 10,000 records (a topic of 10,000 placed partitions is 10,001).
PLACED_PER_CALL = 5000


def create_topic(bootstrap: str, partitions: int, placed_by_us: bool) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
    try:
        if not placed_by_us:
            admin.create_topics([NewTopic(TOPIC, partitions, 2)], timeout_ms=120_000)
            return
        placed = led_by_first(partitions)
        first = {i: placed[i] for i in range(min(partitions, PLACED_PER_CALL))}
        admin.create_topics(
            [NewTopic(TOPIC, -1, -1, replica_assignments=first)], timeout_ms=120_000
        )
        for start in range(PLACED_PER_CALL, partitions, PLACED_PER_CALL):
            end = min(partitions, start + PLACED_PER_CALL)
            more = NewPartitions(end, [placed[i] for i in range(start, end)])
            admin.create_partitions({TOPIC: more}, timeout_ms=120_000)
    finally:
        admin.close()


def measure(
    brokers: list[KafkaBroker],
    args: argparse.Namespace,
    create: Callable[[], None],
    kill_controller: Callable[[], Callable[[], object]],
) -> dict[str, Any]:
    partitions = args.partitions
    wait_until(lambda: all(answering(b) for b in brokers), 180, "the brokers up", every=1)
    create()
    wait_until(
        lambda: live_leaders_everywhere(brokers, -2, partitions), 300, "the topic led", every=1
    )
    # Every log made and every follower caught up before any failure (on a loaded machine the
    # brokers take a while).
    wait_until(lambda: logs_created(brokers, partitions), 300, "every log made", every=1)
    wait_until(lambda: isrs_whole(brokers, partitions), 300, "every ISR whole", every=1)
    producing = Producing(",".join(b.bootstrap for b in brokers))
    try:
        time.sleep(3)
        phases = failover(brokers, partitions, args.led_by_first, args.shutdowns)
    finally:
        producing.stop()  # every send answered: the windows' figures are whole
    for phase in phases.values():
        phase["produce"] = producing.window(*phase.pop("window"))
    all_back(brokers, args.partitions)
    phases["controller_failover"] = controller_failover(brokers, kill_controller)
    if args.reassign:
        all_back(brokers, args.partitions)
        reassigned = reassign_every_partition(brokers, TOPIC, args.heap)
        log(
            f"reassigning {reassigned['partitions']} partitions: answered after "
            f"{reassigned['acknowledged_ms']:.0f} ms, completed after "
            f"{reassigned['reassignments_completed_ms']:.0f} ms, every partition moved after "
            f"{reassigned['every_partition_moved_ms']:.0f} ms; {cpu_line(reassigned)}"
        )
        phases["reassign_partitions"] = reassigned
    if args.create_topics:
        all_back(brokers, args.partitions)
        created = create_topics(
            brokers,
            BULK_PREFIX,
            args.create_topics,
            args.create_partitions,
            args.create_batch,
            args.heap,
        )
        log(
            f"{args.create_topics} topics x {args.create_partitions}: answered after "
            f"{created['acknowledged_ms']:.0f} ms, every partition led after "
            f"{created['every_partition_led_ms']:.0f} ms (the brokers logged their last "
            f"leaderships after {created['leaderships_logged_ms']} ms); {cpu_line(created)}"
        )
        phases["create_topics"] = created
    return phases


def all_back(brokers: list[KafkaBroker], partitions: int) -> None:
    """Every broker running, every ISR whole and every partition led by its preferred replica
    again, so that each phase starts from the same layout on both sides: the automatic
    preferred-leader elections (every 5 s) may not yet have given a restarted broker its
    leaderships back, and a reassignment that starts with two brokers leading everything is
    other work than one that starts with three leading a third each."""
    for broker in brokers:
        if not broker.running:
            broker.start(format_storage=False)
    wait_until(lambda: all(answering(b) for b in brokers), 180, "the brokers up", every=1)
    wait_until(lambda: isrs_whole(brokers, partitions), 300, "every ISR whole", every=1)
    wait_until(lambda: preferred_leaders(brokers), 120, "the preferred leaders back", every=1)


def controller_failover(
    brokers: list[KafkaBroker], kill_controller: Callable[[], Callable[[], object]]
) -> dict[str, Any]:
    """kill -9 of the active controller, then a topic created through the first broker; the
    time until every broker's own Metadata names a live leader for each of its partitions.
    `kill_controller()` finds the active controller (before the clock starts) and returns its
    kill."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    partitions = 3
    admin = KafkaAdminClient(bootstrap_servers=brokers[0].bootstrap, request_timeout_ms=120_000)
    try:
        kill = kill_controller()
        began = time.monotonic()
        kill()

        def create() -> bool:
            # An earlier try's may have been created, answered too late.
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(AFTER_FAILOVER, partitions, 2)])
            return True

        wait_until(
            create,
            120,
            "a topic created after the controller's kill",
            every=0.05,
        )
        created = time.monotonic() - began
    finally:
        admin.close()

    def led_everywhere() -> bool:
        for broker in brokers:
            seen = list(own_leaders(broker, AFTER_FAILOVER).values())
            if len(seen) != partitions or any(leader < 0 for leader in seen):
                return False
        return True

    wait_until(led_everywhere, 120, "the new topic led in every broker's Metadata", every=0.05)
    elapsed = time.monotonic() - began
    log(f"controller failover: created after {created:.2f} s, led everywhere after {elapsed:.2f} s")
    return {"topic_created_s": round(created, 3), "controller_failover_s": round(elapsed, 3)}


def peak_rss_mib(pid: int | None) -> float | None:
    """A process's peak resident memory (VmHWM), MiB; None once it is gone."""
    with contextlib.suppress(OSError, TypeError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def answering(broker: KafkaBroker) -> bool:
    """The broker's client listener answers (a client bootstraps from it)."""
    from kafka import KafkaAdminClient

    KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=5000).close()
    return True


def ours(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    settings = {
        **BENCH_SETTINGS,
        "CP_BROKER_SESSION_TIMEOUT_MS": str(args.session_timeout_ms),
        "CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS": IMBALANCE_CHECK_S,
        **({"CP_CONTROLLER_LEASE_MS": str(args.lease_ms)} if args.lease_ms else {}),
        **args.settings,
    }
    with running_stack(work / "stack", settings=settings) as stack:
        web = stack.start_web(workers=1, threads=8)
        controller = stack.start_controller("controller", KAFKA_CONTROLLER_ID)
        stack.wait_active("controller")
        # The hot standby (the same controller id: the one voter the brokers know).
        standby = stack.start_controller("standby", KAFKA_CONTROLLER_ID)
        # Celery beat and a worker, as deployed. The automatic preferred-leader elections
        # (auto.leader.rebalance.enable, every CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS) are
        # the active controller's own timer job, as they are a timer of Kafka's controller.
        stack.start_worker()
        stack.start_beat()
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
                topic: dict[str, Any] = (
                    {
                        "name": TOPIC,
                        "num_partitions": -1,
                        "replication_factor": -1,
                        "assignments": [
                            {"partition_index": i, "broker_ids": replicas}
                            for i, replicas in led_by_first(args.partitions).items()
                        ],
                    }
                    if args.led_by_first
                    else {
                        "name": TOPIC,
                        "num_partitions": args.partitions,
                        "replication_factor": 2,
                    }
                )
                body = {"topics": [topic]}
                answer = http.post("/api/v1/create-topics", json=body).json()
                assert answer["topics"][0]["error_code"] == 0, answer
                # The AdminClient's topics come through a broker's PLAINTEXT listener, so as
                # User:ANONYMOUS: allowed to create and describe them (Kafka's side has no
                # authorizer; this side authorizes every forwarded write).
                allowed = [
                    {
                        "resource_type": "TOPIC",
                        "resource_name": BULK_PREFIX,
                        "pattern_type": "PREFIXED",
                        "principal": "User:ANONYMOUS",
                        "host": "*",
                        "operation": operation,
                        "permission_type": "ALLOW",
                    }
                    for operation in ("CREATE", "DESCRIBE")
                ] + [
                    {  # the reassignment phase's AlterPartitionReassignments and its listing
                        "resource_type": "CLUSTER",
                        "resource_name": "kafka-cluster",
                        "pattern_type": "LITERAL",
                        "principal": "User:ANONYMOUS",
                        "host": "*",
                        "operation": operation,
                        "permission_type": "ALLOW",
                    }
                    for operation in ("ALTER", "DESCRIBE")
                ]
                granted = http.post("/api/v1/create-acls", json={"creations": allowed}).json()
                assert all(r["error_code"] == 0 for r in granted["results"]), granted

        def kill_controller() -> Callable[[], object]:
            phases["controller_peak_rss_mib"] = peak_rss_mib(controller.pid)
            return lambda: stack.kill("controller")

        phases: dict[str, Any] = {}
        with brokers_running(brokers):
            phases.update(measure(brokers, args, create, kill_controller))
            phases["standby_peak_rss_mib"] = peak_rss_mib(standby.pid)
            log("verify_metadata")
            phases["verify_metadata"] = verify_stack(stack)
            fail_unless_clean(phases["verify_metadata"], "real_cluster_failover")
            return phases


def kafkas(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    controllers, brokers = kafkas_own_cluster(
        work,
        args.heap,
        {
            "broker.session.timeout.ms": str(args.session_timeout_ms),
            # Its automatic preferred-leader elections run on the controllers, by their own
            # setting (the brokers' is not read): every 5 s, as this side's.
            "leader.imbalance.check.interval.seconds": IMBALANCE_CHECK_S,
        },
        voters=3,
    )
    phases: dict[str, Any] = {}

    def kill_controller() -> Callable[[], object]:
        leader = next(c for c in controllers if c.node_id == quorum_leader(controllers))
        phases["controller_peak_rss_mib"] = peak_rss_mib(leader.pid)
        return leader.kill

    with contextlib.ExitStack() as running:
        for controller in controllers:
            running.enter_context(controller)
        running.enter_context(brokers_running(brokers))
        phases.update(
            measure(
                brokers,
                args,
                lambda: create_topic(brokers[0].bootstrap, args.partitions, args.led_by_first),
                kill_controller,
            )
        )
        phases["standby_peak_rss_mib"] = max(
            peak_rss_mib(c.pid) or 0.0 for c in controllers if c.running
        )
        return phases


def run_round(args: argparse.Namespace, work: Path, number: int) -> dict[str, Any]:
    """Each side asked for, in turn: with several rounds, each its own directory and the sides'
    order swapped every other round (the side run second shares the machine with the first's
    leftovers: the page cache, PostgreSQL's and the JVMs' files)."""
    sides = [side for side in ("ours", "kafka") if args.sides in ("both", side)]
    if args.rounds > 1:
        log(f"round {number} of {args.rounds}")
        work = work / f"round-{number}"
        work.mkdir(parents=True, exist_ok=True)
        if number % 2 == 0:
            sides.reverse()
    found: dict[str, dict[str, Any] | None] = {"ours": None, "kafka": None}
    for side in sides:
        if side == "ours":
            log("this control plane")
            found["ours"] = ours(args, work)
        else:
            log("Kafka's own controller")
            found["kafka"] = kafkas(args, work)
    return {
        "this_control_plane": found["ours"],
        "kafka_controller": found["kafka"],
        "ratios": ratios(found["ours"], found["kafka"], args.session_timeout_ms / 1000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.real_cluster_failover",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    parser.add_argument(
        "--no-reassign",
        dest="reassign",
        action="store_false",
        help="skip the phase that reassigns every partition of the topic",
    )
    parser.add_argument(
        "--shutdowns",
        type=int,
        default=3,
        help="controlled shutdowns measured, each from the preferred leaders (their medians)",
    )
    parser.add_argument("--create-topics", type=int, default=1000, help="0: no creation phase")
    parser.add_argument("--create-partitions", type=int, default=10)
    parser.add_argument(
        "--create-batch",
        type=int,
        default=500,
        help="topics per createTopics call (Kafka's controller takes 10,000 records at most)",
    )
    parser.add_argument(
        "--lease-ms",
        type=int,
        default=0,
        help="this side's CP_CONTROLLER_LEASE_MS (0: its default, 6000)",
    )
    parser.add_argument(
        "--led-by-first",
        action="store_true",
        help="the first broker leads every partition, and its controlled shutdown is the failure",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of this side's stack (repeatable), e.g. CP_FOO=1",
    )
    parser.add_argument(
        "--sides",
        choices=("both", "ours", "kafka"),
        default="both",
        help="run this side, Kafka's, or both (the default: a ratio needs both)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the sides in turn this many times (the order swapped every other round): each "
        "ratio the median of the rounds' ratios, every round's beside it",
    )
    parser.add_argument("--logs", default=None, help="keep the stacks' and brokers' logs here")
    args = parser.parse_args()
    if args.shutdowns < 1:
        parser.error("--shutdowns takes 1 or more")
    if args.rounds < 1:
        parser.error("--rounds takes 1 or more")
    if any("=" not in setting for setting in args.setting):
        parser.error("--setting takes NAME=VALUE")
    args.settings = dict(setting.split("=", 1) for setting in args.setting)
    if args.led_by_first:
        args.reassign = False  # its one failure is the shutdown of the broker leading them all
    if not kafka.installed():
        raise SystemExit(f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh)")
    if args.create_topics or args.reassign:
        require_a_jdk()
    with contextlib.ExitStack() as scope:
        logs = args.logs or scope.enter_context(tempfile.TemporaryDirectory(prefix="bench-rcf-"))
        work = Path(logs).resolve()
        rounds = [run_round(args, work, number) for number in range(1, args.rounds + 1)]
    result: dict[str, Any] = {
        "kafka_version": kafka.chosen_version(),
        "partitions": args.partitions,
        "replication_factor": 2,
        "led_by_first": args.led_by_first,
        "session_timeout_ms": args.session_timeout_ms,
        "controller_lease_ms": args.lease_ms or None,
        "heap": args.heap,
        "settings": args.settings,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }
    if len(rounds) == 1:
        result.update(rounds[0])
    else:
        result.update(across_rounds(rounds), rounds=rounds)
    RESULTS.mkdir(exist_ok=True)
    name = "real_cluster_failover_led_by_first" if args.led_by_first else "real_cluster_failover"
    if args.sides != "both":
        name += f"_{args.sides}_only"
    out = RESULTS / f"{name}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
