"""Benchmark: admin writes sent directly vs forwarded by a broker in an Envelope (KIP-590).

The real stack: PostgreSQL, Redis, gunicorn (the control plane's worker, 3 workers x 8 threads:
cores + 1 workers, and threads enough to cover the time each admin write waits for the
controller; the heartbeat benchmark's 5 x 2 is `--workers 5 --threads 2`) and one
`run_controller` process (the only consumer of the controller's request channel). Three
brokers are registered and kept alive; one topic is created. The write is
IncrementalAlterConfigs SET retention.ms on that topic, a new value on every request (so each
one writes a ConfigRecord), sent two ways in the same run:

* direct: an admin client (the super user's token) -> `POST /api/v1/incremental-alter-configs`;
* envelope: a broker redirecting that client's request -> `POST /internal/v1/envelope` with the
  broker's token, `request_principal` User:admin and `forwarding_broker_id` (the body built by
  `brokers.simulator.envelope_request`, exactly what a simulated broker sends).

Measured, in one run:

1. sequential latency: one request at a time, the two ways taking turns every 50 requests; p50
   and p99 of each and their ratio envelope/direct;
2. closed-loop throughput (writes acknowledged per second) at a few concurrencies, the ways
   taking turns in short rounds (so whatever else runs on the machine hits both alike), with
   errors, the CPU each process group spent per write and the writes per commit;
3. a short run through the broker simulator's own `forward_admin_request`;
4. where the time goes: a PostgreSQL commit and a Redis ping (floors), round trips to the
   controller through `controller_call` and over the Celery queue (a no-op event and a write),
   the web views in-process (Django's test client: wall,
   CPU, profile), and the controller in-process (the controller process stopped, this process
   takes the lease: one event, batches of 8 and 32, SQL statements, profile).

At the end the metadata log must hold exactly one ConfigRecord per acknowledged write (by request
id), every forwarded write must be audited as User:admin with its broker, and `verify_metadata`
must pass.

The load client is lean: asyncio over raw sockets, HTTP/1.1 keep-alive, a request line and a
small JSON body built per request, the answer parsed only to count acknowledgements.

    make bench-admin      # or: .venv/bin/python -m bench.admin_forwarding [--help]
Writes bench/results/admin_forwarding.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import math
import os
import re
import resource
import shlex
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx

from bench.replica_state import Brokers
from devtools.stack import (
    BENCH_SETTINGS,
    ROOT,
    WORKER_CLASS,
    Http,
    Stack,
    postgres_admin_url,
    redis_url,
    running_stack,
    server_description,
    wait_for,
)

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "bench-configs"
DIRECT_PATH = "/api/v1/incremental-alter-configs"
ENVELOPE_PATH = "/internal/v1/envelope"
CLIENT_HOST = "10.20.30.40"  # the address the forwarding broker saw the client at
ADMIN_CLIENT_ID = "bench-admin"
FORWARDING_BROKER = 0  # the lean client's envelopes name this (registered) broker
SIMULATOR_BROKER = 100  # the broker simulator's own broker
RECYCLE_AFTER = 100  # requests per connection (keep-alive connections stick to one worker)
CLK_TCK = os.sysconf("SC_CLK_TCK")
TASK_LINE = re.compile(
    r"Task controlplane\.tasks\.controller_event\[[^\]]+\] succeeded in ([\d.e-]+)s"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- statistics ------------------------------------------------------------------------------
def set_retention(value: int) -> dict[str, Any]:
    """The benchmark's write: IncrementalAlterConfigs SET retention.ms on the topic."""
    return {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": TOPIC,
                "configs": [
                    {"name": "retention.ms", "config_operation": "SET", "value": str(value)}
                ],
            }
        ]
    }


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN without samples."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def latency_summary(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50_ms": round(percentile(values, 50), 3),
        "p90_ms": round(percentile(values, 90), 3),
        "p99_ms": round(percentile(values, 99), 3),
        "mean_ms": round(statistics.fmean(values), 3),
        "max_ms": round(max(values), 3),
    }


