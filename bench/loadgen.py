"""A lean HTTP/1.1 keep-alive load generator (asyncio, raw sockets).

The client shares the machine's two cores with the server, so it must cost as little as possible:
requests are pre-built bytes, responses are parsed only as far as status and Content-Length.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import statistics
import sys
import time
from collections.abc import Sequence


@dataclasses.dataclass
class LoadResult:
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]
    statuses: dict[int, int]

    def record(self, status: int, latency_ms: float) -> None:
        self.latencies_ms.append(latency_ms)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.requests += 1
        if status >= 400:
            self.errors += 1

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    def summary(self) -> dict[str, float | int | dict[int, int]]:
        return {
            "requests": self.requests,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "requests_per_second": round(self.rate, 1),
            "p50_ms": round(self.percentile(50), 3),
            "p90_ms": round(self.percentile(90), 3),
            "p99_ms": round(self.percentile(99), 3),
            "mean_ms": round(statistics.fmean(self.latencies_ms), 3) if self.latencies_ms else 0,
            "statuses": self.statuses,
        }


RECYCLE_AFTER = 100


def build_request(method: str, host: str, path: str, token: str, body: bytes = b"") -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}",
        f"Authorization: Bearer {token}",
        "Connection: keep-alive",
    ]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
            break
    if length:
        await reader.readexactly(length)
    return status


async def _worker(
    host: str,
    port: int,
    requests: itertools.cycle[bytes],
    stop_at: float,
    result: LoadResult,
    progress: list[int],
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    sent_on_connection = 0
    try:
        while time.perf_counter() < stop_at:
            if sent_on_connection == RECYCLE_AFTER:
                # Keep-alive connections stick to the worker that accepted them; a few long-lived
                # ones can pile onto one worker. Reconnecting now and then spreads the load over
                # the workers as many real clients do.
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                sent_on_connection = 0
            sent_on_connection += 1
            started = time.perf_counter()
            writer.write(next(requests))
            try:
                status = await _read_response(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                result.errors += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            result.record(status, (time.perf_counter() - started) * 1000)
            progress[0] += 1
    finally:
        writer.close()


async def _run(
    host: str, port: int, requests: Sequence[bytes], concurrency: int, seconds: float, label: str
) -> LoadResult:
    result = LoadResult(0, 0, 0.0, [], {})
    progress = [0]
    cycle = itertools.cycle(requests)
    started = time.perf_counter()
    stop_at = started + seconds

    async def report() -> None:
        last = 0
        while time.perf_counter() < stop_at:
            await asyncio.sleep(1)
            done = progress[0]
            print(f"  {label}: {done - last:>6} req/s  ({done} total)", file=sys.stderr)
            last = done

    reporter = asyncio.create_task(report())
    await asyncio.gather(
        *(_worker(host, port, cycle, stop_at, result, progress) for _ in range(concurrency))
    )
    reporter.cancel()
    result.seconds = time.perf_counter() - started
    return result


def run_load(
    host: str, port: int, requests: Sequence[bytes], *, concurrency: int, seconds: float, label: str
) -> LoadResult:
    return asyncio.run(_run(host, port, requests, concurrency, seconds, label))


async def _paced_worker(
    host: str,
    port: int,
    requests: itertools.cycle[bytes],
    start: float,
    interval: float,
    offset: float,
    stop_at: float,
    result: LoadResult,
    progress: list[int],
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    due = start + offset
    try:
        while due < stop_at:
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(next(requests))
            status = await _read_response(reader)
            # From the time the request was due, not sent: a late send is latency too.
            result.record(status, (time.perf_counter() - due) * 1000)
            progress[0] += 1
            due += interval
    finally:
        writer.close()


async def _run_paced(
    host: str,
    port: int,
    requests: Sequence[bytes],
    rate: float,
    connections: int,
    seconds: float,
    label: str,
) -> LoadResult:
    result = LoadResult(0, 0, 0.0, [], {})
    progress = [0]
    cycle = itertools.cycle(requests)
    interval = connections / rate
    start = time.perf_counter() + 0.2
    stop_at = start + seconds
    await asyncio.gather(
        *(
            _paced_worker(
                host,
                port,
                cycle,
                start,
                interval,
                i * interval / connections,
                stop_at,
                result,
                progress,
            )
            for i in range(connections)
        )
    )
    result.seconds = time.perf_counter() - start
    print(f"  {label}: {result.rate:.0f} req/s offered {rate:.0f}", file=sys.stderr)
    return result


def run_paced(
    host: str,
    port: int,
    requests: Sequence[bytes],
    *,
    rate: float,
    connections: int,
    seconds: float,
    label: str,
) -> LoadResult:
    """Open loop: `rate` requests per second spread evenly over `connections`, as brokers
    heartbeating on their interval do, whatever the latency of earlier requests."""
    return asyncio.run(_run_paced(host, port, requests, rate, connections, seconds, label))


def run_in_subprocess(
    kind: str, host: str, port: int, requests: Sequence[bytes], **options: float | int | str
) -> LoadResult:
    """Run a load in a process of its own, so the caller's threads (the broker simulator)
    share no interpreter lock with the client whose latencies are measured."""
    import base64
    import json
    import subprocess

    spec = {
        "kind": kind,
        "host": host,
        "port": port,
        "options": options,
        "requests": [base64.b64encode(r).decode() for r in requests],
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.loadgen"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        check=True,
    )
    sys.stderr.write(done.stderr)
    data = json.loads(done.stdout)
    statuses = {int(k): v for k, v in data["statuses"].items()}
    return LoadResult(
        data["requests"], data["errors"], data["seconds"], data["latencies_ms"], statuses
    )


def _main() -> None:
    import base64
    import json

    spec = json.loads(sys.stdin.read())
    requests = [base64.b64decode(r) for r in spec["requests"]]
    run = run_load if spec["kind"] == "closed" else run_paced
    result = run(spec["host"], spec["port"], requests, **spec["options"])
    json.dump(dataclasses.asdict(result), sys.stdout)


if __name__ == "__main__":
    _main()
