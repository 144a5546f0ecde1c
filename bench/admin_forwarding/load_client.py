"""The lean load client: asyncio over raw sockets, HTTP/1.1 keep-alive, closed loop."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.admin_forwarding.common import RECYCLE_AFTER, latency_summary, log
from bench.admin_forwarding.ways import Way


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
            last = phase.acknowledged  # a phase runs in rounds: count this round's writes only
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
