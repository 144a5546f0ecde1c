"""The result's summaries: where a write's time goes, and what was measured on what."""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from bench.admin_forwarding.common import (
    ADMIN_CLIENT_ID,
    CLIENT_HOST,
    DIRECT_PATH,
    ENVELOPE_PATH,
    FORWARDING_BROKER,
    RECYCLE_AFTER,
    TOPIC,
    percentile,
)
from devtools.stack import ROOT, postgres_admin_url, redis_url, server_description


def where_time_goes(
    *,
    all_ways: Any,
    call: Any,
    ceiling: Any,
    celery: Any,
    commit_floor: Any,
    controller_seq: Any,
    direct: Any,
    durations: Any,
    envelope: Any,
    in_process: Any,
    redis: Any,
    seq: Any,
    web: Any,
) -> dict[str, Any]:
    """Where a write's time goes: the floors, the probes and the in-process costs."""
    return {
        "sequential_p50_ms": {
            "direct_http": round(percentile(direct.latencies_ms, 50), 3),
            "envelope_http": round(percentile(envelope.latencies_ms, 50), 3),
            "server_view_direct (audit duration_ms)": durations["direct"].get("p50_ms"),
            "server_view_envelope (audit duration_ms)": durations["envelope"].get("p50_ms"),
            "web_view_in_process_direct (no HTTP)": web.get("direct", {})
            .get("wall_ms", {})
            .get("p50_ms"),
            "web_view_in_process_envelope (no HTTP)": web.get("envelope", {})
            .get("wall_ms", {})
            .get("p50_ms"),
            "controller_call_round_trip_write_event": call["write"]["round_trip"]["p50_ms"],
            "controller_call_round_trip_noop_event": call["noop"]["round_trip"]["p50_ms"],
            "celery_round_trip_write_event": celery["write"]["round_trip"]["p50_ms"],
            "celery_round_trip_noop_event": celery["noop"]["round_trip"]["p50_ms"],
            "controller_event_time (worker log)": controller_seq.get("p50_ms"),
            "controller_handle_one_event_in_process (no Celery)": in_process.get(
                "handle_one_event_ms", {}
            ).get("p50_ms"),
            "postgresql_insert_and_commit": commit_floor["insert_and_commit"]["p50_ms"],
            "redis_ping": redis["ping"]["p50_ms"],
        },
        "cpu_ms_per_write_sequential": {
            name: {
                k: round(v / max(1, seq[name].acknowledged), 3) for k, v in seq[name].cpu_ms.items()
            }
            for name in all_ways
        },
        "cpu_ceiling_at_best_throughput": ceiling,
        "controller_event_time_sequential": controller_seq,
        "web_in_process": web,
        "controller_in_process": in_process,
        "controller_call_probe": call,
        "celery_probe": celery,
        "postgresql_commit_floor": commit_floor,
        "redis_floor": redis,
        "server_view_duration_ms_sequential (audit trail duration_ms)": durations,
        "notes": [
            f"The web side reaches the controller through {call['transport']} "
            "(controlplane.runtime.executor decides); the controller hands waiting "
            "events to one thread that handles and commits them together (group commit). "
            "group_commit in each throughput phase counts the commits its writes took.",
            "controller_call_round_trip_* go from the benchmark process through "
            "controller_call (the views' own path, no HTTP, no view); celery_round_trip_* "
            "straight onto the Celery queue 'controller', which run_controller still consumes.",
            "controller_event_time is Celery's measure of each event in the controller's "
            "worker (waiting for its batch, the batch's handling and commit), from its log "
            "(--loglevel INFO): only events that travel over Celery are there (none of the web "
            "traffic when the request channel carries it); events overlap, so these do not add "
            "up to the wall time.",
            "cpu_ms_per_write: CPU milliseconds per acknowledged write by process group, from "
            "/proc; postgresql counts every backend on the machine, other_processes is "
            "whatever else ran meanwhile (other people's tests share this machine).",
            "cpu_ceiling: the writes/s the server's processes could sustain with both cores "
            "to themselves at the CPU each write cost them.",
        ],
    }


def run_setup(*, args: Any, call: Any, controller: Any, load_before: Any) -> dict[str, Any]:
    """What was measured, and on what."""
    return {
        "server": server_description(args.worker_class, args.workers, args.threads),
        "controller": f"1 x manage.py run_controller (--loglevel {args.controller_loglevel})",
        "controller_transport": call["transport"],
        "code": code_version(),
        "database": f"PostgreSQL {server(postgres_admin_url())} (a fresh database)",
        "redis": f"{server(redis_url())}, "
        "under a key prefix of the run's own "
        "(Celery broker, result backend, sessions, request channel)",
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "brokers_registered": args.brokers,
        "write": f"IncrementalAlterConfigs SET retention.ms on topic {TOPIC} "
        "(1 partition), a new value every request: one ConfigRecord each",
        "direct": f"POST {DIRECT_PATH}, the super user's token (User:admin)",
        "envelope": f"POST {ENVELOPE_PATH}, the broker's token, request_principal "
        f"User:admin, client {ADMIN_CLIENT_ID} at {CLIENT_HOST}, forwarding_broker_id "
        f"{FORWARDING_BROKER} (body: simulator.envelope_request)",
        "sequential_requests_per_way": args.sequential,
        "sequential_block": args.block,
        "throughput_concurrency": args.concurrency,
        "throughput_rounds_per_level": args.rounds,
        "throughput_seconds_per_round_and_way": args.seconds,
        "probes": args.probes,
        "simulator_requests": args.simulator_requests,
        "client": "asyncio raw sockets, HTTP/1.1 keep-alive (new connection every "
        f"{RECYCLE_AFTER} requests), in the benchmark process on the same machine; "
        "latency = acknowledged requests only",
        "acknowledged": "HTTP 200 and every resource error_code 0 (envelope: envelope "
        "error_code 0, response_status 200, every inner resource 0)",
    }


def code_version() -> dict[str, Any]:
    """The commit measured, and the files changed in the working tree (other people's work in
    progress is measured too)."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout

    # Porcelain lines are "XY path": the status takes the first three characters.
    changed = [line[3:] for line in git("status", "--porcelain").splitlines() if line[3:]]
    return {"commit": git("rev-parse", "--short", "HEAD").strip(), "changed_files": changed}


def server(url: str) -> str:
    """host:port of a service URL (with a Redis URL's database), without user or password."""
    parts = urllib.parse.urlsplit(url)
    database = f" db {parts.path[1:] or 0}" if parts.scheme.startswith("redis") else ""
    return f"{parts.hostname}:{parts.port}{database}"