# --- the two ways in -------------------------------------------------------------------------
@dataclasses.dataclass
class Way:
    """One way to send the write: how a request is built and when its answer acknowledges it."""

    name: str
    path: str
    token: str
    client_id: str
    wrap: Callable[[dict[str, Any], int], dict[str, Any]]  # (the RPC body, sequence) -> body
    acknowledged: Callable[[dict[str, Any]], bool]

    def request(self, host: str, sequence: int, value: int, request_id: str) -> bytes:
        body = json.dumps(self.wrap(set_retention(value), sequence), separators=(",", ":")).encode()
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {self.token}\r\n"
            f"Connection: keep-alive\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nX-Request-ID: {request_id}\r\n"
            f"X-Client-ID: {self.client_id}\r\n\r\n"
        )
        return head.encode() + body


def _resources_ok(answer: Any) -> bool:
    responses = answer.get("responses") if isinstance(answer, dict) else None
    return bool(responses) and all(r.get("error_code") == 0 for r in responses)


def ways(tokens: dict[str, str]) -> dict[str, Way]:
    from brokers.simulator import admin_api, envelope_request, principal_fields

    api = admin_api("IncrementalAlterConfigs")
    principal = principal_fields("User:admin")

    def in_envelope(rpc: dict[str, Any], sequence: int) -> dict[str, Any]:
        return envelope_request(
            api,
            rpc,
            principal=principal,
            client_id=ADMIN_CLIENT_ID,
            client_host=CLIENT_HOST,
            correlation_id=sequence % 2**31,
            api_version=1,
            forwarding_broker_id=FORWARDING_BROKER,
        )

    def envelope_ok(answer: dict[str, Any]) -> bool:
        return (
            answer.get("error_code") == 0
            and answer.get("response_status") == 200
            and _resources_ok(answer.get("response_data"))
        )

    return {
        "direct": Way(
            "direct",
            DIRECT_PATH,
            tokens["admin"],
            ADMIN_CLIENT_ID,
            lambda rpc, _: rpc,
            _resources_ok,
        ),
        "envelope": Way(
            "envelope",
            ENVELOPE_PATH,
            tokens["broker"],
            f"bench-broker-{FORWARDING_BROKER}",
            in_envelope,
            envelope_ok,
        ),
    }


# --- the lean load client --------------------------------------------------------------------
@dataclasses.dataclass
class Phase:
    """One load phase of one way."""

    way: str
    label: str
    concurrency: int
    tag: str = "x"  # in the request ids: which phase sent it (w, s, t<concurrency>)
    requests: int = 0
    acknowledged: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = dataclasses.field(default_factory=list)  # acknowledged only
    errors: Counter[str] = dataclasses.field(default_factory=Counter)
    acknowledged_ids: list[str] = dataclasses.field(default_factory=list)
    cpu_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    controller_task_ms: list[float] = dataclasses.field(default_factory=list)

    @property
    def writes_per_s(self) -> float:
        return self.acknowledged / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "concurrency": self.concurrency,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "acknowledged_writes": self.acknowledged,
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
            "writes_per_s": round(self.writes_per_s, 1),
            "latency": latency_summary(self.latencies_ms),
        }
        if self.cpu_ms:
            result["cpu_ms_per_write"] = {
                group: round(ms / max(1, self.acknowledged), 3) for group, ms in self.cpu_ms.items()
            }
        if self.controller_task_ms:
            result["controller_event_time"] = latency_summary(self.controller_task_ms)
        return result


