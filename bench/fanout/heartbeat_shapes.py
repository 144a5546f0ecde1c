"""The two ways brokers' heartbeats reach the controller while the fan-out runs:

- `agent`: one agent heartbeats for every broker in turn every 2 s, from a thread of its own
  with one connection (one process managing many brokers: the broker simulator's shape);
- `threads`: each broker heartbeats every 2 s from a thread and a connection of its own
  (separate broker processes).

Each records, per broker, the gaps between answered heartbeats (what the controller's session
sees), the answers' latencies and the errors, and says whether any heartbeat was answered
fenced (`is_fenced`): a broker the controller fenced although it kept heartbeating.

Where the latency went: each answer's `Server-Timing` (controlplane.server.listener) names the
server's part: its body read and its turn in its broker's lane, the wait for a thread of the
heartbeat pool, the handler, and the return to the event loop; `outside` is the rest of the
latency (the event loop reading its headers, the network, the bench's own process). Each is
summarized as p50 / p99 / max, and `slowest_1pct` splits the slowest hundredth of the answers by
the same parts (their means). `bench_process_woke_late` is how late a thread of the bench's own
process woke from a 10 ms sleep (p50 / p99 / max): how much of `outside` may be the bench's own."""

from __future__ import annotations

import collections
import multiprocessing
import statistics
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import httpx

INTERVAL_S = 2.0
SHAPES = ("agent", "threads")

SERVER_PHASES = ("lane", "wait", "handler", "resume")
LATENESS_TICK_S = 0.01


def server_timing(header: str | None) -> dict[str, float] | None:
    """A `Server-Timing` header's durations by name (ms); None without every phase."""
    if not header:
        return None
    phases: dict[str, float] = {}
    for metric in header.split(","):
        name, _, params = metric.strip().partition(";")
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "dur":
                try:
                    phases[name] = float(value)
                except ValueError:
                    return None
    return phases if all(p in phases for p in SERVER_PHASES) else None


