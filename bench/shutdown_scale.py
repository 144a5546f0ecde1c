"""Benchmark: a controlled shutdown of a broker leading 2 % of the partitions, at 100,000 and
1,000,000 partitions, in one process (no HTTP), so that what grows with the whole cluster shows.

Per size a fresh PostgreSQL database and the real controller (`ControllerRuntime`) with its real
commit path: 100 brokers registered and unfenced, topics of 10,000 partitions (RF 3) where broker
0 leads every 50th partition and is a follower of as many, the others led round-robin. Then broker
0's heartbeat with want_shut_down (it moves to CONTROLLED_SHUTDOWN: every leadership moves away
and it leaves every ISR, up to CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT partitions in its own commit,
the rest in the fencing rounds' bounded commits), then the heartbeats of the others at the new
offset and broker 0's second heartbeat (answered should_shut_down). Per size: the first
heartbeat's handle, encode, transaction and image application in ms, the second heartbeat's
time, and the growth per changed partition from the smallest size to the largest (goal: about 1).

    python -m bench.shutdown_scale                          # 100,000 and 1,000,000
    python -m bench.shutdown_scale --sizes 100000 --profile /tmp/prof   # cProfile per size

Writes bench/results/shutdown_scale.json and prints it.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.commit_scale import (
    CommitLine,
    SessionsKeptAlive,
    handle,
    log,
    timer_worst_lag,
    write_profile,
)
from bench.verify import fail_unless_clean, verify_in_process

RESULTS = Path(__file__).resolve().parent / "results"
BROKERS = 100
TOPIC_PARTITIONS = 10_000
SHUTTING = 0  # the broker that shuts down
SHARE = 50  # it leads every SHARE-th partition: 2 %


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--profile", help="write a cProfile (.prof and top-40 .txt) per size here")
    parser.add_argument("--one", action="store_true", help="(internal) one size, JSON on stdout")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(in_fresh_database(args.sizes[0], args.profile)))
        return
    figures: dict[str, Any] = {}
    for size in args.sizes:  # each in its own process: a fresh runtime, image and database
        command = [sys.executable, "-m", "bench.shutdown_scale", "--one", "--sizes", str(size)]
        if args.profile:
            command += ["--profile", args.profile]
        output = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
        figures[str(size)] = json.loads(output.strip().splitlines()[-1])
        log(f"{size}: {figures[str(size)]}")
    result = {
        "setup": {
            "brokers": BROKERS,
            "sizes": args.sizes,
            "replication_factor": 3,
            "shutting_broker_leads": f"1/{SHARE}",
            "process": "one",
        },
        "shutdowns": figures,
        "growth_per_changed_partition": growth(figures, args.sizes),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "shutdown_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    for size, figures in result["shutdowns"].items():
        fail_unless_clean(figures["verify_metadata"], f"shutdown_scale {size}")


def in_fresh_database(size: int, profile_dir: str | None) -> dict[str, Any]:
    from devtools.stack import _admin_connection, database_url

    database = f"cp_bench_shutdown_{uuid.uuid4().hex[:8]}"
    with _admin_connection() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    try:
        os.environ["DATABASE_URL"] = database_url(database)
        for name in ("CP_REDIS_URL", "CELERY_BROKER_URL"):
            os.environ.pop(name, None)  # the embedded runtime: nothing else takes part
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
        return run(size, profile_dir)
    finally:
        from django.db import connections

        connections.close_all()
        with _admin_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


class Notices:
    """When each commit notice went out (`notifier.publish`, as the commit's transaction
    commits), while installed."""

    def __init__(self) -> None:
        from controlplane.runtime.notifier import notifier

        self.times: list[float] = []
        self._notifier = notifier
        self._publish = notifier.publish
        notifier.publish = self._record  # type: ignore[method-assign]

    def _record(self, last_offset: int) -> None:
        self.times.append(time.perf_counter())
        self._publish(last_offset)

    def stop(self) -> None:
        self._notifier.publish = self._publish  # type: ignore[method-assign]

    def after_ms(self, started: float, which: int) -> int | None:
        after = [t for t in self.times if t >= started]
        return round((after[which] - started) * 1000) if after else None


def run(size: int, profile_dir: str | None) -> dict[str, Any]:
    import django

    django.setup()
    from django.core.management import call_command

    from controlplane.runtime.controller import tune_controller_process

    tune_controller_process()  # as run_controller does

    call_command("migrate", "--noinput", verbosity=0)
    from controlplane.runtime import controller as controller_module
    from controlplane.runtime.timer import start_timer_thread

    runtime = controller_module.get_runtime()
    epochs = register_brokers(runtime)
    sessions = SessionsKeptAlive(runtime, BROKERS)  # heartbeats, as web nodes record them
    timer = start_timer_thread(runtime)  # goes on with what is left to move
    started = time.perf_counter()
    create_topics(runtime, size)
    log(f"{size} partitions created in {time.perf_counter() - started:.1f} s")
    image = runtime.image
    leads = sum(1 for _ in leaderships(image, SHUTTING))
    commit_line = CommitLine()
    controller_module.logger.addHandler(commit_line)
    notices = Notices()
    profiler = cProfile.Profile() if profile_dir else None
    try:
        started = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        first = heartbeat(runtime, SHUTTING, epochs[SHUTTING], want_shut_down=True)
        if profiler is not None:
            profiler.disable()
        first_s = time.perf_counter() - started
        left_after_first = len(leaderships_now(runtime, SHUTTING))
        # What the heartbeat's commit did not move (CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT), the
        # controller's fencing rounds move next (bounded commits of
        # CP_MAX_PARTITION_CHANGES_PER_COMMIT, the controller free in between).
        deadline = time.monotonic() + 300
        while still_leads(runtime, SHUTTING) and time.monotonic() < deadline:
            time.sleep(0.01)
        all_moved_s = time.perf_counter() - started
        notice_ms = (notices.after_ms(started, 0), notices.after_ms(started, -1))
        lag_ms = timer_worst_lag(runtime)
    finally:
        controller_module.logger.removeHandler(commit_line)
        notices.stop()
        timer.set()
        sessions.stop()
    if profiler is not None and profile_dir:
        write_profile(profiler, Path(profile_dir), size)
    left = len(leaderships_now(runtime, SHUTTING))
    # Every broker has seen the commit (the web node records the offsets heartbeats report).
    now_ms = int(time.time() * 1000)
    for broker_id, epoch in epochs.items():
        runtime.sessions.touch(broker_id, now_ms=now_ms, metadata_offset=10**12)
        if broker_id != SHUTTING:
            heartbeat(runtime, broker_id, epoch)
    started = time.perf_counter()
    second = heartbeat(runtime, SHUTTING, epochs[SHUTTING], want_shut_down=True)
    second_s = time.perf_counter() - started
    timings = dict(commit_line.timings)
    timings.update(
        partitions=size,
        leaderships_moved=leads,
        leaderships_left=left,
        first_heartbeat_ms=round(first_s * 1000),
        # When the commit notices went out (what the brokers' long-polls wake on): the first is
        # the heartbeat's own commit's, before its answer.
        first_notice_ms=notice_ms[0],
        last_notice_ms=notice_ms[1],
        leaderships_left_after_its_commit=left_after_first,
        all_leaderships_moved_ms=round(all_moved_s * 1000),
        timer_worst_lag_ms=lag_ms,
        first_answer=first,
        second_heartbeat_ms=round(second_s * 1000),
        should_shut_down=second.get("should_shut_down"),
        us_per_changed_partition=round(first_s * 1e6 / max(timings.get("records", 1), 1), 1),
        verify_metadata=verify_in_process(),
    )
    return timings


def leaderships(image: Any, broker_id: int) -> Any:
    return image.topics_image.partitions_led_by(broker_id)


# While the timer moves what is left, the controller applies commits to its image: the bench
# reads it between two of them (holding the controller's lock, as an event would), never while
# one is applied (a read then could meet a partition half moved between the indexes).
def leaderships_now(runtime: Any, broker_id: int) -> Any:
    with runtime._lock:
        return leaderships(runtime.image, broker_id)


def still_leads(runtime: Any, broker_id: int) -> bool:
    with runtime._lock:
        return bool(runtime.image.topics_image.broker_has_leaderships(broker_id))


def heartbeat(runtime: Any, broker_id: int, epoch: int, *, want_shut_down: bool = False) -> Any:
    return handle(
        runtime,
        "BrokerHeartbeat",
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "current_metadata_offset": 10**12,
            "want_shut_down": want_shut_down,
        },
    )


def register_brokers(runtime: Any) -> dict[int, int]:
    from bench.replica_state import registration_body
    from controlplane.runtime.lease import cluster_get_or_create

    cluster_id = cluster_get_or_create().cluster_id
    epochs = {}
    for broker_id in range(BROKERS):
        answer = handle(runtime, "BrokerRegistration", registration_body(broker_id, cluster_id))
        epochs[broker_id] = answer["broker_epoch"]
    for broker_id, epoch in epochs.items():
        heartbeat(runtime, broker_id, epoch)
    return epochs


def replicas_of(index: int) -> list[int]:
    """Broker 0 leads every SHARE-th partition and follows as many; the rest round-robin."""
    leader = SHUTTING if index % SHARE == 0 else 1 + index % (BROKERS - 1)
    first = 1 + (leader + index // BROKERS) % (BROKERS - 1)
    if first == leader:
        first = 1 + first % (BROKERS - 1)
    second = SHUTTING if index % SHARE == 1 else 1 + (first + 1) % (BROKERS - 1)
    if second in (leader, first):
        second = 1 + (second + 1) % (BROKERS - 1)
        if second in (leader, first):
            second = 1 + (second + 1) % (BROKERS - 1)
    return [leader, first, second]


def create_topics(runtime: Any, size: int) -> None:
    for start in range(0, size, TOPIC_PARTITIONS):
        count = min(TOPIC_PARTITIONS, size - start)
        assignments = [
            {"partition_index": i, "broker_ids": replicas_of(start + i)} for i in range(count)
        ]
        name = f"t-{start // TOPIC_PARTITIONS}"
        answer = handle(
            runtime, "CreateTopics", {"topics": [{"name": name, "assignments": assignments}]}
        )
        topic = answer["topics"][0]
        if topic["error_code"] != 0:
            raise SystemExit(f"create-topics failed: {topic}")


def growth(figures: dict[str, Any], sizes: list[int]) -> dict[str, float]:
    if len(sizes) < 2:
        return {}
    small, large = figures[str(sizes[0])], figures[str(sizes[-1])]
    return {
        "first_heartbeat_per_changed_partition": round(
            large["us_per_changed_partition"] / max(small["us_per_changed_partition"], 0.1), 2
        ),
        "second_heartbeat": round(
            large["second_heartbeat_ms"] / max(small["second_heartbeat_ms"], 1), 2
        ),
    }


if __name__ == "__main__":
    main()
