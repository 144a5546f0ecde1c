"""Benchmark: the pure Python a commit of 10,000 partitions costs the controller, no database.

Four commits on an image of 60 registered, unfenced brokers, through the controller's own
handlers: a topic's creation (CreateTopics of 10,000 partitions, RF 3, led by broker 1), a bulk
creation as Kafka's AdminClient sends one (CreateTopics of 1,000 topics of 10 partitions, RF 3,
placed by the controller), the
start of a move of every partition's last replica to another broker (AlterPartitionReassignments
naming all 10,000, on the created topic), and broker 1's log dir failure (AlterReplicaState
naming all 10,000, on the created topic: each partition elects another leader and marks the
replica offline). Per commit, the best of `--repeat` runs of each step the
commit takes on the controller's thread, in ms and µs per partition:

- `handle`: the handler building the records from the request and the image;
- `replay`: the records replayed into the metadata delta;
- `timeline`: the timeline's description of the commit (its events and partition moves);
- `health`: what the commit does to the health index (topics' and brokers' figures);
- `rows`: the partitions projection's rows;
- `json`: the log's JSON of each record;
- `kafka`: the records as Kafka record batches.

`bench.commit_scale` times these together with the database's; apart, and as the best of several
runs, they are steady enough to compare two versions of the code on a busy machine.

    python -m bench.commit_core [--partitions 10000] [--repeat 15]

Writes bench/results/commit_core.json and prints it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
BROKERS = 60
LEADER = 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    result = measure(args.partitions, args.repeat)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "commit_core.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def measure(partitions: int, repeat: int) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    import django

    django.setup()
    from controlplane.controller.image import MetadataDelta

    image, epochs, env = _brokers_image()
    creation = _creation_request(partitions)
    created = _steps(image, "CreateTopics", creation, env, repeat)
    many = _steps(image, "CreateTopics", _many_topics_request(partitions // 10), env, repeat)
    delta = MetadataDelta(image)
    _run(delta, "CreateTopics", creation, env)
    image.apply(delta)
    failure = {
        "broker_id": LEADER,
        "broker_epoch": epochs[LEADER],
        "new_state": 1,
        "reason": "log dir failure (benchmark)",
        "topics": [{"name": "bench", "partitions": list(range(partitions))}],
    }
    return {
        "setup": {"partitions": partitions, "brokers": BROKERS, "repeat": repeat},
        "creation": created,
        "creation_of_many_topics": many,
        "reassignment": _steps(
            image, "AlterPartitionReassignments", _reassignment(partitions), env, repeat
        ),
        "log_dir_failure": _steps(image, "AlterReplicaState", failure, env, repeat),
    }


def _reassignment(partitions: int) -> dict[str, Any]:
    """Every partition's last replica moved to another broker (its leader and the second
    replica stay), in one AlterPartitionReassignments, as Kafka's tool sends it."""
    others = [b for b in range(BROKERS) if b != LEADER]
    replicas = []
    for index in range(partitions):
        kept = [LEADER, others[index % len(others)]]
        moved = others[(index + 7) % len(others)]
        target = next(b for b in others[index % len(others) :] + others if b not in (*kept, moved))
        replicas.append({"partition_index": index, "replicas": [*kept, target]})
    return {"topics": [{"name": "bench", "partitions": replicas}]}


def _brokers_image() -> tuple[Any, dict[int, int], Any]:
    """An image of `BROKERS` registered brokers, unfenced; their epochs; an env keeping their
    sessions."""
    from bench.replica_state import registration_body
    from controlplane.controller.env import BrokerSession, ControllerEnv
    from controlplane.controller.image import MetadataDelta, MetadataImage

    now = int(time.time() * 1000)
    sessions = {b: BrokerSession(now, -1) for b in range(BROKERS)}
    env = ControllerEnv(now_ms=now, activated_ms=now - 60_000, sessions=sessions)
    image = MetadataImage(cluster_id="bench")
    delta = MetadataDelta(image)
    epochs = {}
    for broker_id in range(BROKERS):
        answer = _run(delta, "BrokerRegistration", registration_body(broker_id, "bench"), env)
        epochs[broker_id] = answer["broker_epoch"]
    for broker_id, epoch in epochs.items():
        beat = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**12}
        _run(delta, "BrokerHeartbeat", beat, env)
    image.apply(delta)
    return image, epochs, env