class LoadClient:
    def __init__(self, host: str, port: int, internal_port: int, run_id: str) -> None:
        self.host = host
        self.port = port  # the public listener: the admin's direct write
        self.internal_port = internal_port  # the internal listener: the broker's Envelope
        self.run_id = run_id
        self.sequence = itertools.count(1)
        self.value = itertools.count(86_400_000)  # retention.ms, a new value every request

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
    ) -> tuple[int, bytes, bool]:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        close = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        body = await reader.readexactly(length) if length else b""
        return status, body, close

    def port_for(self, way: Way) -> int:
        return self.internal_port if way.path.startswith("/internal/") else self.port

    async def _worker(self, way: Way, phase: Phase, stop: Callable[[], bool]) -> None:
        port = self.port_for(way)
        authority = f"{self.host}:{port}"
        reader, writer = await asyncio.open_connection(self.host, port)
        used = 0
        try:
            while not stop():
                if used == RECYCLE_AFTER:
                    writer.close()
                    reader, writer = await asyncio.open_connection(self.host, port)
                    used = 0
                used += 1
                sequence = next(self.sequence)
                request_id = f"bench-{self.run_id}-{way.name[0]}-{phase.tag}-{sequence}"
                request = way.request(authority, sequence, next(self.value), request_id)
                phase.requests += 1
                started = time.perf_counter()
                try:
                    status, body, close = await self._exchange(reader, writer, request)
                except (asyncio.IncompleteReadError, ConnectionError, ValueError) as error:
                    phase.errors[type(error).__name__] += 1
                    writer.close()
                    reader, writer = await asyncio.open_connection(self.host, port)
                    used = 0
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                try:
                    answer = json.loads(body) if body else {}
                except ValueError:
                    answer = {}
                if status == 200 and way.acknowledged(answer):
                    phase.acknowledged += 1
                    phase.latencies_ms.append(elapsed)
                    phase.acknowledged_ids.append(request_id)
                else:
                    phase.errors[_error_kind(status, answer)] += 1
                if close:
                    writer.close()
                    reader, writer = await asyncio.open_connection(self.host, port)
                    used = 0
        finally:
            writer.close()

    async def run(
        self,
        way: Way,
        phase: Phase,
        *,
        seconds: float | None = None,
        count: int | None = None,
        report: bool = False,
    ) -> Phase:
        """Closed loop: `phase.concurrency` connections, each sending its next request as soon
        as the previous one is answered, for `seconds` or until `count` requests were sent."""
        started = time.perf_counter()
        stop_at = started + seconds if seconds is not None else math.inf

        def stop() -> bool:
            if count is not None:
                return phase.requests >= count
            return time.perf_counter() >= stop_at

        async def reporter() -> None:
            last = 0
            while True:
                await asyncio.sleep(1)
                log(
                    f"    {phase.label}: {phase.acknowledged - last:>5} writes/s "
                    f"({phase.acknowledged} acknowledged, {sum(phase.errors.values())} errors)"
                )
                last = phase.acknowledged

        task = asyncio.create_task(reporter()) if report else None
        await asyncio.gather(*(self._worker(way, phase, stop) for _ in range(phase.concurrency)))
        phase.seconds += time.perf_counter() - started
        if task is not None:
            task.cancel()
        return phase


def _error_kind(status: int, answer: Any) -> str:
    if not isinstance(answer, dict):
        return f"HTTP {status}"
    if status != 200:
        return f"HTTP {status} {answer.get('error') or ''}".strip()
    inner = answer.get("response_data") if "response_data" in answer else answer
    if isinstance(inner, dict) and inner.get("error"):
        return f"inner {inner['error']}"
    for item in (inner or {}).get("responses") or []:
        if item.get("error_code"):
            return f"resource {item.get('error')}"
    return f"HTTP {status} unexpected answer"


