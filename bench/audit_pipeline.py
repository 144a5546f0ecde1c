"""Benchmark: the audit pipeline on Spark.

1. Data made through the controller's commit path, in a PostgreSQL database of its own: topics
   of `--partitions-per-topic` partitions (one TopicRecord and one PartitionRecord per
   partition) until the log holds about `--records` records, then `--audit-events` admin writes
   (IncrementalAlterConfigs, a quarter of them forwarded in an Envelope), each an event of the
   controller with its audit envelope, in batches of 500 as the controller's group commit takes
   them: every write's record and audit row in one commit.
2. The export: a cold run of everything (rows/s over both datasets, goal >= 50,000), then an
   incremental run after more writes.
3. The reports: each report's time against a plain Spark scan of the dataset(s) it reads (every
   column, to Spark's `noop` sink) in the same run and session (goal: within 3x).

    make bench-audit   # or: python -m bench.audit_pipeline --records 1000000 --audit-events 200000
Writes bench/results/audit_pipeline.json and prints it. Needs PostgreSQL (CP_TEST_POSTGRES_URL).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controlplane.runtime.conversation import ControllerEvent

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 500  # events per controller batch (the controller's MAX_BATCH_EVENTS)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def configure_django(database_url: str) -> None:
    """This process as the embedded controller on the benchmark's database."""
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CP_REDIS_URL"):
        os.environ.pop(name, None)
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    os.environ["CP_LOG_LEVEL"] = "WARNING"
    os.environ["CP_AUDIT_EXPORT_INTERVAL_SECONDS"] = "0"
    import django

    django.setup()


class Cluster:
    """Events for the in-process controller, as the web nodes would send them."""

    def __init__(self) -> None:
        from controlplane.runtime.controller import get_runtime
        from controlplane.runtime.lease import cluster_get_or_create

        self.runtime = get_runtime()
        self.cluster_id = cluster_get_or_create().cluster_id
        self.writes = 0

    def handle(self, events: list[ControllerEvent]) -> list[dict[str, Any]]:
        answers = self.runtime.handle_batch(events)
        if any(answer.not_controller for answer in answers):
            # No timer renews this process's lease while it exports: take it again (the same
            # request ids, so nothing applies twice).
            answers = self.runtime.handle_batch(events)
        failed = [a.response for a in answers if a.response.get("error_code") not in (0, None)]
        if failed:
            raise SystemExit(f"the controller refused a benchmark event: {failed[0]}")
        return [answer.response for answer in answers]

    def brokers(self, count: int) -> None:
        from controlplane.runtime.conversation import ControllerEvent, RequestContext
        from controlplane.runtime.lease import now_ms

        broker = RequestContext(principal="User:broker")
        for broker_id in range(count):
            registration = {
                "broker_id": broker_id,
                "cluster_id": self.cluster_id,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [],
                "rack": f"rack-{broker_id % 3}",
                "pod": "canary-broker" if broker_id == count - 1 else "broker",
                "log_dirs": [str(uuid.uuid4())],
            }
            [answer] = self.handle([ControllerEvent("BrokerRegistration", registration, broker)])
            epoch = answer["broker_epoch"]
            self.runtime.sessions.touch(broker_id, now_ms=now_ms(), metadata_offset=epoch)
            heartbeat = {
                "broker_id": broker_id,
                "broker_epoch": epoch,
                "current_metadata_offset": epoch,
            }
            self.handle([ControllerEvent("BrokerHeartbeat", heartbeat, broker)])

    def event(self, rpc: str, payload: dict[str, Any], **forwarding: Any) -> ControllerEvent:
        """An audited admin write (its audit row in the commit), maybe forwarded by a broker."""
        from controlplane.runtime.conversation import (
            AuditEnvelope,
            ControllerEvent,
            Forwarding,
            RequestContext,
        )
        from controlplane.runtime.lease import now_ms

        self.writes += 1
        context = RequestContext(
            principal="User:admin",
            client_id="bench",
            client_host="127.0.0.1",
            request_id=f"bench-{uuid.uuid4().hex}",
        )
        forwarded = Forwarding(**forwarding) if forwarding else None
        return ControllerEvent(rpc, payload, context, audit=AuditEnvelope(rpc, now_ms(), forwarded))

    def topic(self, name: str, partitions: int) -> None:
        from controlplane.rpc import REGISTRY

        body = REGISTRY["CreateTopics"].validated(
            {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 3}]}
        )
        self.handle([self.event("CreateTopics", body)])

    def config_writes(self, count: int, topics: list[str]) -> Iterator[int]:
        from controlplane.rpc import REGISTRY

        spec = REGISTRY["IncrementalAlterConfigs"]
        done = 0
        while done < count:
            events = []
            for n in range(done, min(count, done + BATCH)):
                body = spec.validated(
                    {
                        "resources": [
                            {
                                "resource_type": "TOPIC",
                                "resource_name": topics[n % len(topics)],
                                "configs": [
                                    {
                                        "name": "retention.ms",
                                        "config_operation": "SET",
                                        "value": str(3_600_000 + n),
                                    }
                                ],
                            }
                        ]
                    }
                )
                payload = {"resources": body["resources"], "validate_only": False}
                forwarding = (
                    {"principal": "User:broker", "host": "10.0.0.2", "broker_id": n % 5}
                    if n % 4 == 0
                    else {}
                )
                events.append(self.event("IncrementalAlterConfigs", payload, **forwarding))
            self.handle(events)
            done += len(events)
            yield done