def _run(delta: Any, api: str, payload: dict[str, Any], env: Any) -> dict[str, Any]:
    from controlplane.controller.dispatch import run_event

    answer = run_event(delta, api, payload, env)
    if answer.get("error_code"):
        raise SystemExit(f"{api} failed: {answer}")
    return answer


def _creation_request(partitions: int) -> dict[str, Any]:
    others = [b for b in range(BROKERS) if b != LEADER]
    assignments = [
        {
            "partition_index": index,
            "broker_ids": [LEADER, others[index % len(others)], others[(index + 7) % len(others)]],
        }
        for index in range(partitions)
    ]
    return {"topics": [{"name": "bench", "assignments": assignments}]}


def _many_topics_request(topics: int) -> dict[str, Any]:
    """Topics of 10 partitions, RF 3, each placed by the controller."""
    return {
        "topics": [
            {"name": f"bulk-{i:05d}", "num_partitions": 10, "replication_factor": 3}
            for i in range(topics)
        ]
    }


def _steps(base: Any, api: str, payload: dict[str, Any], env: Any, repeat: int) -> dict[str, Any]:
    from controlplane.controller.dispatch import dispatch
    from controlplane.controller.health import INDEX_NAME, HealthIndex
    from controlplane.controller.image import MetadataDelta
    from controlplane.controller.kraft.log import KafkaLogEncoder
    from controlplane.controller.timeline import WriteSummary, describe_commit
    from replicas.projection import partition_row

    first = base.last_offset + 1
    state: dict[str, Any] = {}
    index = HealthIndex.build(base, {})

    def handle() -> None:
        state["records"] = dispatch(api, MetadataDelta(base), payload, env).records

    def replay() -> None:
        delta = MetadataDelta(base)
        for record in state["records"]:
            delta.replay(record)
        state["delta"] = delta

    def timeline() -> None:
        delta = state["delta"]
        writes = [WriteSummary(api, first, first + len(delta.replayed) - 1)]
        describe_commit(base, delta.replayed, writes, delta.topics_delta.transitions)

    def health() -> None:
        delta = state["delta"]
        delta.derived.pop(INDEX_NAME, None)  # computed once per delta otherwise
        index.changes(delta)

    def rows() -> None:
        for tp, partition in state["delta"].changed_partitions.items():
            partition_row(tp[0], tp[1], partition)

    def to_json() -> None:
        for record in state["records"]:
            record.to_json()

    def kafka() -> None:
        for _ in KafkaLogEncoder().commit_batches(state["delta"].replayed, 1, 0):
            pass

    steps: dict[str, Callable[[], None]] = {
        "handle": handle,
        "replay": replay,
        "timeline": timeline,
        "health": health,
        "rows": rows,
        "json": to_json,
        "kafka": kafka,
    }
    best = {name: min(_timed(step) for _ in range(repeat)) for name, step in steps.items()}
    total = sum(best.values())
    count = len(state["delta"].changed_partitions)
    return {
        "records": len(state["records"]),
        "ms": {name: round(seconds * 1000, 1) for name, seconds in best.items()},
        "total_ms": round(total * 1000, 1),
        "us_per_partition": round(total * 1e6 / count, 2),
    }


def _timed(step: Callable[[], None]) -> float:
    """The CPU time the step took on this thread (what other processes and threads take of the
    machine meanwhile is not counted), the cyclic garbage collector paused as the controller
    pauses it while it commits (`controlplane.runtime.collector`)."""
    gc.collect()
    gc.disable()
    try:
        started = time.thread_time()
        step()
        return time.thread_time() - started
    finally:
        gc.enable()


if __name__ == "__main__":
    main()