# --- what the machine spent ------------------------------------------------------------------
def _proc_stat(pid: int) -> tuple[str, int, float] | None:
    """(name, parent pid, CPU seconds) of a process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_snapshot(stack: Stack, controller: str) -> dict[str, float]:
    """CPU seconds so far: gunicorn workers, the controller, PostgreSQL (every backend on the
    machine), Redis, this client; and the whole machine (busy jiffies, all processes)."""
    web = stack.procs["web"].pid
    controller_pid = stack.procs[controller].pid
    groups = dict.fromkeys(("web", "controller", "postgresql", "redis"), 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        found = _proc_stat(int(entry.name))
        if found is None:
            continue
        name, parent, seconds = found
        pid = int(entry.name)
        if parent == web or pid == web:
            groups["web"] += seconds
        elif pid == controller_pid or parent == controller_pid:
            groups["controller"] += seconds
        elif name.startswith("postgres"):
            groups["postgresql"] += seconds
        elif name.startswith("redis-server"):
            groups["redis"] += seconds
    usage = resource.getrusage(resource.RUSAGE_SELF)
    groups["bench_client"] = usage.ru_utime + usage.ru_stime
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    groups["machine_busy"] = (sum(fields[:8]) - idle) / CLK_TCK
    groups["machine_total"] = sum(fields[:8]) / CLK_TCK
    return groups


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    spent = {k: (after[k] - before[k]) * 1000 for k in before if k != "machine_total"}
    ours = sum(v for k, v in spent.items() if k != "machine_busy")
    spent["other_processes"] = max(0.0, spent["machine_busy"] - ours)
    return spent


class ControllerLog:
    """The controller's Celery worker log: each event's run time ("Task ... succeeded in")."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def task_times_ms(self) -> list[float]:
        """Run times of the events logged since the last mark()."""
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            text = handle.read().decode(errors="replace")
        return [float(m[1]) * 1000 for m in TASK_LINE.finditer(text)]


# --- the phases ------------------------------------------------------------------------------
async def measured(
    stack: Stack,
    controller: str,
    controller_log: ControllerLog,
    phase: Phase,
    load: Coroutine[Any, Any, Phase],
) -> Phase:
    """Run `load` for `phase`, adding the CPU it cost and the controller's event times."""
    before = cpu_snapshot(stack, controller)
    controller_log.mark()
    await load
    for group, ms in cpu_spent(before, cpu_snapshot(stack, controller)).items():
        phase.cpu_ms[group] = phase.cpu_ms.get(group, 0.0) + ms
    await asyncio.sleep(0.3)  # the worker flushes its last log lines
    phase.controller_task_ms.extend(controller_log.task_times_ms())
    return phase


async def sequential(
    client: LoadClient,
    all_ways: dict[str, Way],
    count: int,
    block: int,
    stack: Stack,
    controller: str,
    controller_log: ControllerLog,
) -> dict[str, Phase]:
    """`count` requests per way, one at a time, the ways taking turns every `block` requests
    (so drift on the machine hits both alike). CPU and controller times per way are summed
    over their blocks."""
    phases = {name: Phase(name, f"sequential {name}", 1, "s") for name in all_ways}
    cpu: dict[str, Counter[str]] = {name: Counter() for name in all_ways}
    for index in range(math.ceil(count / block)):
        for name, way in all_ways.items():
            phase = phases[name]
            target = min(count, (index + 1) * block)
            before = cpu_snapshot(stack, controller)
            controller_log.mark()
            await client.run(way, phase, count=target)
            cpu[name].update(cpu_spent(before, cpu_snapshot(stack, controller)))
            await asyncio.sleep(0.05)
            phase.controller_task_ms.extend(controller_log.task_times_ms())
        if (index + 1) % 4 == 0 or (index + 1) * block >= count:
            log(
                "    "
                + ", ".join(
                    f"{n}: {p.acknowledged} acknowledged, p50 "
                    f"{percentile(p.latencies_ms, 50):.2f} ms"
                    for n, p in phases.items()
                )
            )
    for name, phase in phases.items():
        phase.cpu_ms = dict(cpu[name])
    return phases


def controller_event(
    api: str, payload: dict[str, Any], principal: str, request_id: str
) -> dict[str, Any]:
    """An event as controlplane.services.controller_call sends it to the controller."""
    now = time.time_ns() // 1_000_000
    return {
        "api": api,
        "payload": payload,
        "principal": principal,
        "client_id": "bench-probe",
        "client_host": "127.0.0.1",
        "request_id": request_id,
        "deadline_ms": now + 30_000,
        "sent_ms": now,
    }


