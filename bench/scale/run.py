"""One size in one shape on a fresh stack: every phase in order, and the run's figures."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bench.replica_state import log
from bench.scale.bootstrap import bootstrap
from bench.scale.cluster import (
    ControllerSupervisor,
    brokers_heartbeating,
    clients,
    create_topics,
    database_bytes,
    memory,
    standby_caught_up,
    start_controllers,
)
from bench.scale.common import (
    GOALS,
    LEASE_MS,
    MAX_BODY_BYTES,
    Layout,
    goal,
)
from bench.scale.failover import kill_in_flight
from bench.scale.probes import probes
from bench.scale.shutdown import controlled_shutdown, start_followers
from bench.verify import verify_stack
from devtools.stack import BENCH_SETTINGS, WORKER_CLASS, Stack, running_stack, server_description

SETTINGS = {
    **BENCH_SETTINGS,
    "CP_LOG_LEVEL": "INFO",
    "CP_MAX_BODY_BYTES": str(MAX_BODY_BYTES),
    "CP_CONTROLLER_LEASE_MS": str(LEASE_MS),
}


def memory_goals(figures: dict[str, Any], when: str) -> dict[str, Any]:
    return {
        f"{role}_controller_rss_{when}": goal(
            figures.get(role, {}).get("VmRSS"), GOALS["controller_rss_bytes"]
        )
        for role in ("active", "standby")
        if role in figures
    }


def measure(
    stack: Stack, supervisor: ControllerSupervisor, layout: Layout, args: argparse.Namespace
) -> dict[str, Any]:
    stack.start_worker()  # background work: the metadata snapshots are its tasks
    http = stack.start_web(workers=args.workers, threads=args.threads)
    heartbeats = brokers_heartbeating(stack, http, args.brokers)
    admin, broker_http = clients(http, stack)
    result: dict[str, Any] = {"partitions": layout.partitions, "per_topic": layout.per_topic}
    goals: dict[str, Any] = {}
    log(f"[{layout.name}] {args.brokers} brokers unfenced; creating {len(layout.topics())} topics")
    created = create_topics(admin, layout, args.brokers)
    result["create"] = created["figures"]
    log(f"  created in {created['figures']['total_s']} s")
    result["standby_caught_up"] = standby_caught_up(stack, timeout_s=120)
    result["memory"] = {"after_create": memory(stack)}
    result["database_bytes"] = {"after_create": database_bytes(stack)}
    goals |= memory_goals(result["memory"]["after_create"], "after_create")
    if "probes" in args.phases:
        log(f"[{layout.name}] the API's lists, the UI's pages and /metrics")
        views = probes(stack, admin, http, layout)
        goals |= views.pop("goals")
        result["views"] = views
    if "shutdown" in args.phases:
        log(f"[{layout.name}] controlled shutdown; {args.brokers} followers")
        fleet = start_followers(
            stack, base=http.internal, brokers=args.brokers, processes=args.processes
        )
        try:
            shutdown = controlled_shutdown(
                stack,
                broker_http,
                fleet,
                heartbeats,
                layout=layout,
                topic_ids=created["topic_ids"],
                brokers=args.brokers,
                timeout_s=args.timeout,
            )
        finally:
            result["follower_request_failures"] = fleet.stop()
        goals |= {f"controlled_shutdown_{k}": v for k, v in shutdown.pop("goals").items()}
        result["controlled_shutdown"] = shutdown
    if "bootstrap" in args.phases:
        log(f"[{layout.name}] a fresh broker bootstraps")
        booted = bootstrap(
            stack, admin, broker_http, public=http.base, base=http.internal, timeout_s=args.timeout
        )
        goals |= {f"bootstrap_{k}": v for k, v in booted.pop("goals").items()}
        result["bootstrap"] = booted
    if "failover" in args.phases:
        log(f"[{layout.name}] kill -9 of the active controller mid-change")
        per_partition = result["create"]["total_s"] / layout.partitions
        failover = kill_in_flight(
            stack,
            admin,
            supervisor,
            layout=layout,
            seconds_per_partition=per_partition,
            kill_at=args.kill_at,
            timeout_s=args.timeout,
        )
        goals |= {f"failover_{k}": v for k, v in failover.pop("goals").items()}
        result["failover"] = failover
    supervisor.stop()
    result["controller_exits"] = supervisor.exits
    result["memory"]["at_end"] = memory(stack)
    goals |= memory_goals(result["memory"]["at_end"], "at_end")
    heartbeats.stop()
    result["brokers_fenced"] = int(stack.sql("SELECT count(*) FROM cp_broker WHERE fenced")[0][0])
    result["heartbeat_rounds_failed"] = heartbeats.failed_rounds
    log(f"[{layout.name}] verify_metadata")
    result["verify_metadata"] = verify_stack(stack)
    goals["verify_metadata_clean"] = {"met": result["verify_metadata"]["clean"]}
    result["database_bytes"]["at_end"] = database_bytes(stack)
    result["goals"] = goals
    return result


def run_one(layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    """`layout` on a fresh database and Redis prefix; the stack's logs are kept under
    `args.logs` when given."""
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(args.logs) / layout.name if args.logs else Path(tmp) / "logs"
        with running_stack(logs, settings=SETTINGS) as stack:
            supervisor = start_controllers(stack)
            try:
                return measure(stack, supervisor, layout, args)
            finally:
                supervisor.stop()  # before the stack stops its processes: none started again


def setup(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "brokers": args.brokers,
        "replication_factor": 3,
        "controllers": "an active and a standby run_controller (hot standby)",
        "celery_worker": "one, default queue (metadata snapshots)",
        "lease_ms": LEASE_MS,
        "web": server_description(WORKER_CLASS, args.workers, args.threads),
        "followers": f"{args.brokers} (one a broker) in {args.processes} processes, "
        "MessagePack + zstd long polls",
        "database": "PostgreSQL",
        "creation": "one CreateTopics a topic, explicit assignments (the shut-down broker "
        "leads 2 %)",
        "kill_at": args.kill_at,
        "phases": sorted(args.phases),
    }
