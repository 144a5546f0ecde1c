"""Benchmark: what fencing one broker costs the health index at 100,000 and 1,000,000 partitions.

A fenced broker's replicas are offline replicas (as Kafka's MetadataResponse counts them), so a
commit that fences or unfences a broker counts again every partition with a replica on it (RF 3
over 100 brokers: 3 % of the cluster), beside the partitions it changed.
In one process, no Django: the image built as bench.image_memory builds it (100 brokers, topics
of 10,000 partitions), the index built once, then one delta fencing broker 0 and one unfencing
it, each `HealthIndex.changes` timed (best of 5). Two deltas each: the fence record alone
(the bare recount), and the fence with what the controller writes with it, broker 0 out of
every ISR and its leaderships moved (one PartitionChangeRecord per partition holding it: those
partitions are counted again in any case, so this is the real commit's difference).

    python -m bench.health_fence [--sizes 100000 1000000]

Writes bench/results/health_fence.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench.image_memory import build

RESULTS = Path(__file__).resolve().parent / "results"


def measure(size: int) -> dict[str, Any]:
    from controlplane.controller.health import HealthIndex
    from controlplane.controller.image import MetadataDelta, MetadataImage
    from controlplane.controller.records import (
        NO_LEADER_CHANGE,
        BrokerRegistrationChangeRecord,
        PartitionChangeRecord,
    )

    image = MetadataImage(cluster_id="bench")
    build(image, size, "created", 10_000)
    index = HealthIndex.build(image, {})
    held = sorted(image.replica_index.get(0, ()))
    moves = []
    reader = MetadataDelta(image)
    for topic_id, index_ in held:
        p = reader.partition((topic_id, index_))
        assert p is not None
        isr = tuple(r for r in p.isr if r != 0)
        leader = isr[0] if p.leader == 0 else NO_LEADER_CHANGE
        moves.append(
            PartitionChangeRecord(partition_id=index_, topic_id=topic_id, isr=isr, leader=leader)
        )
    timings: dict[str, float] = {}
    for name, with_moves in (("fence_record_alone", False), ("fence_commit", True)):
        best = float("inf")
        for _ in range(5):
            delta = MetadataDelta(image)
            delta.replay(BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=1, fenced=1))
            for move in moves if with_moves else ():
                delta.replay(move)
            started = time.perf_counter()
            index.changes(delta)
            best = min(best, time.perf_counter() - started)
        timings[f"{name}_ms"] = round(best * 1000, 2)
    return {"partitions": size, "partitions_on_the_broker": len(held), **timings}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.health_fence", description=__doc__)
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 1_000_000])
    args = parser.parse_args()
    result = {"sizes": [measure(size) for size in args.sizes]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "health_fence.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
