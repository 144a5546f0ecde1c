"""Phase 4, in-process: the web views through Django's test client, and the controller's own cost
with its process stopped (timed, SQL statements, profiled)."""

from __future__ import annotations

import itertools
import json
import re
import signal
import statistics
import time
from typing import TYPE_CHECKING, Any

from bench.admin_forwarding.common import latency_summary, log, percentile, set_retention
from bench.admin_forwarding.probes import write_event
from bench.admin_forwarding.ways import Way
from devtools.stack import ROOT, Stack

if TYPE_CHECKING:
    from controlplane.runtime.conversation import ControllerEvent


def profile_summary(profile: Any, count: int, top: int = 15) -> dict[str, Any]:
    """cProfile's figures per request: the functions with the most own time, and the project's
    functions with the most cumulative time."""
    import pstats

    entries = pstats.Stats(profile).stats

    def row(key: tuple[str, int, str], values: tuple[Any, ...]) -> dict[str, Any]:
        filename, line, name = key
        where = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
        return {
            "function": f"{where}:{line}({name})" if line else name,
            "calls": round(values[1] / count, 2),
            "own_ms": round(values[2] * 1000 / count, 3),
            "cumulative_ms": round(values[3] * 1000 / count, 3),
        }

    def cumulative(module: str, names: set[str]) -> float:
        total = sum(v[3] for k, v in entries.items() if module in k[0] and k[2] in names)
        return round(total * 1000 / count, 3)

    by_own = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)
    ours = [
        item
        for item in entries.items()
        if str(ROOT) in item[0][0] and ".venv" not in item[0][0] and "/bench/" not in item[0][0]
    ]
    by_cumulative = sorted(ours, key=lambda item: item[1][3], reverse=True)
    return {
        "profiled_ms": round(sum(v[2] for v in entries.values()) * 1000 / count, 3),
        "psycopg_execute_ms": cumulative("psycopg/cursor.py", {"execute"}),
        "psycopg_commit_ms": cumulative("psycopg/connection.py", {"commit"}),
        "redis_ms": cumulative("redis/client.py", {"execute_command", "execute"}),
        "controller_call_ms": cumulative("controlplane/services.py", {"controller_call"}),
        "channel_request_ms": cumulative("controlplane/runtime/channel.py", {"request"}),
        "celery_result_get_ms": cumulative("celery/result.py", {"get"}),
        "celery_apply_async_ms": cumulative("celery/app/task.py", {"apply_async"}),
        "top_own_time": [row(k, v) for k, v in by_own[:top]],
        "top_cumulative_project_functions": [row(k, v) for k, v in by_cumulative[: top + 5]],
    }


def web_in_process(all_ways: dict[str, Way], count: int, run_id: str) -> dict[str, Any]:
    """The web side's cost per request, without HTTP: Django's test client in this process
    calls each view (middleware, authentication, validation, authorization, the controller
    call through Celery to the running controller, the audit row), timed, then profiled."""
    import cProfile

    from django.conf import settings
    from django.test import Client

    client = Client()
    value = itertools.count(40_000_000)
    acknowledged: list[str] = []
    out: dict[str, Any] = {}
    for name, way in all_ways.items():

        def send(tag: str, n: int, way: Way = way, name: str = name) -> None:
            request_id = f"bench-{run_id}-webproc-{name[0]}-{tag}-{n}"
            rpc = set_retention(next(value))
            # The Envelope is the internal listener's: it is served on the internal port only.
            internal = way.path.startswith("/internal/")
            response = client.post(
                way.path,
                data=json.dumps(way.wrap(rpc, n)),
                content_type="application/json",
                SERVER_PORT=str(settings.CP_INTERNAL_PORT) if internal else "80",
                HTTP_AUTHORIZATION=f"Bearer {way.token}",
                HTTP_X_REQUEST_ID=request_id,
                HTTP_X_CLIENT_ID=way.client_id,
            )
            if response.status_code == 200 and way.acknowledged(response.json()):
                acknowledged.append(request_id)

        for n in range(20):
            send("warm", n)
        wall, cpu = [], []
        for n in range(count):
            started, cpu_started = time.perf_counter(), time.process_time()
            send("timed", n)
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
        profile = cProfile.Profile()
        profile.enable()
        for n in range(count):
            send("profiled", n)
        profile.disable()
        out[name] = {
            "wall_ms": latency_summary(wall),
            "cpu_ms": latency_summary(cpu),
            "profile": profile_summary(profile, count),
        }
        log(
            f"    {name}: wall p50 {out[name]['wall_ms']['p50_ms']} ms, "
            f"CPU p50 {out[name]['cpu_ms']['p50_ms']} ms"
        )
    out["acknowledged_ids"] = acknowledged
    out["note"] = (
        "django.test.Client in the benchmark process (no HTTP, no gunicorn), the real "
        "controller answering over Celery: wall and CPU of this process per request. cProfile "
        "inflates times; compare the parts, not the total."
    )
    return out