def write_event(request_id: str, value: int) -> dict[str, Any]:
    """The benchmark's write as the controller receives it (what the view sends)."""
    return controller_event(
        "IncrementalAlterConfigs",
        {**set_retention(value), "validate_only": False},
        "User:admin",
        request_id,
    )


def controller_transport() -> str:
    """How the web side reaches the controller in this tree (controlplane.services decides)."""
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
    from controlplane.runtime.metadata_log import RequestContext
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
                api, payload, principal = sent["api"], sent["payload"], "User:admin"
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
    round trip is Redis queue + the controller's worker + the result backend; `_handled_ms`
    (when the controller took the event) splits it."""
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
            result = task.apply_async(args=[sent], queue="controller")
            answer = result.get(timeout=30)
            round_trips.append((time.perf_counter() - started) * 1000)
            result.forget()
            if isinstance(answer.get("_handled_ms"), int):
                queue_ms.append(float(answer["_handled_ms"] - sent["sent_ms"]))
            responses = answer.get("responses") or [{}]
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


def profile_summary(profile: Any, count: int, top: int = 15) -> dict[str, Any]:
    """cProfile's figures per request: the functions with the most own time, and the project's
    functions with the most cumulative time."""
    import pstats

    entries = pstats.Stats(profile).stats  # type: ignore[attr-defined]

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

    def event(tag: str, n: int) -> dict[str, Any]:
        return write_event(f"bench-{run_id}-inproc-{tag}-{n}", next(value))

    def handle(events: list[dict[str, Any]]) -> None:
        for sent, response in zip(events, runtime.handle_batch(events), strict=True):
            if all(r.get("error_code") == 0 for r in response.get("responses") or [{}]):
                acknowledged.append(sent["request_id"])

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


class SimulatorThread:
    """The broker simulator on its own event loop: broker `first_id` forwards through
    `BrokerSimulator.forward_admin_request` (httpx, asyncio), as a simulated broker would."""

    def __init__(self, url: str, internal_url: str, token: str, first_id: int) -> None:
        from brokers.simulator import BrokerSimulator

        self.first_id = first_id
        self.sim = BrokerSimulator(
            url,
            token,
            internal_url=internal_url,
            brokers=1,
            first_id=first_id,
            client_id="bench-sim",
            track_partitions=False,
            heartbeat_interval_ms=2000,
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def call(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def run(self, count: int, value_base: int) -> dict[str, Any]:
        self.thread.start()
        try:
            self.call(self.sim.start())
            ready = self.call(
                self.sim.wait_for(lambda s: s.broker(self.first_id).registered, 60), timeout=90
            )
            if not ready:
                raise SystemExit("the simulated broker never registered")
            latencies: list[float] = []
            attempts: Counter[int] = Counter()
            errors: Counter[str] = Counter()
            acknowledged: list[str] = []
            for n in range(count):
                body = set_retention(value_base + n)
                result = self.call(
                    self.sim.forward_admin_request(
                        self.first_id,
                        "IncrementalAlterConfigs",
                        body,
                        "User:admin",
                        client_id=ADMIN_CLIENT_ID,
                        client_host=CLIENT_HOST,
                    )
                )
                attempts[result.attempts] += 1
                if result.ok:
                    latencies.append(result.elapsed_s * 1000)
                    acknowledged.append(result.request_id)
                else:
                    errors[str(result.response_data.get("error") or "inner error")] += 1
            self.call(self.sim.shutdown_all(30), timeout=60)
        finally:
            self.call(self.sim.close())
            self.loop.call_soon_threadsafe(self.loop.stop)
        return {
            "requests": count,
            "acknowledged_writes": len(acknowledged),
            "errors_by_kind": dict(errors),
            "attempts_per_request": {str(k): v for k, v in sorted(attempts.items())},
            "latency": latency_summary(latencies),
            "acknowledged_ids": acknowledged,
            "note": "BrokerSimulator.forward_admin_request, sequential (httpx + asyncio)",
        }


# --- checks ----------------------------------------------------------------------------------
def commits_of(stack: Stack, request_ids: list[str]) -> dict[str, Any]:
    """Group commit: how many commits the phase's writes took. Every record of one commit has
    the commit's timestamp; two commits in the same millisecond count as one here."""
    if not request_ids:
        return {}
    rows = stack.sql(
        "SELECT timestamp_ms, count(*) FROM cp_metadata_record "
        "WHERE record_type = 'ConfigRecord' AND request_id = ANY(%s) GROUP BY timestamp_ms",
        request_ids,
    )
    sizes = [int(r[1]) for r in rows]
    return {
        "commits": len(sizes),
        "events_per_commit_mean": round(statistics.fmean(sizes), 2) if sizes else 0,
        "events_per_commit_max": max(sizes, default=0),
    }


