"""Benchmark: the controller's commit of a log dir failure at 10,000 and 100,000 partitions,
in one process (no HTTP, no broker), so that each step's growth shows on its own.

A fresh PostgreSQL database, the real controller (`ControllerRuntime`) and its real commit path:
60 brokers registered and unfenced, then, per size, topics of 10,000 partitions (RF 3) led by one
broker, and one AlterReplicaState naming every one of them. Per size: handle, encode, transaction
(with its SQL statements) and image application, in ms and in µs per partition; the growth of
each from the small size to the large (goal: at most 1.2 x per partition); the topics'
creation (`creations`: one CreateTopics commit per 10,000 partitions), in ms and µs per
partition; a round of the controller's preferred-leader rebalance (`rebalance_round_ms`), on
the balanced cluster and once those partitions are off their preferred leader;
`verify_metadata` at the end.

    python -m bench.commit_scale                      # 10,000 and 100,000
    python -m bench.commit_scale --sizes 10000 --profile /tmp/prof   # cProfile per size
    python -m bench.commit_scale --sizes 10000 --without timeline    # what a projection costs

`--without` leaves the named derived projections (timeline, health: they load nothing back into
the image) out of every commit, to measure what each costs the commit; the state tables
`verify_metadata` compares are written as ever.

Writes bench/results/commit_scale.json and prints it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.verify import fail_unless_clean, verify_in_process

RESULTS = Path(__file__).resolve().parent / "results"
BROKERS = 60
# The projections that load nothing back into the image (derived views of the log): the only
# ones `--without` may leave out.
DERIVED_PROJECTIONS = ("timeline", "health")
TOPIC_PARTITIONS = 10_000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--profile", help="write a cProfile (.prof and top-40 .txt) per size here")
    parser.add_argument(
        "--without", default="", help="projections left out of the commits, comma-separated"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from devtools.stack import _admin_connection, database_url

    database = f"cp_bench_commit_{uuid.uuid4().hex[:8]}"
    with _admin_connection() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    try:
        os.environ["DATABASE_URL"] = database_url(database)
        for name in ("CP_REDIS_URL", "CELERY_BROKER_URL"):
            os.environ.pop(name, None)  # the embedded runtime: nothing else takes part
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
        left_out = [name for name in args.without.split(",") if name]
        result = run(sizes, args.profile, left_out)
    finally:
        from django.db import connections

        connections.close_all()
        with _admin_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "commit_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(result["verify_metadata"], "commit_scale")


def run(sizes: list[int], profile_dir: str | None, left_out: list[str]) -> dict[str, Any]:
    import django

    django.setup()
    leave_out_projections(left_out)
    from controlplane.runtime.controller import tune_controller_process

    tune_controller_process()  # as run_controller does
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    from controlplane.runtime.controller import get_runtime
    from controlplane.runtime.timer import start_timer_thread

    runtime = get_runtime()
    epochs = register_brokers(runtime)
    log(f"{BROKERS} brokers registered and unfenced")
    sessions = SessionsKeptAlive(runtime)  # heartbeats, as the web nodes would record them
    timer = start_timer_thread(runtime)  # its fencing rounds' lateness is measured
    figures: dict[str, Any] = {}
    as_applied: dict[str, Any] = {}
    creations: dict[str, Any] = {}
    try:
        for leader, size in zip(range(1, len(sizes) + 1), sizes, strict=True):
            started = time.perf_counter()
            topic_ids = create_topics_led_by(runtime, leader, size)
            creations[str(size)] = creation_figures(time.perf_counter() - started, size)
            log(f"created {size} partitions: {creations[str(size)]}")
            balanced_ms = rebalance_round_ms(runtime)
            log(f"broker {leader} leads {size} partitions; failing its log dir")
            profiler = cProfile.Profile() if profile_dir else None
            runtime.timer_lag.take()
            figures[str(size)] = fail_log_dir(runtime, leader, epochs[leader], topic_ids, profiler)
            figures[str(size)]["timer_worst_lag_ms"] = timer_worst_lag(runtime)
            figures[str(size)]["rebalance_round_ms"] = {
                "balanced": balanced_ms,
                "these_partitions_off_their_preferred_leader": rebalance_round_ms(runtime),
            }
            if profiler is not None and profile_dir:
                write_profile(profiler, Path(profile_dir), size)
            log(f"  {figures[str(size)]}")
            sliced = leader + SLICED_LEADER_OFFSET
            topic_ids = create_topics_led_by(runtime, sliced, size)
            log(f"broker {sliced} leads {size} partitions; its report applied as reports are")
            as_applied[str(size)] = fail_log_dir_as_reported(
                runtime, sliced, epochs[sliced], topic_ids
            )
            log(f"  {as_applied[str(size)]}")
    finally:
        timer.set()
        sessions.stop()
    verify = verify_in_process()
    return {
        "setup": {
            "brokers": BROKERS,
            "sizes": sizes,
            "replication_factor": 3,
            "process": "one",
            "projections_left_out": left_out,
        },
        "commits": figures,
        "as_reports_are_applied": as_applied,
        "creations": creations,
        "growth_per_partition": growth(figures, sizes),
        "growth_goal": 1.2,
        "verify_metadata": verify,
    }


def leave_out_projections(names: list[str]) -> None:
    """Commits from now on write none of these projections (a measurement, never a mode)."""
    from controlplane.runtime.projections import PROJECTIONS

    for name in names:
        if name not in DERIVED_PROJECTIONS:
            raise SystemExit(
                f"{name!r} is not one of {', '.join(DERIVED_PROJECTIONS)}: the others write "
                "the state tables the image is loaded from and verify_metadata compares"
            )
        PROJECTIONS.pop(name, None)


def handle(runtime: Any, api: str, payload: dict[str, Any]) -> dict[str, Any]:
    from controlplane.runtime.conversation import ControllerEvent, RequestContext

    event = ControllerEvent(api, payload, RequestContext(principal="User:bench"))
    response: dict[str, Any] = runtime.handle(event).response
    return response


def rebalance_round_ms(runtime: Any) -> float:
    """One round of the controller's preferred-leader rebalance as its timer runs it (here it
    elects nothing: the cluster is balanced, or the preferred leaders' log dir is offline)."""
    started = time.perf_counter()
    response = handle(runtime, "RebalanceLeaders", {})
    elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
    assert response == {"error_code": 0, "elections": 0, "enabled": True}, response
    return elapsed_ms


