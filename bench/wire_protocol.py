"""Benchmark: the Kafka protocol listener against the REST API, through a stock client, in one run.

The real stack: PostgreSQL, Redis, gunicorn (the control plane's worker), one `run_controller`
and one `serve_kafka` (PLAINTEXT and SASL_PLAINTEXT). Three brokers are registered and kept
alive; 1,000 topics of 10 partitions (RF 3) are created. Then, the two ways taking turns in
blocks (so whatever else runs on the machine hits both alike):

1. Metadata of every topic: kafka-python's `KafkaAdminClient.describe_topics()` (one Metadata
   request for all topics, decoded by kafka-python) against the REST equivalent, every page of
   `GET /api/v1/partitions?page_size=1000` (10 pages, decoded by httpx);
2. CreateTopics of one topic (1 partition, RF 3): `KafkaAdminClient.create_topics()` against
   `POST /api/v1/create-topics`;
3. ListPartitionReassignments naming `--moving` partitions, all moving (a topic of that many
   partitions on brokers 0 and 1, each moving its second replica to broker 2, which never
   catches up here): `KafkaAdminClient.list_partition_reassignments()` as a tool polls it, the
   tables standing still (the answer kept for their offset), against the same after a commit
   (an ACL created, untimed: the listing read and encoded again), and the REST equivalent.

p50 and p99 of each, and the ratio wire/REST (goal: <= 1, the wire no slower than REST).

    make bench-wire         # or: .venv/bin/python -m bench.wire_protocol [--help]
Writes bench/results/wire_protocol.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.replica_state import bearer_client, brokers_unfenced
from devtools.stack import BENCH_SETTINGS, PYTHON, Stack, free_port, running_stack, wait_for

RESULTS = Path(__file__).resolve().parent / "results"


def log(message: str) -> None:
    print(f"[bench-wire] {message}", file=sys.stderr, flush=True)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50_ms": round(percentile(samples, 50) * 1000, 2),
        "p99_ms": round(percentile(samples, 99) * 1000, 2),
        "mean_ms": round(statistics.fmean(samples) * 1000, 2),
    }


def start_listener(stack: Stack) -> int:
    port, sasl_port = free_port(), free_port()
    stack.spawn(
        "serve_kafka",
        [
            PYTHON,
            "manage.py",
            "serve_kafka",
            "--listener",
            f"PLAINTEXT://127.0.0.1:{port}",
            "--listener",
            f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        ],
    )

    def listening() -> bool:
        import socket

        try:
            socket.create_connection(("127.0.0.1", sasl_port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for(listening, 30, "serve_kafka to listen")
    return sasl_port


def create_topics(http: httpx.Client, count: int, partitions: int) -> None:
    batch = 100
    for start in range(0, count, batch):
        topics = [
            {"name": f"bench-{i:04d}", "num_partitions": partitions, "replication_factor": 3}
            for i in range(start, min(count, start + batch))
        ]
        answer = http.post("/api/v1/create-topics", json={"topics": topics}).json()
        failed = [t for t in answer["topics"] if t["error_code"] != 0]
        if failed:
            raise SystemExit(f"create-topics failed: {failed[:3]}")
        log(f"created {min(count, start + batch)}/{count} topics")


def rest_metadata(http: httpx.Client) -> int:
    """Every partition through the REST API's pages; returns how many it read."""
    read, page = 0, 1
    while True:
        body = http.get("/api/v1/partitions", params={"page_size": 1000, "page": page}).json()
        read += len(body["results"])
        if not body.get("next"):
            return read
        page += 1


