"""One image: what the controller says of every broker and partition against what each live
stock broker says, from two sources of the broker's own:

- its Metadata answer of every topic (the brokers it lists live; each partition's leader,
  leader epoch, replicas and ISR), compared with `metadata_facts` of the controller's view;
- `kafka-dump-log --cluster-metadata-decoder` (Kafka's DumpLogSegments, from the pinned jars)
  of its own replica of `__cluster_metadata` (its latest snapshot, if its log starts after 0,
  then its segments), replayed by Kafka's rules (devtools.kafka_view) and compared whole:
  brokers (epoch, fencing, controlled shutdown), topics and partitions (epochs included).

The controller's view is its tables (`view_of_tables`: what the REST API and the console show)
or its image (`view_of_image`). A broker lags the controller by a fetch at most, so
`agreement` asks again until every broker agrees or its time is up, and reports either way;
given the controller's log end, it counts only an attempt over which the log stood still (the
brokers are read seconds after the controller: a change committed in between is no difference).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from devtools.kafka_clients import cluster_metadata
from devtools.kafka_view import (
    KafkaView,
    facts_differences,
    facts_of_metadata,
    metadata_facts,
    view_of_dump_log,
)
from stock_kafka import jars
from stock_kafka.broker import KafkaBroker

METADATA_LOG = "__cluster_metadata-0"
DUMP_HEAP = "128m"
SHOWN = 10  # differences shown per broker and source
MOVING_LOG_GRACE = 3  # how many times its timeout an agreement waits for a log that stands still


def metadata_log_dir(broker: KafkaBroker) -> Path:
    """The broker's replica of the metadata log (in the first of its log dirs, as
    `metadata.log.dir` unset has it; any that holds one)."""
    for data_dir in broker.data_dirs:
        if (data_dir / METADATA_LOG).is_dir():
            return data_dir / METADATA_LOG
    raise FileNotFoundError(f"broker {broker.node_id} has no {METADATA_LOG} in {broker.data_dirs}")


def _base_offset(path: Path) -> int:
    return int(path.name.split(".")[0].split("-")[0])


def replica_files(broker: KafkaBroker) -> tuple[Path | None, list[Path]]:
    """The snapshot to load first (the latest, when the log starts after offset 0) and the
    log segments, in offset order."""
    directory = metadata_log_dir(broker)
    segments = sorted(directory.glob("*.log"), key=_base_offset)
    start = _base_offset(segments[0]) if segments else 0
    snapshots = sorted(directory.glob("*.checkpoint"), key=_base_offset)
    usable = [s for s in snapshots if _base_offset(s) >= start]
    return (usable[-1] if start > 0 and usable else None), segments


def dump_log(files: Sequence[Path], *, timeout_s: float = 120) -> dict[Path, str]:
    """kafka-dump-log --cluster-metadata-decoder of `files` (one JVM for them all): each
    file's printed lines."""
    if not files:
        return {}
    command = jars.java_command(
        jars.tool_class("DumpLogSegments"),
        ["--cluster-metadata-decoder", "--files", ",".join(str(f) for f in files)],
        heap=DUMP_HEAP,
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"DumpLogSegments failed: {done.stderr[-2000:]}")
    printed: dict[Path, list[str]] = {}
    current: list[str] | None = None
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = printed.setdefault(Path(line.removeprefix("Dumping ").strip()), [])
        elif current is not None:
            current.append(line)
    return {path: "\n".join(lines) for path, lines in printed.items()}


def replica_views(brokers: Sequence[KafkaBroker]) -> dict[int, KafkaView]:
    """Each broker's view from kafka-dump-log of its own replica, one JVM for them all."""
    chosen = {b.node_id: replica_files(b) for b in brokers}
    files = [f for snapshot, segments in chosen.values() for f in (snapshot, *segments) if f]
    printed = dump_log(files)
    views = {}
    for node_id, (snapshot, segments) in chosen.items():
        view = KafkaView()
        start = 0
        if snapshot is not None:
            view_of_dump_log(printed.get(snapshot, ""), view=view)
            start = _base_offset(snapshot)
        for segment in segments:
            view_of_dump_log(printed.get(segment, ""), from_offset=start, view=view)
        views[node_id] = view
    return views


def differences(controller: KafkaView, brokers: Sequence[KafkaBroker]) -> dict[int, dict[str, Any]]:
    """Per live broker: what its Metadata and its replica's dump say unlike the controller."""
    facts = metadata_facts(controller)
    found: dict[int, dict[str, Any]] = {}
    replicas = replica_views(brokers)
    for broker in brokers:
        found[broker.node_id] = {
            "metadata": facts_differences(facts, facts_of_metadata(cluster_metadata(broker))),
            "dump_log": controller.differences(replicas[broker.node_id]),
        }
    return found


def agreement(
    controller_view: Callable[[], KafkaView],
    brokers: Sequence[KafkaBroker],
    *,
    timeout_s: float = 30,
    log_end: Callable[[], int] | None = None,
) -> dict[str, Any]:
    """Ask until every live broker's Metadata and replica agree with the controller's view (read
    afresh each time), or `timeout_s` passed: `agree`, the attempts, the seconds, and the last
    differences (a few per broker and source) when they never agreed.

    An attempt reads the controller's view, then the brokers' (seconds later: a JVM dumps the
    replicas). With `log_end` (the controller's committed log end), an attempt during which the
    log moved compared the brokers with a view older than theirs: its differences are no
    verdict. Past `timeout_s` such an attempt is followed by another, up to `MOVING_LOG_GRACE`
    times `timeout_s`, so that a disagreement reported is one over a log that stood still
    (`log_moved_in_the_last_attempt` says when even that bound passed first)."""
    live = [b for b in brokers if b.running]
    began = time.monotonic()
    attempts = still = 0
    last: dict[int, dict[str, Any]] = {}
    while True:
        attempts += 1
        before = None if log_end is None else log_end()
        try:
            last = differences(controller_view(), live)
        except (OSError, RuntimeError) as error:  # a broker between answers: ask again
            last = {-1: {"metadata": [repr(error)], "dump_log": []}}
        moved = log_end is not None and log_end() != before
        still += not moved
        differ = any(d["metadata"] or d["dump_log"] for d in last.values())
        if not differ:
            break
        elapsed = time.monotonic() - began
        if elapsed > timeout_s and (not moved or elapsed > MOVING_LOG_GRACE * timeout_s):
            break
        time.sleep(0.5)
    agree = not differ
    return {
        "agree": agree,
        "brokers": sorted(b.node_id for b in live),
        "attempts": attempts,
        "still_attempts": still if log_end is not None else None,
        "log_moved_in_the_last_attempt": moved,
        "seconds": round(time.monotonic() - began, 2),
        "differences": {
            node: {source: lines[:SHOWN] for source, lines in found.items() if lines}
            for node, found in last.items()
            if found["metadata"] or found["dump_log"]
        },
    }
