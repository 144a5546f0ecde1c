"""Benchmark: the controller's memory for an image of N partitions (1,000,000 partitions fit
in well under 1 GiB for the whole controller process).

Each size is built in a fresh child process, the way a controller builds it: 100 brokers
registered, then topics of `--topic-partitions` partitions (RF 3, Kafka's rack-unaware
placement) replayed through `MetadataDelta` one commit of 10,000 partitions at a time, each
delta applied to the image, then the health index built over it (`image.derived`, as the first
commit does). Two sources of records:

- `created`: the records as CreateTopics makes them (one topic id string per topic);
- `decoded`: every record through JSON first, as a standby replays the log (each record its
  own strings and tuples);
- `tables` (opt-in, needs PostgreSQL): the same partitions written to the state tables of a
  fresh database (SQL `generate_series`), then `load_image`, as a controller taking over cold.

Per size and source: the process's RSS before and after (VmRSS, and its peak VmHWM), bytes per
partition of RSS growth, and a breakdown of the image's own bytes by part (every object reached
from that part and not from an earlier one, counted once).

    python -m bench.image_memory                          # 100,000 and 1,000,000
    python -m bench.image_memory --sizes 300000 --sources decoded
    python -m bench.image_memory --sizes 1000000 --sources tables

Writes bench/results/image_memory.json and prints it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import types
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
BROKERS = 100
REPLICATION_FACTOR = 3
PARTITIONS_PER_COMMIT = 10_000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--sources", nargs="+", default=["created", "decoded"])
    parser.add_argument("--topic-partitions", type=int, default=100)
    parser.add_argument(
        "--no-django",
        action="store_true",
        help="the controller core alone (default: Django set up first, as run_controller is)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.sources[0], args)))
        return
    runs = []
    for size in args.sizes:
        for source in args.sources:
            log(f"{size} partitions from {source} records ...")
            command = [
                sys.executable,
                "-m",
                "bench.image_memory",
                "--child",
                str(size),
                "--sources",
                source,
                "--topic-partitions",
                str(args.topic_partitions),
            ]
            if args.no_django:
                command.append("--no-django")
            if source == "tables":
                runs.append(measure_load(command, size, args.topic_partitions))
            else:
                done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
                runs.append(json.loads(done.stdout))
            log(f"  {runs[-1]}")
    result = {
        "setup": {
            "brokers": BROKERS,
            "replication_factor": REPLICATION_FACTOR,
            "topic_partitions": args.topic_partitions,
            "partitions_per_commit": PARTITIONS_PER_COMMIT,
            "django": not args.no_django,
            "goal": "1,000,000 partitions under 1 GiB of process RSS",
        },
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "image_memory.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def measure(size: int, source: str, args: argparse.Namespace) -> dict[str, Any]:
    static_configs: dict[str, str] = {}
    if not args.no_django or source == "tables":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
        import django

        django.setup()
        from django.conf import settings

        import controlplane.runtime.controller  # noqa: F401  (what run_controller imports)

        static_configs = dict(settings.CP_STATIC_BROKER_CONFIGS)
    from controlplane.controller.health import INDEX_NAME, HealthIndex
    from controlplane.controller.image import MetadataImage

    gc.collect()
    baseline = _status_kib("VmRSS")
    started = time.perf_counter()
    if source == "tables":
        from controlplane.runtime.projections import load_image

        image = load_image("bench", 0)
    else:
        image = MetadataImage(cluster_id="bench")
        build(image, size, source, args.topic_partitions)
    built_s = time.perf_counter() - started
    image.derived[INDEX_NAME] = HealthIndex.build(image, static_configs)
    gc.collect()
    rss = _status_kib("VmRSS")
    peak = _status_kib("VmHWM")
    assert len(image.partitions) == size
    return {
        "partitions": size,
        "source": source,
        "build_s": round(built_s, 1),
        "rss_baseline_mib": round(baseline / 1024, 1),
        "rss_mib": round(rss / 1024, 1),
        "rss_peak_mib": round(peak / 1024, 1),
        "rss_bytes_per_partition": round((rss - baseline) * 1024 / size),
        "image_bytes_per_partition": {
            part: round(nbytes / size) for part, nbytes in breakdown(image).items()
        },
    }


def build(image: Any, size: int, source: str, topic_partitions: int) -> None:
    """Replay brokers and topics into `image`, one delta per commit's worth of partitions."""
    from controlplane.controller.image import MetadataDelta
    from controlplane.controller.records import (
        PartitionRecord,
        RegisterBrokerRecord,
        TopicRecord,
        record_from_data,
    )

    def replay(delta: MetadataDelta, record: Any) -> None:
        if source == "decoded":
            data = json.loads(json.dumps(record.to_data()))
            record = record_from_data(record.TYPE, data)
        delta.replay(record)

    delta = MetadataDelta(image)
    for broker_id in range(BROKERS):
        replay(
            delta,
            RegisterBrokerRecord(
                broker_id=broker_id,
                incarnation_id=str(uuid.UUID(int=broker_id)),
                broker_epoch=broker_id + 1,
                listeners=(),
                rack=None,
                pod=f"broker-{broker_id}",
                log_dirs=("/var/lib/kafka",),
                fenced=False,
            ),
        )
    image.apply(delta)
    delta = MetadataDelta(image)
    in_delta = 0
    for topic in range(-(-size // topic_partitions)):
        topic_id = str(uuid.UUID(int=topic + 1))
        replay(delta, TopicRecord(name=f"topic-{topic:06d}", topic_id=topic_id))
        for index in range(min(topic_partitions, size - topic * topic_partitions)):
            replicas = placement(topic, index)
            replay(
                delta,
                PartitionRecord(
                    partition_id=index,
                    topic_id=topic_id,
                    replicas=replicas,
                    isr=tuple(replicas),  # as CreateTopics: its own tuple
                    leader=replicas[0],
                ),
            )
            in_delta += 1
            if in_delta == PARTITIONS_PER_COMMIT:
                image.apply(delta)
                delta = MetadataDelta(image)
                in_delta = 0
    image.apply(delta)


def measure_load(command: list[str], size: int, topic_partitions: int) -> dict[str, Any]:
    """The child's figures for `load_image` from a fresh database holding the partitions."""
    from devtools.stack import _admin_connection, database_url

    database = f"cp_bench_image_{uuid.uuid4().hex[:8]}"
    with _admin_connection() as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    try:
        env = {**os.environ, "DATABASE_URL": database_url(database)}
        for name in ("CP_REDIS_URL", "CELERY_BROKER_URL"):
            env.pop(name, None)
        manage = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
        subprocess.run(manage, check=True, env=env, capture_output=True, cwd=ROOT)
        import psycopg

        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
            populate(conn, size, topic_partitions)
        done = subprocess.run(
            command, check=True, capture_output=True, text=True, env=env, cwd=ROOT
        )
        measured: dict[str, Any] = json.loads(done.stdout)
        return measured
    finally:
        with _admin_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def populate(conn: Any, size: int, topic_partitions: int) -> None:
    """The topics and partitions of `build` (same ids, same placement) as table rows."""
    topics = -(-size // topic_partitions)
    topic_id = "'00000000-0000-0000-0000-' || lpad(to_hex(t + 1), 12, '0')"
    conn.execute(
        f"INSERT INTO cp_topic (topic_id, name, partition_count) SELECT {topic_id}, "
        "'topic-' || lpad(t::text, 6, '0'), least(%(tp)s, %(size)s - t * %(tp)s) "
        "FROM generate_series(0, %(topics)s - 1) t",
        {"tp": topic_partitions, "size": size, "topics": topics},
    )
    b = BROKERS
    follower = f"(f + 1 + (s + {{j}}) %% {b - 1}) %% {b}"
    others = [follower.format(j=j) for j in range(REPLICATION_FACTOR - 1)]
    replicas = f"jsonb_build_array(f, {', '.join(others)})"
    replica_ids = "',' || f || ',' || " + " || ',' || ".join(others) + " || ','"
    conn.execute(
        "INSERT INTO cp_partition (topic_id, partition_index, leader, leader_epoch, "
        "partition_epoch, replicas, isr, offline_replicas, replica_ids, offline_ids, "
        "replica_count, offline_replica_count, is_canary, canary_isolated, isr_count, "
        f"preferred_leader) SELECT {topic_id}, i, f, 0, 0, {replicas}, {replicas}, '[]', "
        f"{replica_ids}, ',', {REPLICATION_FACTOR}, 0, false, false, {REPLICATION_FACTOR}, f "
        "FROM ("
        f"  SELECT t, i, (t + i) %% {b} AS f, (t + i / {b}) %% {b - 1} AS s"
        "  FROM generate_series(0, %(topics)s - 1) t, generate_series(0, %(tp)s - 1) i"
        "  WHERE t * %(tp)s + i < %(size)s"
        ") placed",
        {"tp": topic_partitions, "size": size, "topics": topics},
    )


def placement(topic: int, index: int) -> tuple[int, ...]:
    """Kafka's rack-unaware assignment: the first replica round robin from a start that
    differs by topic, the others shifted by an amount that grows every BROKERS partitions."""
    first = (topic + index) % BROKERS
    shift = (topic + index // BROKERS) % (BROKERS - 1)
    followers = (
        (first + 1 + (shift + j) % (BROKERS - 1)) % BROKERS for j in range(REPLICATION_FACTOR - 1)
    )
    return (first, *followers)


def breakdown(image: Any) -> dict[str, int]:
    """Bytes reached from each part of the topics image, then from the derived indexes; an
    object reached from an earlier part is counted there only."""
    topics_image = image.topics_image
    parts: dict[str, Any] = {}
    for cls in type(topics_image).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if not name.startswith("__") and hasattr(topics_image, name):
                parts[name] = getattr(topics_image, name)
    parts["derived"] = image.derived
    seen: set[int] = set()
    sizes = {name: _deep_size(root, seen) for name, root in parts.items()}
    sizes["total"] = sum(sizes.values())
    return sizes


_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _deep_size(root: Any, seen: set[int]) -> int:
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _OPAQUE):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


if __name__ == "__main__":
    main()
