"""What is asked while the fan-out runs: a heartbeat and an admin read, fencing hold-offs."""

from __future__ import annotations

import collections
import re
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from bench.replica_state import (
    Brokers,
    bearer_client,
)
from devtools.stack import Stack


class Probe:
    """Asks one cheap question every `every_s` on its own connection while the fan-out runs:
    the backpressure check (heartbeats still answered, the admin API still answering)."""

    def __init__(self, name: str, ask: Callable[[], httpx.Response], every_s: float) -> None:
        self.name, self.ask, self.every_s = name, ask, every_s
        self.latencies_ms: list[float] = []
        self.failures: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"probe-{name}", daemon=True)

    def start(self) -> Probe:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            started = time.perf_counter()
            try:
                status = self.ask().status_code
            except httpx.HTTPError as error:
                self.failures[type(error).__name__] += 1
                continue
            if status != 200:
                self.failures[f"HTTP {status}"] += 1
            else:
                self.latencies_ms.append((time.perf_counter() - started) * 1000)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=60)
        ordered = sorted(self.latencies_ms)
        return {
            "answered": len(ordered),
            "failures": dict(self.failures),
            "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
            "p99_ms": round(ordered[int(len(ordered) * 0.99)], 1) if ordered else None,
            "max_ms": round(ordered[-1], 1) if ordered else None,
        }


def start_probes(http: Any, stack: Stack, brokers: Brokers) -> tuple[Probe, Probe]:
    """A heartbeat of broker 0 every 250 ms on the internal listener, and the public API's
    cluster description every 250 ms as the admin."""
    internal = bearer_client(http.internal, stack.tokens["broker"], timeout_s=30)
    public = bearer_client(http.base, stack.tokens["admin"], timeout_s=30)

    def heartbeat() -> httpx.Response:
        body = {
            "broker_id": 0,
            "broker_epoch": brokers.epochs[0],
            "current_metadata_offset": 10**12,
        }
        return internal.post("/internal/v1/broker-heartbeat", json=body)

    return (
        Probe("heartbeat", heartbeat, 0.25).start(),
        Probe("admin_api", lambda: public.get("/api/v1/cluster"), 0.25).start(),
    )


def timer_worst_lag_ms(stack: Stack) -> int:
    """The latest fencing round of the controller's log (each logged from 250 ms late on;
    0: none was that late)."""
    text = (stack.logs / "controller.log").read_text(errors="replace")
    return max(
        (int(m) for m in re.findall(r"the fencing round ran (\d+) ms late", text)), default=0
    )


def fencing_held_off(stack: Stack) -> int:
    """How often the controller held off fencing (it heard too few brokers): it must not,
    for its own overload is no broker's silence."""
    text = (stack.logs / "controller.log").read_text(errors="replace")
    return text.count("not fencing ")
