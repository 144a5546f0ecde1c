"""Benchmark: a broker catching up on the metadata log through the Raft Fetch of the controller
listener (Kafka's record batches) against the REST metadata fetch of the same records.

The real stack: PostgreSQL, Redis, gunicorn, one `run_controller`, one `serve_kafka` with a
CONTROLLER listener (SASL_PLAINTEXT). Three brokers are registered and kept alive, then topics
are created until the log holds about `--records` records. For each size (10,000 and 100,000
records by default) a follower reads the log from offset 0 up to that size, as a broker that
catches up does (Fetch: 8 MiB a request; REST: `max_records` pages, JSON):

- `first_ms`: the first catch-up after the log grew (the listener takes the new batches in then:
  those the controller stored with its commits, or the rows of a range without them, encoded);
- `warm`: p50/p99 of later catch-ups (the same bytes, taken in once);
- `concurrent_followers`: N followers catching up at once, each one's time (taken in once,
  served to N brokers).

    make bench-raft-fetch      # or: .venv/bin/python -m bench.raft_fetch [--help]
Writes bench/results/raft_fetch.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.replica_state import bearer_client, brokers_unfenced
from bench.verify import fail_unless_clean, verify_stack
from bench.wire_protocol import summary
from devtools.real_brokers import start_controller_listener
from devtools.stack import BENCH_SETTINGS, Stack, running_stack

RESULTS = Path(__file__).resolve().parent / "results"
METADATA_TOPIC_ID = uuid.UUID(int=1)
FETCH_MAX_BYTES = 8 << 20  # what a broker asks for (KafkaRaftClient's fetch max bytes)


def log(message: str) -> None:
    print(f"[bench-raft-fetch] {message}", file=sys.stderr, flush=True)


class Follower:
    """A bare Raft follower: SASL/PLAIN as the broker principal, then Fetch v17."""

    def __init__(self, port: int, token: str, cluster_id: str, replica_id: int = 1) -> None:
        from tests.wire.rawclient import RawClient

        self.client = RawClient("127.0.0.1", port, timeout_s=120)
        self.cluster_id = cluster_id
        self.replica_id = replica_id
        self._authenticate(token)

    def _authenticate(self, token: str) -> None:
        from kio.schema.sasl_authenticate.v2 import request as authenticate_v2
        from kio.schema.sasl_handshake.v1 import request as handshake_v1

        self.client.request(handshake_v1.SaslHandshakeRequest(mechanism="PLAIN"))
        answer = self.client.request(
            authenticate_v2.SaslAuthenticateRequest(auth_bytes=b"\0broker\0" + token.encode())
        )
        assert int(answer.error_code) == 0, answer

    def fetch(self, offset: int, last_epoch: int, epoch: int) -> Any:
        from kio.schema.fetch.v17 import request as fetch_v17

        partition = fetch_v17.FetchPartition(
            partition=0,
            current_leader_epoch=epoch,
            fetch_offset=offset,
            last_fetched_epoch=last_epoch,
            log_start_offset=-1,
            partition_max_bytes=FETCH_MAX_BYTES,
            replica_directory_id=uuid.uuid4(),
        )
        request = fetch_v17.FetchRequest(
            cluster_id=self.cluster_id,
            replica_state=fetch_v17.ReplicaState(replica_id=self.replica_id, replica_epoch=-1),
            max_wait=datetime.timedelta(0),
            min_bytes=0,
            max_bytes=FETCH_MAX_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=(fetch_v17.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
            forgotten_topics_data=(),
            rack_id="",
        )
        return self.client.request(request)

    def catch_up(self, records: int, epoch: int) -> int:
        """Fetch from 0 until `records` records are read, as a broker appends them."""
        from controlplane.controller.kraft.batches import decode_batches

        offset, last_epoch = 0, 0
        while offset < records:
            (partition,) = self.fetch(offset, last_epoch, epoch).responses[0].partitions
            data = bytes(partition.records)
            if not data:
                break
            for batch in decode_batches(data):
                offset, last_epoch = batch.last_offset + 1, batch.partition_leader_epoch
        return offset


def rest_catch_up(http: httpx.Client, records: int) -> int:
    after, read = -1, 0
    while read < records:
        page = http.get(
            "/internal/v1/metadata", params={"after_offset": after, "max_records": 10_000}
        ).json()
        if not page["records"]:
            break
        read += len(page["records"])
        after = page["records"][-1]["offset"]
    return read


def timed(run: Any, *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = run(*args)
    return time.perf_counter() - started, value


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    urls = stack.start_web(workers=args.workers, threads=args.threads)
    stack.start_controller("controller", 3000)
    stack.wait_active("controller")
    port = start_controller_listener(stack)
    brokers = brokers_unfenced(stack, urls.internal, 3)
    http = bearer_client(urls.base, stack.tokens["admin"], timeout_s=120)
    broker_http = bearer_client(urls.internal, stack.tokens["broker"], timeout_s=120)
    result: dict[str, Any] = {"sizes": {}}
    try:
        cluster_id, epoch = stack.sql("SELECT cluster_id, controller_epoch FROM cp_cluster")[0]
        created = 0
        for size in args.sizes:
            topics = max(0, (size - created * args.partitions) // args.partitions + 1)
            create_topics_from(http, created, topics, args.partitions)
            created += topics
            last = stack.sql("SELECT last_offset FROM cp_cluster")[0][0]
            log(f"log at {last + 1} records; reading {size}")
            follower = Follower(port, stack.tokens["broker"], cluster_id)
            first, read = timed(follower.catch_up, size, epoch)
            assert read >= size, (read, size)
            warm = [timed(follower.catch_up, size, epoch)[0] for _ in range(args.repeat)]
            rest = [timed(rest_catch_up, broker_http, size)[0] for _ in range(args.repeat)]
            with concurrent.futures.ThreadPoolExecutor(args.followers) as pool:
                followers = [
                    Follower(port, stack.tokens["broker"], cluster_id)
                    for _ in range(args.followers)
                ]
                futures = [pool.submit(timed, f.catch_up, size, epoch) for f in followers]
                concurrent_times = [f.result()[0] for f in futures]
            result["sizes"][str(size)] = {
                "raft_fetch_first_ms": round(first * 1000, 1),
                "raft_fetch_warm": summary(warm),
                "rest_fetch": summary(rest),
                "warm_ratio_raft_over_rest": round(
                    summary(warm)["p50_ms"] / summary(rest)["p50_ms"], 3
                ),
                "concurrent_followers": args.followers,
                "concurrent_each": summary(concurrent_times),
            }
        result["verify_metadata"] = verify_stack(stack)
    finally:
        brokers.stop()
        http.close()
        broker_http.close()
    return result


def create_topics_from(http: httpx.Client, start: int, count: int, partitions: int) -> None:
    """`count` more topics after the `start` already made (bench-NNNN names go on)."""
    if count <= 0:
        return
    batch = 100
    for first in range(start, start + count, batch):
        topics = [
            {"name": f"fetch-{i:06d}", "num_partitions": partitions, "replication_factor": 3}
            for i in range(first, min(start + count, first + batch))
        ]
        answer = http.post("/api/v1/create-topics", json={"topics": topics}).json()
        failed = [t for t in answer["topics"] if t["error_code"] != 0]
        if failed:
            raise SystemExit(f"create-topics failed: {failed[:3]}")
    log(f"created {start + count} topics")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.raft_fetch",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--partitions", type=int, default=100, help="per topic")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--followers", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-raft-fetch-") as logs,
        running_stack(Path(logs), settings=BENCH_SETTINGS) as stack,
    ):
        result = measure(stack, args)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "raft_fetch.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(result["verify_metadata"], "raft_fetch")


if __name__ == "__main__":
    main()
