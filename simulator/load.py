"""The benchmark mode: back-to-back heartbeats from the registered brokers, with latencies.

The bodies are built once up front, with the follower's offset at the start, so they ask for no
state change: each is the server's heartbeat fast path. The brokers' own heartbeat loops keep
running beside the load.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
from collections import Counter

import httpx

from simulator.client import HEARTBEAT_PATH, ControllerClient, dumps, error_name
from simulator.state import BrokerState


@dataclasses.dataclass(frozen=True, slots=True)
class LoadResult:
    """What `run_heartbeat_load` measured. `latencies_ms` holds one sample per answered request
    (any HTTP status); `requests - len(latencies_ms)` requests failed in transport."""

    duration_s: float
    concurrency: int
    brokers: int
    requests: int
    ok: int
    errors: dict[str, int]
    latencies_ms: list[float]

    def percentile(self, p: float) -> float:
        """Nearest-rank percentile of the latencies (p in 0..100); NaN without samples."""
        if not self.latencies_ms:
            return math.nan
        ordered = sorted(self.latencies_ms)
        rank = max(1, math.ceil(p / 100 * len(ordered)))
        return ordered[min(rank, len(ordered)) - 1]


def load_senders(states: list[BrokerState]) -> list[BrokerState]:
    """The brokers that may send load: registered, neither silent nor shutting down."""
    return [s for s in states if s.registered and not s.silent and not s.want_shut_down]


def heartbeat_bodies(states: list[BrokerState], offset: int) -> list[bytes]:
    """One heartbeat per broker, caught up at `offset` and asking for nothing to change."""
    return [
        dumps(
            {
                "broker_id": s.broker_id,
                "broker_epoch": s.epoch,
                "current_metadata_offset": max(offset, s.epoch or 0),
                "want_fence": False,
                "want_shut_down": False,
                "offline_log_dirs": list(s.offline_log_dirs),
            }
        )
        for s in states
    ]


class HeartbeatLoad:
    """`concurrency` senders cycling over `bodies` for `duration_s`."""

    def __init__(
        self, client: ControllerClient, bodies: list[bytes], concurrency: int, duration_s: float
    ) -> None:
        self.client = client
        self.bodies = bodies
        self.concurrency = concurrency
        self.duration_s = duration_s
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.sent = 0
        self.ok = 0
        self._deadline = 0.0

    async def run(self) -> LoadResult:
        started = time.perf_counter()
        self._deadline = started + self.duration_s
        await asyncio.gather(*(self._sender(i) for i in range(self.concurrency)))
        return LoadResult(
            duration_s=time.perf_counter() - started,
            concurrency=self.concurrency,
            brokers=len(self.bodies),
            requests=self.sent,
            ok=self.ok,
            errors=dict(self.errors),
            latencies_ms=self.latencies,
        )

    async def _sender(self, first: int) -> None:
        """Sender `first` takes bodies first, first + concurrency, ... (round robin)."""
        clock = time.perf_counter
        index = first
        count = len(self.bodies)
        while clock() < self._deadline:
            body = self.bodies[index % count]
            index += self.concurrency
            self.sent += 1
            t0 = clock()
            try:
                response = await self.client.post_idempotent(HEARTBEAT_PATH, body)
            except httpx.TransportError as error:
                self.errors[type(error).__name__] += 1
                await asyncio.sleep(0.01)  # do not spin on a refused connection
                continue
            self.latencies.append((clock() - t0) * 1000)
            self._count(response)

    def _count(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            self.errors[f"HTTP {response.status_code}"] += 1
            return
        code = json.loads(response.content).get("error_code")
        if code == 0:
            self.ok += 1
        else:
            self.errors[error_name(code)] += 1
