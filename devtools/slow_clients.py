"""The slow-client attack (slow and half-open connections), and the probe that measures what
others see meanwhile.

`SlowClients` holds `count` connections to one address that never finish a request: each sends
a request line and one header, then another header line every `interval_s` (the probe that froze
gunicorn's gthread worker and fenced every broker), and a share of them send nothing at all
(half-open). A connection the server closes is opened again at once, so `count` are held for as
long as the attack runs. Loopback addresses only (tests and benchmarks on this machine).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any

REQUEST_START = b"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\n"


@dataclasses.dataclass
class _Held:
    sock: socket.socket
    opened: float
    silent: bool


class SlowClients:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        count: int = 50,
        interval_s: float = 5.0,
        silent_share: float = 0.2,
    ) -> None:
        if not host.startswith("127.") and host != "localhost":
            raise ValueError("slow clients attack loopback addresses only")
        self.address = (host, port)
        self.count = count
        self.interval_s = interval_s
        self.silent = round(count * silent_share)
        self.opened = 0
        self.closed_by_server = 0
        self.answered_408 = 0
        self.longest_held_s = 0.0
        self._held: list[_Held] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)

    def __enter__(self) -> SlowClients:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for index in range(self.count):
            self._open(silent=index < self.silent)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for held in self._held:
            with contextlib.suppress(OSError):
                held.sock.close()

    @property
    def held(self) -> int:
        return len(self._held)

    def _open(self, *, silent: bool) -> None:
        sock = socket.create_connection(self.address, timeout=5)
        if not silent:
            sock.sendall(REQUEST_START)
        sock.setblocking(False)
        self._held.append(_Held(sock, time.monotonic(), silent))
        self.opened += 1

    def _run(self) -> None:
        next_line = time.monotonic() + self.interval_s
        while not self._stop.wait(0.05):
            self._reopen_closed()
            if time.monotonic() >= next_line:
                next_line += self.interval_s
                for held in self._held:
                    if not held.silent:
                        with contextlib.suppress(OSError):
                            held.sock.sendall(b"X-Slow: 1\r\n")

    def _reopen_closed(self) -> None:
        for held in list(self._held):
            try:
                data = held.sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 408"):
                self.answered_408 += 1
            # The server answered (408) or closed it: either way it let go; hold another one.
            self.closed_by_server += 1
            self.longest_held_s = max(self.longest_held_s, time.monotonic() - held.opened)
            with contextlib.suppress(OSError):
                held.sock.close()
            self._held.remove(held)
            if not self._stop.is_set():
                with contextlib.suppress(OSError):
                    self._open(silent=held.silent)

    def summary(self) -> dict[str, Any]:
        return {
            "connections_held": self.count,
            "silent_connections": self.silent,
            "header_line_every_s": self.interval_s,
            "connections_opened": self.opened,
            "closed_by_the_server": self.closed_by_server,
            "answered_408": self.answered_408,
            "longest_held_s": round(self.longest_held_s, 1),
        }


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(pct / 100 * len(ordered)) - 1))]


def probe(url: str, token: str, *, seconds: float, every_s: float = 0.1) -> dict[str, Any]:
    """GET `url` every `every_s` for `seconds` (a new connection each time, as a client that
    just arrived), with the latency of each answer: what everyone else sees during an attack."""
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    errors = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                answer.read()
                status = answer.status
        except urllib.error.HTTPError as error:
            status = error.code
        except OSError:
            errors += 1
            status = 0
        latencies.append((time.perf_counter() - started) * 1000)
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        time.sleep(max(0.0, every_s - latencies[-1] / 1000))
    return {
        "requests": len(latencies),
        "errors": errors,
        "statuses": statuses,
        "p50_ms": round(percentile(latencies, 50), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "max_ms": round(max(latencies, default=math.nan), 2),
    }