def log_check(stack: Stack, since_offset: int, acknowledged: list[str]) -> dict[str, Any]:
    """Every acknowledged write left exactly one ConfigRecord, and no record is unaccounted for."""
    rows = stack.sql(
        "SELECT request_id, count(*) FROM cp_metadata_record "
        'WHERE record_type = %s AND "offset" > %s GROUP BY request_id',
        "ConfigRecord",
        since_offset,
    )
    per_request = {str(r[0]): int(r[1]) for r in rows}
    head = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])
    acked = set(acknowledged)
    records = sum(per_request.values())
    missing = sorted(acked - per_request.keys())
    duplicated = sorted(r for r, n in per_request.items() if n > 1)
    unacknowledged = sorted(per_request.keys() - acked)
    return {
        "offsets": {"after": since_offset, "head": head, "written": head - since_offset},
        "config_records_written": records,
        "acknowledged_writes": len(acknowledged),
        "acknowledged_request_ids_unique": len(acked) == len(acknowledged),
        "acknowledged_without_record": len(missing),
        "request_ids_with_more_than_one_record": len(duplicated),
        "records_without_acknowledgement": len(unacknowledged),
        "examples": {
            "missing": missing[:5],
            "duplicated": duplicated[:5],
            "unacknowledged": unacknowledged[:5],
        },
        "exactly_one_record_per_acknowledged_write": (
            records == len(acknowledged) == len(acked) and not missing and not duplicated
        ),
    }


def audit_check(stack: Stack, since_id: int, expected: dict[int, int]) -> dict[str, Any]:
    """Forwarded writes are audited as the original client (User:admin), with the broker that
    forwarded them: at least one SUCCESS event per acknowledged write, by broker id."""
    rows = stack.sql(
        "SELECT principal, forwarding_principal, forwarding_broker_id, outcome, count(*) "
        "FROM cp_audit_event WHERE id > %s AND api = %s AND forwarding_broker_id IS NOT NULL "
        "GROUP BY 1, 2, 3, 4 ORDER BY 3, 4",
        since_id,
        "IncrementalAlterConfigs",
    )
    groups = [
        {
            "principal": r[0],
            "forwarding_principal": r[1],
            "forwarding_broker_id": r[2],
            "outcome": r[3],
            "events": int(r[4]),
        }
        for r in rows
    ]
    audited = {
        broker: sum(
            g["events"]
            for g in groups
            if g["forwarding_broker_id"] == broker
            and g["principal"] == "User:admin"
            and g["outcome"] == "SUCCESS"
        )
        for broker in expected
    }
    return {
        "forwarded_events": groups,
        "acknowledged_forwarded_writes_by_broker": {str(b): n for b, n in expected.items()},
        "audited_success_as_user_admin_by_broker": {str(b): n for b, n in audited.items()},
        "every_acknowledged_forwarded_write_audited": all(
            audited[b] >= n for b, n in expected.items()
        ),
        "audited_equals_acknowledged": audited == expected,
    }


def audit_durations(stack: Stack, since_id: int, run_id: str, tag: str) -> dict[str, Any]:
    """The server's own time per request of one phase (the view, the controller call
    included: the audit trail's duration_ms), by way."""
    out = {}
    for name in ("direct", "envelope"):
        rows = stack.sql(
            "SELECT duration_ms FROM cp_audit_event WHERE id > %s AND request_id LIKE %s "
            "AND outcome = 'SUCCESS'",
            since_id,
            f"bench-{run_id}-{name[0]}-{tag}-%",
        )
        out[name] = latency_summary([float(r[0]) for r in rows])
    return out