def _quantiles(values: list[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    if not ordered:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(ordered[int(len(ordered) * 0.99)], 1),
        "max_ms": round(ordered[-1], 1),
    }


def where_time_went(answers: list[tuple[float, dict[str, float]]]) -> dict[str, Any]:
    """(latency, server phases) per answer -> each part's quantiles and the slowest 1 %'s
    split."""
    parts = {name: [phases[name] for _, phases in answers] for name in SERVER_PHASES}
    outside = [latency - sum(phases.values()) for latency, phases in answers]
    slowest = sorted(answers, key=lambda answer: answer[0])[-max(1, len(answers) // 100) :]
    split = {
        name: round(statistics.fmean(phases[name] for _, phases in slowest), 1)
        for name in SERVER_PHASES
    }
    split["outside"] = round(
        statistics.fmean(latency - sum(phases.values()) for latency, phases in slowest), 1
    )
    return {
        "answers_timed": len(answers),
        **{name: _quantiles(values) for name, values in parts.items()},
        "outside": _quantiles(outside),
        "slowest_1pct": {
            "answers": len(slowest),
            "latency_mean_ms": round(statistics.fmean(a[0] for a in slowest), 1),
            "mean_ms": split,
        },
    }


class _Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answered: dict[int, float] = {}
        self.max_gap_s: dict[int, float] = {}
        self.latencies_ms: list[float] = []
        self.errors: collections.Counter[str] = collections.Counter()
        self.answered_fenced: set[int] = set()
        self.timed: list[tuple[float, dict[str, float]]] = []

    def beat(self, client: httpx.Client, broker_id: int, epoch: int) -> None:
        body = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**12}
        started = time.perf_counter()
        try:
            response = client.post("/internal/v1/broker-heartbeat", json=body)
        except httpx.HTTPError as error:
            with self.lock:
                self.errors[type(error).__name__] += 1
            return
        latency_ms = (time.perf_counter() - started) * 1000
        answer = response.json() if response.status_code == 200 else {}
        now = time.monotonic()
        with self.lock:
            if response.status_code != 200 or answer.get("error_code"):
                self.errors[f"HTTP {response.status_code} {answer.get('error', '')}"] += 1
                return
            self.latencies_ms.append(latency_ms)
            phases = server_timing(response.headers.get("server-timing"))
            if phases is not None:
                self.timed.append((latency_ms, phases))
            if answer.get("is_fenced"):
                self.answered_fenced.add(broker_id)
            previous = self.answered.get(broker_id)
            if previous is not None:
                gap = now - previous
                self.max_gap_s[broker_id] = max(self.max_gap_s.get(broker_id, 0.0), gap)
            self.answered[broker_id] = now

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_ms)
        gaps = self.max_gap_s.values()
        return {
            "answered": len(ordered),
            "latency_p50_ms": round(statistics.median(ordered), 1) if ordered else None,
            "latency_p99_ms": round(ordered[int(len(ordered) * 0.99)], 1) if ordered else None,
            "latency_max_ms": round(ordered[-1], 1) if ordered else None,
            "longest_gap_s": round(max(gaps), 2) if gaps else None,
            "brokers_answered_fenced": sorted(self.answered_fenced),
            "errors": dict(self.errors),
            "where_time_went": where_time_went(self.timed) if self.timed else None,
        }


class HeartbeatShape:
    """Start one shape's heartbeats for `epochs`; `stop()` answers what they saw."""

    def __init__(self, shape: str, base: str, token: str, epochs: dict[int, int]) -> None:
        if shape not in SHAPES:
            raise ValueError(f"heartbeat shape {shape!r}: one of {SHAPES}")
        self.shape = shape
        self.base, self.token, self.epochs = base, token, epochs
        self.record = _Record()
        self._stop = threading.Event()
        self._clients: list[httpx.Client] = []
        if shape == "agent":
            self._threads = [threading.Thread(target=self._agent, daemon=True)]
        else:
            self._threads = [
                threading.Thread(target=self._one, args=(b, e), daemon=True)
                for b, e in epochs.items()
            ]
        self._lateness_ms: list[float] = []
        self._threads.append(threading.Thread(target=self._sample_lateness, daemon=True))

    def _client(self) -> httpx.Client:
        client = httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        self._clients.append(client)
        return client

    def start(self) -> HeartbeatShape:
        for thread in self._threads:
            thread.start()
        return self

    def _agent(self) -> None:
        client = self._client()
        while True:
            started = time.monotonic()
            for broker_id, epoch in self.epochs.items():
                self.record.beat(client, broker_id, epoch)
            if self._stop.wait(max(0.0, INTERVAL_S - (time.monotonic() - started))):
                return

    def _one(self, broker_id: int, epoch: int) -> None:
        client = self._client()
        # Spread over the interval, as independent processes are.
        if self._stop.wait(INTERVAL_S * (broker_id % 20) / 20):
            return
        while True:
            started = time.monotonic()
            self.record.beat(client, broker_id, epoch)
            if self._stop.wait(max(0.0, INTERVAL_S - (time.monotonic() - started))):
                return

    def _sample_lateness(self) -> None:
        """How late this process wakes a thread (its GIL and its CPU): a heartbeat's latency
        includes as much of the bench's own delay."""
        while True:
            due = time.perf_counter() + LATENESS_TICK_S
            if self._stop.wait(LATENESS_TICK_S):
                return
            self._lateness_ms.append(max(0.0, time.perf_counter() - due) * 1000)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        for client in self._clients:
            client.close()
        return {
            "shape": self.shape,
            **self.record.summary(),
            "bench_process_woke_late": _quantiles(self._lateness_ms),
        }


def _shape_in_process(conn: Connection, shape: str, base: str, token: str, epochs: Any) -> None:
    running = HeartbeatShape(shape, base, token, epochs).start()
    conn.send("started")
    conn.recv()  # stop
    conn.send(running.stop())


class HeartbeatShapeProcess:
    """A shape run from a process of its own, as brokers are processes of their own: its
    figures are free of the bench's own work (the 100,000-partition request it builds, the
    controller's log it reads)."""

    def __init__(self, shape: str, base: str, token: str, epochs: dict[int, int]) -> None:
        if shape not in SHAPES:
            raise ValueError(f"heartbeat shape {shape!r}: one of {SHAPES}")
        context = multiprocessing.get_context("spawn")  # the bench's threads are not forked
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_shape_in_process,
            args=(child, shape, base, token, dict(epochs)),
            name=f"heartbeats-{shape}",
            daemon=True,
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def start(self) -> HeartbeatShapeProcess:
        self._process.start()
        if not self._conn.poll(120):
            self._process.terminate()
            raise RuntimeError("the heartbeat process did not start")
        self._conn.recv()
        return self

    def stop(self) -> dict[str, Any]:
        self._conn.send("stop")
        if not self._conn.poll(120):
            self._process.terminate()
            raise RuntimeError("the heartbeat process did not answer")
        summary: dict[str, Any] = self._conn.recv()
        self._process.join(timeout=10)
        return summary
