"""Phase 4, the floors and round trips: a PostgreSQL commit, a Redis ping, and events sent to the
controller through `controller_call` and over the Celery queue."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from bench.admin_forwarding.common import latency_summary, log, percentile, set_retention
from devtools.stack import Stack

if TYPE_CHECKING:
    from controlplane.runtime.conversation import ControllerEvent


def controller_event(
    api: str, payload: dict[str, Any], principal: str, request_id: str
) -> ControllerEvent:
    """An event as controlplane.services.controller_call sends it to the controller (built by
    the same function), with a deadline 30 s away."""
    from controlplane.runtime.conversation import RequestContext
    from controlplane.services import controller_event as event_to_controller

    context = RequestContext(
        principal=principal, client_id="bench-probe", client_host="127.0.0.1", request_id=request_id
    )
    return event_to_controller(api=api, payload=payload, context=context, timeout_ms=30_000)


def write_event(request_id: str, value: int) -> ControllerEvent:
    """The benchmark's write as the controller receives it (what the view sends)."""
    return controller_event(
        "IncrementalAlterConfigs",
        {**set_retention(value), "validate_only": False},
        "User:admin",
        request_id,
    )


def controller_transport() -> str:
    """How the web side reaches the controller in this tree (its executor decides, see
    controlplane.runtime.executor)."""
    from django.conf import settings

    try:
        import controlplane.runtime.channel  # noqa: F401
    except ImportError:
        return "Celery queue 'controller'"
    if settings.CP_REDIS_URL:
        return "request channel (controlplane.runtime.channel, a Redis list)"
    return "Celery queue 'controller'"


def controller_call_probe(count: int, run_id: str) -> dict[str, Any]:
    """Round trips through `controlplane.services.controller_call`, the function every admin
    view uses to reach the controller (no HTTP, no view): a no-op event and the write."""
    from controlplane.runtime.conversation import RequestContext
    from controlplane.services import controller_call

    results: dict[str, Any] = {"transport": controller_transport()}
    acknowledged: list[str] = []
    for kind in ("noop", "write"):
        round_trips: list[float] = []
        for n in range(count):
            request_id = f"bench-{run_id}-call-{kind}-{n}"
            if kind == "noop":
                api, payload, principal = "FenceStaleBrokers", {}, "User:controller"
            else:
                sent = write_event(request_id, 50_000_000 + n)
                api, payload, principal = sent.api, dict(sent.payload), "User:admin"
            context = RequestContext(
                principal=principal,
                client_id="bench-probe",
                client_host="127.0.0.1",
                request_id=request_id,
            )
            started = time.perf_counter()
            answer = controller_call(api=api, payload=payload, context=context)
            round_trips.append((time.perf_counter() - started) * 1000)
            responses = answer.get("responses") or [{}]
            if kind == "write" and all(r.get("error_code") == 0 for r in responses):
                acknowledged.append(request_id)
        results[kind] = {"round_trip": latency_summary(round_trips)}
        log(
            f"    controller_call {kind}: p50 {results[kind]['round_trip']['p50_ms']} ms, "
            f"p99 {results[kind]['round_trip']['p99_ms']} ms"
        )
    results["acknowledged_ids"] = acknowledged
    return results


def celery_probe(count: int, run_id: str) -> dict[str, Any]:
    """Events sent straight to the controller queue from here, one at a time: a no-op (the
    timer's FenceStaleBrokers, which finds nobody to fence) and the benchmark's write. The
    round trip is Redis queue + the controller's worker + the result backend; the answer's
    `handled_ms` (when the controller took the event) splits it."""
    from controlplane.runtime.conversation import ControllerAnswer
    from controlplane.tasks import controller_event as task

    results: dict[str, Any] = {}
    acknowledged: list[str] = []
    for kind in ("noop", "write"):
        round_trips: list[float] = []
        queue_ms: list[float] = []
        for n in range(count):
            request_id = f"bench-{run_id}-probe-{kind}-{n}"
            if kind == "noop":
                sent = controller_event("FenceStaleBrokers", {}, "User:controller", "")
            else:
                sent = write_event(request_id, 10_000_000 + n)
            started = time.perf_counter()
            result = task.apply_async(args=[sent.to_wire()], queue="controller")
            answer = ControllerAnswer.from_wire(result.get(timeout=30))
            round_trips.append((time.perf_counter() - started) * 1000)
            result.forget()
            if answer.handled_ms is not None and sent.sent_ms is not None:
                queue_ms.append(float(answer.handled_ms - sent.sent_ms))
            responses = answer.response.get("responses") or [{}]
            if kind == "write" and all(r.get("error_code") == 0 for r in responses):
                acknowledged.append(request_id)
        results[kind] = {
            "round_trip": latency_summary(round_trips),
            "queue_ms_p50": round(percentile(queue_ms, 50), 1),
            "note": (
                "a no-op event: Redis queue, the controller's dispatch, the result backend"
                if kind == "noop"
                else "the benchmark's write as a controller event: queue, handle, commit, answer"
            ),
        }
        log(
            f"    celery {kind}: p50 {results[kind]['round_trip']['p50_ms']} ms, "
            f"p99 {results[kind]['round_trip']['p99_ms']} ms"
        )
    results["acknowledged_ids"] = acknowledged
    return results


def postgres_commit_floor(stack: Stack, count: int) -> dict[str, Any]:
    """One-row INSERT + COMMIT, one at a time: what every controller commit pays at least (the
    WAL flush, synchronous_commit=on)."""
    import psycopg

    url = stack.env["DATABASE_URL"].replace("postgres://", "postgresql://")
    times = []
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE bench_commit (id bigserial PRIMARY KEY, v text)")
        conn.commit()
        for n in range(count):
            started = time.perf_counter()
            conn.execute("INSERT INTO bench_commit (v) VALUES (%s)", [str(n)])
            conn.commit()
            times.append((time.perf_counter() - started) * 1000)
        conn.execute("DROP TABLE bench_commit")
        conn.commit()
        settings = {
            name: str((conn.execute(f"SHOW {name}").fetchone() or [""])[0])
            for name in ("synchronous_commit", "fsync", "wal_sync_method")
        }
    return {"insert_and_commit": latency_summary(times), "settings": settings}


def redis_floor(stack: Stack, count: int) -> dict[str, Any]:
    import redis

    client = redis.Redis.from_url(stack.env["CP_REDIS_URL"])
    times = []
    for _ in range(count):
        started = time.perf_counter()
        client.ping()
        times.append((time.perf_counter() - started) * 1000)
    client.close()
    return {"ping": latency_summary(times)}
