"""One run: the stack set up, every phase in turn, the checks, and the result."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
import time
from typing import Any

from bench.admin_forwarding.checks import audit_check, audit_durations, commits_of, log_check
from bench.admin_forwarding.common import (
    FORWARDING_BROKER,
    SIMULATOR_BROKER,
    TOPIC,
    latency_summary,
    log,
    percentile,
)
from bench.admin_forwarding.in_process import controller_in_process, web_in_process
from bench.admin_forwarding.load_client import LoadClient, Phase
from bench.admin_forwarding.load_phases import Load, load_phases
from bench.admin_forwarding.machine import ControllerLog
from bench.admin_forwarding.probes import (
    celery_probe,
    controller_call_probe,
    postgres_commit_floor,
    redis_floor,
)
from bench.admin_forwarding.report import run_setup, where_time_goes
from bench.admin_forwarding.simulator import SimulatorThread
from bench.admin_forwarding.ways import ways
from bench.replica_state import bearer_client, brokers_unfenced
from bench.verify import verify_stack
from devtools.stack import Http, Stack


def django_in_this_process(stack: Stack) -> None:
    """Django set up here with the stack's settings: the Celery probe sends to the stack's
    controller queue."""
    for key, value in stack.env.items():
        if key.startswith(("CP_", "DATABASE_", "CELERY_")):
            os.environ[key] = value
    os.environ["DJANGO_SETTINGS_MODULE"] = "controlplane.settings"
    import django

    django.setup()


def measure(stack: Stack, args: argparse.Namespace, controller: str) -> dict[str, Any]:
    run_id = f"{int(time.time()) % 100000}"
    load_before = os.getloadavg()
    http: Http = stack.start_web(
        workers=args.workers, threads=args.threads, worker_class=args.worker_class
    )
    host, port = http.base.removeprefix("http://").split(":")
    internal_port = http.internal.rsplit(":", 1)[1]
    django_in_this_process(stack)
    brokers = brokers_unfenced(stack, http.internal, args.brokers)
    with bearer_client(http.base, stack.tokens["admin"], timeout_s=60) as admin:
        created = admin.post(
            "/api/v1/create-topics",
            json={"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1}]},
        ).json()
    if created["topics"][0]["error_code"] != 0:
        raise SystemExit(f"create-topics failed: {created}")
    start_offset = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])
    audit_start = int(stack.sql("SELECT coalesce(max(id), 0) FROM cp_audit_event")[0][0])
    log(f"{args.brokers} brokers unfenced, topic {TOPIC} created; metadata offset {start_offset}")

    controller_log = ControllerLog(stack.logs / f"{controller}.log")
    all_ways = ways(stack.tokens)
    client = LoadClient(host, int(port), int(internal_port), run_id)
    acknowledged: list[str] = []

    log("floors: PostgreSQL commit, Redis ping, Celery round trips to the controller")
    commit_floor = postgres_commit_floor(stack, args.probes)
    redis = redis_floor(stack, args.probes)
    call = controller_call_probe(args.probes, run_id)
    acknowledged += call.pop("acknowledged_ids")
    celery = celery_probe(args.probes, run_id)
    acknowledged += celery.pop("acknowledged_ids")

    load = Load(stack, args, controller, controller_log, client, all_ways, audit_start, run_id)
    measured_runs = asyncio.run(load_phases(load))
    acknowledged += load.acknowledged
    seq: dict[str, Phase] = measured_runs["sequential"]
    throughput: list[dict[str, Any]] = measured_runs["throughput"]

    log(f"the broker simulator's own forward_admin_request: {args.simulator_requests} requests")
    simulator = SimulatorThread(
        http.base, http.internal, stack.tokens["broker"], SIMULATOR_BROKER
    ).run(args.simulator_requests, value_base=20_000_000)
    acknowledged += simulator.pop("acknowledged_ids")

    web: dict[str, Any] = {}
    in_process: dict[str, Any] = {}
    if args.profile:
        log(f"the web side's own cost: {args.profile} requests per way through the views")
        web = web_in_process(all_ways, args.profile, run_id)
        acknowledged += web.pop("acknowledged_ids")
    brokers.stop()
    if args.profile:
        log(f"the controller's own cost: {args.profile} writes handled in-process")
        in_process = controller_in_process(stack, controller, args.profile, run_id)
        acknowledged += in_process.pop("acknowledged_ids")
        log(
            f"    one event p50 {in_process['handle_one_event_ms'].get('p50_ms')} ms; "
            f"batches {in_process['handle_batch (group commit)']}"
        )

    log("checking the metadata log and the audit trail")
    time.sleep(0.5)
    forwarded = {
        # The lean client's and the in-process views' envelopes ("bench-<run>-...-e-...").
        FORWARDING_BROKER: sum(
            i.startswith(f"bench-{run_id}-") and "-e-" in i for i in acknowledged
        ),
        SIMULATOR_BROKER: simulator["acknowledged_writes"],
    }
    checks = log_check(stack, start_offset, acknowledged)
    audit = audit_check(stack, audit_start, forwarded)
    durations = audit_durations(stack, audit_start, run_id, "s")
    verify = verify_stack(stack)

    direct, envelope = seq["direct"], seq["envelope"]
    ratio = {
        p: round(percentile(envelope.latencies_ms, p) / percentile(direct.latencies_ms, p), 3)
        for p in (50, 99)
    }
    best = {
        name: max(throughput, key=lambda row, n=name: row[n]["writes_per_s"])[name]
        for name in all_ways
    }
    errors = {
        name: sum(row[name]["errors"] for row in throughput) + sum(seq[name].errors.values())
        for name in all_ways
    }
    controller_seq = latency_summary(direct.controller_task_ms + envelope.controller_task_ms)
    cores = os.cpu_count() or 1
    ceiling = {}
    for name in all_ways:
        spent = best[name].get("cpu_ms_per_write", {})
        ours = sum(spent.get(k, 0.0) for k in ("web", "controller", "postgresql", "redis"))
        ceiling[name] = {
            "server_cpu_ms_per_write": round(ours, 3),
            "client_cpu_ms_per_write": spent.get("bench_client"),
            "writes_per_s_if_the_server_had_every_core": round(cores * 1000 / ours, 1)
            if ours
            else None,
            "at_concurrency": best[name]["concurrency"],
        }
    where = where_time_goes(
        all_ways=all_ways,
        call=call,
        ceiling=ceiling,
        celery=celery,
        commit_floor=commit_floor,
        controller_seq=controller_seq,
        direct=direct,
        durations=durations,
        envelope=envelope,
        in_process=in_process,
        redis=redis,
        seq=seq,
        web=web,
    )
    ok_ratio = ratio[50] <= args.ratio_target and ratio[99] <= args.ratio_target
    ok_throughput = all(best[name]["writes_per_s"] >= args.writes_target for name in all_ways)
    command = "$ .venv/bin/python -m bench.admin_forwarding " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    return {
        "benchmark": "admin_forwarding",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command.strip(),
        "setup": run_setup(args=args, call=call, controller=controller, load_before=load_before),
        "sequential_latency_ms": {
            "direct": direct.summary(),
            "envelope": envelope.summary(),
            "ratio_envelope_to_direct": {"p50": ratio[50], "p99": ratio[99]},
        },
        "throughput": throughput,
        "group_commit_sequential": {
            name: commits_of(stack, seq[name].acknowledged_ids) for name in all_ways
        },
        "throughput_best_writes_per_s": {
            name: {
                "writes_per_s": best[name]["writes_per_s"],
                "concurrency": best[name]["concurrency"],
            }
            for name in all_ways
        },
        "errors_total": errors,
        "simulator_forward": simulator,
        "where_time_goes": where,
        "metadata_log_check": checks,
        "audit_check": audit,
        "verify_metadata": verify,
        "targets": {
            "ratio_envelope_to_direct_at_most": args.ratio_target,
            "writes_per_s_at_least": args.writes_target,
        },
        "met": {
            "ratio_p50_and_p99": ok_ratio,
            "throughput_both_ways": ok_throughput,
            "no_errors": not any(errors.values()),
            "exactly_one_record_per_acknowledged_write": checks[
                "exactly_one_record_per_acknowledged_write"
            ],
            "forwarded_writes_audited_as_the_client": audit[
                "every_acknowledged_forwarded_write_audited"
            ],
            "verify_metadata": verify["clean"],
        },
    }