def controller_in_process(stack: Stack, controller: str, count: int, run_id: str) -> dict[str, Any]:
    """The controller's own cost per write, without Celery: the controller process is stopped,
    this process takes the lease with the same ControllerRuntime and handles the benchmark's
    write events: one at a time (timed, SQL statements timed, then profiled), and in batches
    (group commit: what one commit of N events costs)."""
    import cProfile

    from django.conf import settings
    from django.db import connection

    from controlplane.controller.errors import ApiError
    from controlplane.runtime.controller import ControllerRuntime
    from controlplane.runtime.sessions import session_store

    stack.kill(controller, signal.SIGTERM)
    stack.procs[controller].wait(timeout=60)
    runtime = ControllerRuntime(
        node_id="bench-profiler",
        controller_id=3999,
        lease_ms=settings.CP_LEASE_MS,
        session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
        sessions=session_store(),
    )
    waited = time.monotonic()
    while True:  # the stopped controller's lease lapses first
        try:
            runtime.ensure_active()
            break
        except ApiError:
            if time.monotonic() - waited > 60:
                raise SystemExit("could not take the controller lease") from None
            time.sleep(0.2)
    log(f"    took the lease after {time.monotonic() - waited:.1f} s")
    acknowledged: list[str] = []
    value = itertools.count(30_000_000)

    def event(tag: str, n: int) -> ControllerEvent:
        return write_event(f"bench-{run_id}-inproc-{tag}-{n}", next(value))

    def handle(events: list[ControllerEvent]) -> None:
        for sent, answer in zip(events, runtime.handle_batch(events), strict=True):
            if all(r.get("error_code") == 0 for r in answer.response.get("responses") or [{}]):
                acknowledged.append(sent.context.request_id)

    for n in range(20):  # warm-up
        handle([event("warm", n)])
    times, cpu = [], []
    statements: dict[str, list[float]] = {}

    def timed_sql(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            statements.setdefault(_statement_name(sql), []).append(
                (time.perf_counter() - started) * 1000
            )

    with connection.execute_wrapper(timed_sql):
        for n in range(count):
            started, cpu_started = time.perf_counter(), time.process_time()
            handle([event("timed", n)])
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
    batches: dict[str, Any] = {}
    for size in (8, 32):
        per_batch = []
        for n in range(max(5, count // size)):
            events = [event(f"batch{size}", n * size + i) for i in range(size)]
            started = time.perf_counter()
            handle(events)
            per_batch.append((time.perf_counter() - started) * 1000)
        batches[str(size)] = {
            "batches": len(per_batch),
            "ms_per_batch_p50": round(percentile(per_batch, 50), 3),
            "ms_per_event_p50": round(percentile(per_batch, 50) / size, 3),
        }
    profile = cProfile.Profile()
    profile.enable()
    for n in range(count):
        handle([event("profiled", n)])
    profile.disable()
    runtime.resign()
    return {
        "events": count,
        "handle_one_event_ms": latency_summary(times),
        "handle_one_event_cpu_ms": latency_summary(cpu),
        "handle_batch (group commit)": batches,
        "sql_statements_per_event (timed run)": {
            name: {
                "per_event": round(len(values) / count, 2),
                "p50_ms": round(percentile(values, 50), 3),
                "mean_ms": round(statistics.fmean(values), 3),
            }
            for name, values in sorted(statements.items(), key=lambda kv: -sum(kv[1]))
        },
        "sql_ms_per_event (timed run, statements only, commit excluded)": round(
            sum(sum(v) for v in statements.values()) / count, 3
        ),
        "profile_per_event": profile_summary(profile, count),
        "acknowledged_ids": acknowledged,
        "note": "ControllerRuntime.handle_batch() in the benchmark process after the controller "
        "process was stopped: the same code, database and Redis, no Celery, no batching "
        "thread. cProfile inflates times; compare the parts, not the total.",
    }


def _statement_name(sql: str) -> str:
    """A statement's verb and first table, e.g. UPDATE cp_cluster."""
    words = sql.split(None, 1)
    verb = words[0].upper() if words else "?"
    table = re.search(r'"?(cp_\w+)"?', sql)
    name = f"{verb} {table[1] if table else '?'}"
    return name + " FOR UPDATE" if "FOR UPDATE" in sql.upper() else name
