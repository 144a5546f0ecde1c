"""The side-by-side run's phases that Kafka's own Java AdminClient drives (bench/java, run from
source with the pinned jars): a reassignment of every partition of a topic, and a bulk creation.
Each answers the program's figures with where the machine's CPU went meanwhile."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.broker_logs import LeadershipLog
from bench.cpu import CpuWindow
from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker

JAVA = Path(__file__).resolve().parent / "java"
CREATE_TOPICS_SOURCE = JAVA / "CreateTopics.java"
REASSIGN_SOURCE = JAVA / "ReassignPartitions.java"


def require_a_jdk() -> None:
    """Java runs a program from its source only with a JDK's compiler (a JRE's `java` cannot)."""
    java = Path(kafka.java_executable()).resolve()
    if not java.with_name("javac").exists():
        raise SystemExit(
            f"{java} is a JRE: the reassignment and creation phases run Kafka's AdminClient from "
            "its source and need a JDK (Debian: openjdk-17-jdk-headless), or --create-topics 0 "
            "--no-reassign"
        )


def java_figures(source: Path, args: Sequence[str], heap: str) -> dict[str, Any]:
    """Run one of bench/java's AdminClient programs; its one line of figures ("Name {json}"),
    among whatever the client's logging printed."""
    command = kafka.java_command(str(source), args, heap=heap)
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{source.stem} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    prefix = f"{source.stem} "
    (line,) = (x for x in done.stdout.splitlines() if x.startswith(prefix + "{"))
    figures: dict[str, Any] = json.loads(line.removeprefix(prefix))
    return figures


def reassign_every_partition(
    brokers: Sequence[KafkaBroker], topic: str, heap: str
) -> dict[str, Any]:
    """The AdminClient reassigns every partition of `topic` through the first broker (each keeps
    its leader, its follower moves to the broker holding none of it): the time until the
    controller lists no reassignment, and until that broker describes every partition on its
    new replicas, all in sync."""
    cpu = CpuWindow(brokers)
    result = java_figures(REASSIGN_SOURCE, [brokers[0].bootstrap, topic], heap)
    result.update(cpu.figures())
    return result


def create_topics(
    brokers: Sequence[KafkaBroker],
    prefix: str,
    topics: int,
    partitions: int,
    per_call: int,
    heap: str,
) -> dict[str, Any]:
    """The AdminClient creates `topics` topics of `partitions` (RF 2) through the first broker,
    `per_call` topics a call, all the calls at once: the time until its answer, until that
    broker describes a leader for every partition, and until the brokers logged their last new
    leaderships (from the AdminClient's first call, as its own figures are)."""
    cpu = CpuWindow(brokers)
    taken = LeadershipLog(brokers)
    arguments = [brokers[0].bootstrap, prefix, str(topics), str(partitions), "2", str(per_call)]
    result = java_figures(CREATE_TOPICS_SOURCE, arguments, heap)
    result.update(cpu.figures())
    logged = taken.last_taken_at(until=time.time())
    began = result.pop("began_epoch_ms") / 1000
    result["leaderships_logged_ms"] = None if logged is None else round((logged - began) * 1000)
    return result