# --- the run ---------------------------------------------------------------------------------
def django_in_this_process(stack: Stack) -> None:
    """Django set up here with the stack's settings: the Celery probe sends to the stack's
    controller queue."""
    for key, value in stack.env.items():
        if key.startswith(("CP_", "DATABASE_", "CELERY_")):
            os.environ[key] = value
    os.environ["DJANGO_SETTINGS_MODULE"] = "controlplane.settings"
    import django

    django.setup()


@dataclasses.dataclass
class Load:
    """What the load phases need, and the request ids they got acknowledged."""

    stack: Stack
    args: argparse.Namespace
    controller: str
    controller_log: ControllerLog
    client: LoadClient
    all_ways: dict[str, Any]
    audit_start: int
    run_id: str
    acknowledged: list[str] = dataclasses.field(default_factory=list)


async def load_phases(load: Load) -> dict[str, Any]:
    """Warm-up, sequential latency, then closed-loop throughput at each concurrency level."""
    await warm_up(load)
    args = load.args
    log(
        f"sequential latency: {args.sequential} requests per way, one at a time, "
        f"alternating every {args.block}"
    )
    seq = await sequential(
        load.client,
        load.all_ways,
        args.sequential,
        args.block,
        load.stack,
        load.controller,
        load.controller_log,
    )
    for phase in seq.values():
        load.acknowledged.extend(phase.acknowledged_ids)
    throughput = [await throughput_level(load, c) for c in args.concurrency]
    return {"sequential": seq, "throughput": throughput}


async def warm_up(load: Load) -> None:
    log("warm-up: 100 sequential requests, then 2 s at concurrency 16, each way")
    for name, way in load.all_ways.items():
        for phase in (
            Phase(name, f"warm-up {name}", 1, "w"),
            Phase(name, f"warm-up {name}", 16, "w"),
        ):
            if phase.concurrency == 1:
                await load.client.run(way, phase, count=100)
            else:
                await load.client.run(way, phase, seconds=2.0)
            load.acknowledged.extend(phase.acknowledged_ids)
            if phase.errors:
                log(f"    warm-up {name} errors: {dict(phase.errors)}")


async def throughput_level(load: Load, concurrency: int) -> dict[str, Any]:
    """One concurrency level: rounds in which the ways take turns; one row of results."""
    args, all_ways = load.args, load.all_ways
    log(
        f"throughput: {concurrency} concurrent clients, {args.rounds} rounds of "
        f"{args.seconds:g} s per way, the ways taking turns"
    )
    phases = {
        name: Phase(name, f"c={concurrency} {name}", concurrency, f"t{concurrency}")
        for name in all_ways
    }
    for round_ in range(args.rounds):
        order = list(all_ways) if round_ % 2 == 0 else list(reversed(all_ways))
        for name in order:
            phase = phases[name]
            await measured(
                load.stack,
                load.controller,
                load.controller_log,
                phase,
                load.client.run(all_ways[name], phase, seconds=args.seconds, report=True),
            )
            await asyncio.sleep(0.3)
    row: dict[str, Any] = {"concurrency": concurrency}
    for name, phase in phases.items():
        load.acknowledged.extend(phase.acknowledged_ids)
        row[name] = phase.summary()
        row[name]["server_view_duration_ms"] = audit_durations(
            load.stack, load.audit_start, load.run_id, phase.tag
        )[name]
        row[name]["group_commit"] = commits_of(load.stack, phase.acknowledged_ids)
        log(
            f"  {name} c={concurrency}: {phase.writes_per_s:.0f} writes/s, "
            f"p50 {percentile(phase.latencies_ms, 50):.1f} ms, "
            f"p99 {percentile(phase.latencies_ms, 99):.1f} ms, "
            f"{sum(phase.errors.values())} errors, "
            f"{row[name]['group_commit'].get('events_per_commit_mean')} events/commit"
        )
    return row


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
            "(controlplane.services.controller_call decides); the controller hands waiting "
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
        f"{FORWARDING_BROKER} (body: brokers.simulator.envelope_request)",
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


