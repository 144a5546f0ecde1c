"""The two ways brokers' heartbeats reach the controller while the fan-out runs:

- `agent`: one agent heartbeats for every broker in turn every 2 s, from a thread of its own
  with one connection (one process managing many brokers: the broker simulator's shape);
- `threads`: each broker heartbeats every 2 s from a thread and a connection of its own
  (separate broker processes).

Each records, per broker, the gaps between answered heartbeats (what the controller's session
sees), the answers' latencies and the errors, and says whether any heartbeat was answered
fenced (`is_fenced`): a broker the controller fenced although it kept heartbeating."""

from __future__ import annotations

import collections
import statistics
import threading
import time
from typing import Any

import httpx

INTERVAL_S = 2.0
SHAPES = ("agent", "threads")


class _Record:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answered: dict[int, float] = {}
        self.max_gap_s: dict[int, float] = {}
        self.latencies_ms: list[float] = []
        self.errors: collections.Counter[str] = collections.Counter()
        self.answered_fenced: set[int] = set()

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

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        for client in self._clients:
            client.close()
        return {"shape": self.shape, **self.record.summary()}