def alternate(
    ways: dict[str, Callable[[int], Any]], rounds: int, block: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for round_index in range(rounds):
        for name, run in ways.items():
            for i in range(block):
                started = time.perf_counter()
                run(round_index * block + i)
                samples[name].append(time.perf_counter() - started)
        log(f"round {round_index + 1}/{rounds}")
    return samples


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    http_urls = stack.start_web(workers=args.workers, threads=args.threads)
    stack.start_controller("controller", 3000)
    stack.wait_active("controller")
    sasl_port = start_listener(stack)
    brokers = brokers_unfenced(stack, http_urls.internal, 3)
    http = bearer_client(http_urls.base, stack.tokens["admin"], timeout_s=60)
    try:
        create_topics(http, args.topics, args.partitions)
        admin = KafkaAdminClient(
            bootstrap_servers=f"127.0.0.1:{sasl_port}",
            client_id="bench-wire",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="admin",
            sasl_plain_password=stack.tokens["admin"],
            request_timeout_ms=60000,
        )
        expected = args.topics * args.partitions

        def wire_metadata(_: int) -> None:
            described = admin.describe_topics()
            found = sum(len(t["partitions"]) for t in described if t["name"].startswith("bench-"))
            assert found == expected, found

        def rest(_: int) -> None:
            found = rest_metadata(http)
            assert found >= expected, found

        log("Metadata: warming up")
        wire_metadata(0)
        rest(0)
        metadata = alternate({"wire": wire_metadata, "rest": rest}, args.rounds, args.block)

        def wire_create(i: int) -> None:
            admin.create_topics([NewTopic(f"wire-{i:05d}", num_partitions=1, replication_factor=3)])

        def rest_create(i: int) -> None:
            body = {
                "topics": [{"name": f"rest-{i:05d}", "num_partitions": 1, "replication_factor": 3}]
            }
            answer = http.post("/api/v1/create-topics", json=body).json()
            assert answer["topics"][0]["error_code"] == 0, answer

        creates = alternate(
            {"wire": wire_create, "rest": rest_create}, args.create_rounds, args.create_block
        )
        listings = list_reassignments(http, admin, args)
        admin.close()
    finally:
        brokers.stop()
        http.close()
    result: dict[str, Any] = {"topics": args.topics, "partitions_per_topic": args.partitions}
    for name, samples in (
        ("metadata", metadata),
        ("create_topics", creates),
        ("list_partition_reassignments", listings),
    ):
        wire, rest_samples = summary(samples["wire"]), summary(samples["rest"])
        result[name] = {
            "wire": wire,
            "rest": rest_samples,
            "p50_ratio_wire_over_rest": round(wire["p50_ms"] / rest_samples["p50_ms"], 3),
            "p99_ratio_wire_over_rest": round(wire["p99_ms"] / rest_samples["p99_ms"], 3),
            "goal_wire_no_slower": wire["p50_ms"] <= rest_samples["p50_ms"],
        }
        if "wire_after_commit" in samples:
            result[name]["wire_after_commit"] = summary(samples["wire_after_commit"])
    result["list_partition_reassignments"]["moving"] = args.moving
    return result


def list_reassignments(
    http: httpx.Client, admin: Any, args: argparse.Namespace
) -> dict[str, list[float]]:
    moving = args.moving
    assignments = [{"partition_index": i, "broker_ids": [0, 1]} for i in range(moving)]
    topic = {"name": "moving", "num_partitions": -1, "replication_factor": -1}
    answer = http.post(
        "/api/v1/create-topics", json={"topics": [{**topic, "assignments": assignments}]}
    ).json()
    assert answer["topics"][0]["error_code"] == 0, answer
    moves = [{"partition_index": i, "replicas": [0, 2]} for i in range(moving)]
    body = {"topics": [{"name": "moving", "partitions": moves}]}
    answer = http.post("/api/v1/alter-partition-reassignments", json=body).json()
    assert {p["error_code"] for t in answer["responses"] for p in t["partitions"]} == {0}, answer
    asked = {"moving": list(range(moving))}
    log(f"ListPartitionReassignments: {moving} moving partitions")

    def wire(_: int) -> None:
        assert len(admin.list_partition_reassignments(asked)) == moving

    def wire_after_commit(i: int) -> None:
        commit(http, i)
        started = time.perf_counter()
        wire(i)
        # timed from the commit's answer: `alternate`'s own samples of this way, which include
        # the commit, are replaced by these below
        after_commit.append(time.perf_counter() - started)

    def rest(_: int) -> None:
        body = {"topics": [{"name": "moving", "partition_indexes": asked["moving"]}]}
        listed = http.post("/api/v1/list-partition-reassignments", json=body).json()
        assert len(listed["topics"][0]["partitions"]) == moving, listed

    after_commit: list[float] = []
    wire(0)
    rest(0)
    samples = alternate(
        {"wire": wire, "wire_after_commit": wire_after_commit, "rest": rest},
        args.rounds,
        args.block,
    )
    samples["wire_after_commit"] = after_commit
    return samples


def commit(http: httpx.Client, i: int) -> None:
    """One small commit: an ACL of its own (the tables' offset moves)."""
    acl = {
        "resource_type": "TOPIC",
        "resource_name": f"moving-{i}",
        "pattern_type": "LITERAL",
        "principal": "User:bench",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    answer = http.post("/api/v1/create-acls", json={"creations": [acl]}).json()
    assert answer["results"][0]["error_code"] == 0, answer


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.wire_protocol",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument(
        "--moving", type=int, default=3000, help="ListPartitionReassignments: moving partitions"
    )
    parser.add_argument("--rounds", type=int, default=5, help="Metadata: alternating rounds")
    parser.add_argument("--block", type=int, default=10, help="Metadata: requests per round")
    parser.add_argument("--create-rounds", type=int, default=5)
    parser.add_argument("--create-block", type=int, default=20)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-wire-") as logs,
        running_stack(Path(logs), settings=BENCH_SETTINGS) as stack,
    ):
        result = measure(stack, args)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "wire_protocol.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