def register_brokers(runtime: Any) -> dict[int, int]:
    from bench.replica_state import registration_body
    from controlplane.runtime.lease import cluster_get_or_create

    cluster_id = cluster_get_or_create().cluster_id
    epochs = {}
    for broker_id in range(BROKERS):
        answer = handle(runtime, "BrokerRegistration", registration_body(broker_id, cluster_id))
        epochs[broker_id] = answer["broker_epoch"]
    for broker_id, epoch in epochs.items():
        handle(
            runtime,
            "BrokerHeartbeat",
            {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**12},
        )
    return epochs


def creation_figures(seconds: float, size: int) -> dict[str, Any]:
    """The creation's commits (one CreateTopics of 10,000 partitions each), as a whole and per
    partition."""
    return {
        "topics": -(-size // TOPIC_PARTITIONS),
        "total_ms": round(seconds * 1000),
        "us_per_partition": round(seconds * 1e6 / size, 1),
    }


def create_topics_led_by(runtime: Any, leader: int, size: int) -> list[str]:
    others = [b for b in range(BROKERS) if b != leader]
    topic_ids = []
    for start in range(0, size, TOPIC_PARTITIONS):
        count = min(TOPIC_PARTITIONS, size - start)
        assignments = [
            {
                "partition_index": i,
                "broker_ids": [leader, others[i % len(others)], others[(i + 7) % len(others)]],
            }
            for i in range(count)
        ]
        name = f"led-by-{leader}-{start // TOPIC_PARTITIONS}"
        answer = handle(
            runtime, "CreateTopics", {"topics": [{"name": name, "assignments": assignments}]}
        )
        topic = answer["topics"][0]
        if topic["error_code"] != 0:
            raise SystemExit(f"create-topics failed: {topic}")
        topic_ids.append(topic["topic_id"])
    return topic_ids


def fail_log_dir(
    runtime: Any,
    broker_id: int,
    epoch: int,
    topic_ids: list[str],
    profiler: cProfile.Profile | None,
) -> dict[str, Any]:
    from controlplane.runtime import controller as controller_module

    size = 0
    topics = []
    image = runtime.image
    for topic_id in topic_ids:
        topic = image.topics[topic_id]
        topics.append({"name": topic.name, "partitions": list(range(topic.partition_count))})
        size += topic.partition_count
    payload = {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "new_state": 1,
        "reason": "log dir failure (benchmark)",
        "topics": topics,
    }
    commit_line = CommitLine()
    controller_module.logger.addHandler(commit_line)
    try:
        started = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        answer = handle(runtime, "AlterReplicaState", payload)
        if profiler is not None:
            profiler.disable()
        total = time.perf_counter() - started
    finally:
        controller_module.logger.removeHandler(commit_line)
    timings = commit_line.timings
    if answer.get("error_code"):
        raise SystemExit(f"alter-replica-state failed: {answer}")
    parts = ("handle_ms", "encode_ms", "transaction_ms", "image_apply_ms")
    timings["total_ms"] = round(total * 1000)
    timings["us_per_partition"] = {
        part.removesuffix("_ms"): round(timings[part] * 1000 / size, 1)
        for part in (*parts, "total_ms")
    }
    timings["partition_changes_per_s"] = round(size / total)
    return timings


SLICED_LEADER_OFFSET = 20  # the broker whose report goes the way reports go: brokers 21, 22


def fail_log_dir_as_reported(
    runtime: Any, broker_id: int, epoch: int, topic_ids: list[str]
) -> dict[str, Any]:
    """The same failure as `fail_log_dir`, applied as a broker's report is: queued, then
    applied by the controller in bounded commits (replicas.services), while the timer runs."""
    from django.conf import settings

    from controlplane.runtime.lease import now_ms
    from replicas.models import PendingReplicaStateChange
    from replicas.services import replica_state_apply_pending

    image = runtime.image
    topics = [
        {"name": image.topics[t].name, "partitions": list(range(image.topics[t].partition_count))}
        for t in topic_ids
    ]
    payload = {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "new_state": 1,
        "reason": "log dir failure (benchmark)",
        "topics": topics,
    }
    PendingReplicaStateChange.objects.create(
        request_id=f"bench-{broker_id}",
        broker_id=broker_id,
        broker_epoch=epoch,
        payload=payload,
        principal="User:bench",
        received_ms=now_ms(),
    )
    before = image.last_offset
    runtime.timer_lag.take()
    started = time.perf_counter()
    replica_state_apply_pending()
    total = time.perf_counter() - started
    # The slices' tables wait for the timer (controlplane.runtime.metadata_log.TablesBehind):
    # the change is whole once they followed too.
    deadline = time.monotonic() + 120
    while runtime.tables_behind and time.monotonic() < deadline:
        time.sleep(0.01)
    followed = time.perf_counter() - started
    return {
        "records": runtime.image.last_offset - before,
        "commits_of_at_most": settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT,
        "total_ms": round(total * 1000),
        "tables_followed_ms": round(followed * 1000),
        "timer_worst_lag_ms": timer_worst_lag(runtime),
    }


def timer_worst_lag(runtime: Any) -> int:
    """The fencing rounds' worst lateness since the last reading, once the round that waited
    behind the last commit has run (it records its lateness when it gets the controller)."""
    time.sleep(TIMER_INTERVAL_S * 2)
    return round(runtime.timer_lag.take())


TIMER_INTERVAL_S = 0.5  # the controller timer's (controlplane.runtime.controller.run_forever)


class SessionsKeptAlive:
    """Every broker heard every second (the session store, as web nodes record heartbeats),
    so that the running timer fences nobody."""

    def __init__(self, runtime: Any, brokers: int = BROKERS) -> None:
        import threading

        self.runtime = runtime
        self.brokers = brokers
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        from controlplane.runtime.lease import now_ms

        while not self._stop.wait(1.0):
            for broker_id in range(self.brokers):
                self.runtime.sessions.touch(broker_id, now_ms=now_ms(), metadata_offset=10**12)

    def stop(self) -> None:
        self._stop.set()


class CommitLine(logging.Handler):
    """The controller's own timings of a large commit, from its log line's arguments."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.timings: dict[str, Any] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if not str(record.msg).startswith("committed %d records") or not record.args:
            return
        records, _, handled, encoded, log, tables, statements, applied, _ = tuple(record.args)
        log_ms, tables_ms = float(str(log)), float(str(tables))
        self.timings.update(
            records=records,
            handle_ms=round(float(str(handled))),
            encode_ms=round(float(str(encoded))),
            # The log's transaction (then the brokers are woken) and the tables' after it.
            log_transaction_ms=round(log_ms),
            tables_transaction_ms=round(tables_ms),
            transaction_ms=round(log_ms) + round(tables_ms),  # the parts as shown, summed
            sql_statements=statements,
            image_apply_ms=round(float(str(applied))),
        )


def growth(figures: dict[str, Any], sizes: list[int]) -> dict[str, float]:
    if len(sizes) < 2:
        return {}
    small = figures[str(sizes[0])]["us_per_partition"]
    large = figures[str(sizes[-1])]["us_per_partition"]
    return {part: round(large[part] / max(small[part], 0.1), 2) for part in small}


def write_profile(profiler: cProfile.Profile, directory: Path, size: int) -> None:
    import pstats

    directory.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(str(directory / f"commit_{size}.prof"))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("tottime").print_stats(30)
    (directory / f"commit_{size}.txt").write_text(text.getvalue())


if __name__ == "__main__":
    main()