def measure(stack: Stack, args: argparse.Namespace, controller: str) -> dict[str, Any]:
    run_id = f"{int(time.time()) % 100000}"
    load_before = os.getloadavg()
    http: Http = stack.start_web(
        workers=args.workers, threads=args.threads, worker_class=args.worker_class
    )
    host, port = http.base.removeprefix("http://").split(":")
    internal_port = http.internal.rsplit(":", 1)[1]
    django_in_this_process(stack)
    cluster_id = stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0]
    brokers = Brokers(http.internal, stack.tokens["broker"], cluster_id, args.brokers)
    brokers.register_all()
    wait_for(
        lambda: stack.sql("SELECT count(*) FROM cp_broker WHERE NOT fenced")[0][0] == args.brokers,
        30,
        "every broker unfenced",
    )
    with httpx.Client(
        base_url=http.base, headers={"Authorization": f"Bearer {stack.tokens['admin']}"}, timeout=60
    ) as admin:
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
    verify = stack.manage("verify_metadata", check=False)

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
        "verify_metadata": (verify.stdout.strip().splitlines() or [""])[-1],
        "verify_metadata_exit_code": verify.returncode,
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
            "verify_metadata": verify.returncode == 0,
        },
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--worker-class",
        default=WORKER_CLASS,
        help="gunicorn worker class (gthread: the old server, to compare)",
    )
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (cores + 1)")
    parser.add_argument(
        "--threads",
        type=int,
        default=8,
        help="threads per gunicorn worker (admin writes wait for the controller)",
    )
    parser.add_argument("--brokers", type=int, default=3, help="registered brokers")
    parser.add_argument("--sequential", type=int, default=1000, help="sequential requests per way")
    parser.add_argument(
        "--block", type=int, default=50, help="sequential: the ways alternate every N requests"
    )
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[8, 16, 32],
        help="closed-loop concurrency levels, comma-separated (default 8,16,32)",
    )
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="seconds per round, way and concurrency level"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="throughput: rounds per concurrency level, the ways taking turns (default 3)",
    )
    parser.add_argument("--probes", type=int, default=200, help="floor measurements of each kind")
    parser.add_argument(
        "--simulator-requests",
        type=int,
        default=100,
        help="requests forwarded through BrokerSimulator.forward_admin_request",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=300,
        help="at the end, this many requests per way through the views in-process, then (the "
        "controller process stopped) this many writes handled by the controller in-process, "
        "timed and profiled (0: skip)",
    )
    parser.add_argument(
        "--controller-loglevel",
        default="INFO",
        help="the controller worker's log level; INFO logs each event's run time (default INFO)",
    )
    parser.add_argument("--ratio-target", type=float, default=1.5)
    parser.add_argument("--writes-target", type=float, default=300.0)
    args = parser.parse_args()
    controller = "controller"
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_stack(Path(tmp) / "logs", settings=BENCH_SETTINGS) as stack,
    ):
        stack.spawn(
            controller,
            [
                sys.executable,
                "manage.py",
                "run_controller",
                "--loglevel",
                args.controller_loglevel,
            ],
            {"CP_NODE_ID": controller, "CP_CONTROLLER_ID": "3000"},
        )
        stack.wait_active(controller)
        log(f"controller active; starting gunicorn ({args.workers} x {args.threads})")
        result = measure(stack, args, controller)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "admin_forwarding.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    log(
        f"sequential p50/p99: direct {result['sequential_latency_ms']['direct']['latency']}, "
        f"ratio {result['sequential_latency_ms']['ratio_envelope_to_direct']}; best writes/s "
        f"{result['throughput_best_writes_per_s']}; met {result['met']}"
    )


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