def make_data(args: argparse.Namespace) -> dict[str, Any]:
    from audit.models import AuditEvent
    from controlplane.models import MetadataRecord

    cluster = Cluster()
    cluster.brokers(6)
    started = time.monotonic()
    per_topic = args.partitions_per_topic + 1
    topics = []
    target = max(0, args.records - args.audit_events)
    while MetadataRecord.objects.count() + per_topic <= target + per_topic // 2:
        name = f"bench-{len(topics):04d}"
        cluster.topic(name, args.partitions_per_topic)
        topics.append(name)
        if len(topics) % 10 == 0:
            log(f"  {len(topics)} topics, {MetadataRecord.objects.count():,} records")
    if not topics:
        topics.append("bench-0000")
        cluster.topic(topics[0], 1)
    for done in cluster.config_writes(args.audit_events, topics):
        if done % 20_000 == 0 or done == args.audit_events:
            log(f"  {done:,}/{args.audit_events:,} admin writes")
    return {
        "seconds": round(time.monotonic() - started, 1),
        "topics": len(topics),
        "metadata_records": MetadataRecord.objects.count(),
        "audit_events": AuditEvent.objects.count(),
        "admin_writes": cluster.writes,
    }


def export(path: Path) -> dict[str, Any]:
    from audit.export import audit_export_run
    from audit.progress import describe

    last = [0.0]

    def progress(p: Any) -> None:
        if time.monotonic() - last[0] > 2 or p.phase != "exporting":
            last[0] = time.monotonic()
            log("  " + describe(p))

    result = audit_export_run(target=str(path), on_progress=progress)
    return {
        "commit": result.commit,
        "rows": result.rows,
        "total_rows": result.total_rows,
        "files": result.files,
        "seconds": round(result.seconds, 2),
        "rows_per_second": round(result.rows_per_second),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--audit-events", type=int, default=200_000)
    parser.add_argument("--partitions-per-topic", type=int, default=10_000)
    parser.add_argument("--incremental-writes", type=int, default=10_000)
    parser.add_argument("--skip-reports", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from devtools.stack import running_stack

    with (
        tempfile.TemporaryDirectory(prefix="bench-audit-") as scratch,
        running_stack(Path(scratch) / "logs") as stack,
    ):
        configure_django(stack.env["DATABASE_URL"])
        log(f"making {args.records:,} records and {args.audit_events:,} audit events...")
        data = make_data(args)
        log(f"  made in {data['seconds']} s: {data}")
        path = Path(scratch) / "export"
        log("exporting everything (cold)...")
        cold = export(path)
        log(f"  {cold}")
        cluster = Cluster()
        for _ in cluster.config_writes(args.incremental_writes, ["bench-0000"]):
            pass
        log("exporting what is new (incremental)...")
        incremental = export(path)
        log(f"  {incremental}")
        reports: dict[str, Any] = {}
        if not args.skip_reports:
            from bench.audit_reports import time_reports

            reports = time_reports(path, log)
    result = {
        "benchmark": "audit_pipeline",
        "data": data,
        "export_cold": cold,
        "export_incremental": incremental,
        "goal_export_rows_per_second": 50_000,
        "export_goal_met": cold["rows_per_second"] >= 50_000,
        "reports": reports,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "audit_pipeline.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
