"""The fault campaign's admin writers: threads sending IncrementalAlterConfigs to the web nodes'
public listeners, each write with a request id of its own, retried with the same id until
acknowledged or given up, and when each was acknowledged (what the campaign checks against the
metadata log and measures recovery by)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable

from devtools.stack import Http


@dataclasses.dataclass
class Write:
    request_id: str
    acknowledged_at: float | None = None


class AdminWriters:
    """Threads sending IncrementalAlterConfigs, each write with a request id of its own, retried
    with the same id (on the other web node) until acknowledged or `give_up_s` passed."""

    def __init__(
        self,
        nodes: Callable[[], list[Http]],
        token: str,
        *,
        topic: str,
        threads: int = 3,
        give_up_s: float = 60.0,
    ) -> None:
        self.nodes = nodes
        self.token = token
        self.topic = topic
        self.threads = threads
        self.give_up_s = give_up_s
        self.writes: list[Write] = []
        self.statuses: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._workers: list[threading.Thread] = []

    def start(self) -> None:
        for index in range(self.threads):
            worker = threading.Thread(target=self._run, args=(index,), daemon=True)
            worker.start()
            self._workers.append(worker)

    def stop(self) -> None:
        self._stop.set()
        self._go.set()
        for worker in self._workers:
            worker.join(timeout=self.give_up_s + 30)

    def pause(self) -> None:
        """No new write starts; returns once the ones in flight are answered (or given up)."""
        self._go.clear()
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=self.give_up_s + 40)

    def resume(self) -> None:
        self._go.set()

    def ack_times(self) -> list[float]:
        return sorted(w.acknowledged_at or 0.0 for w in self.acknowledged())

    def acknowledged(self) -> list[Write]:
        with self._lock:
            return [w for w in self.writes if w.acknowledged_at is not None]

    def first_acknowledged_after(self, moment: float) -> float | None:
        times = [
            w.acknowledged_at for w in self.acknowledged() if (w.acknowledged_at or 0) > moment
        ]
        return min(times, default=None)  # type: ignore[type-var]

    def _run(self, index: int) -> None:
        sequence = 0
        while not self._stop.is_set():
            self._go.wait()
            sequence += 1
            write = Write(f"campaign-{index}-{sequence}")
            with self._lock:
                self.writes.append(write)
                self._in_flight += 1
            try:
                self._send(write, f"{index}{sequence:07d}", sequence)
            finally:
                with self._idle:
                    self._in_flight -= 1
                    self._idle.notify_all()
            time.sleep(0.02)

    def _send(self, write: Write, value: str, attempt_seed: int) -> None:
        body = {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": self.topic,
                    "configs": [
                        {"name": "retention.ms", "config_operation": "SET", "value": value}
                    ],
                }
            ]
        }
        deadline = time.monotonic() + self.give_up_s
        attempt = attempt_seed
        while time.monotonic() < deadline:
            nodes = self.nodes()
            node = nodes[attempt % len(nodes)]
            attempt += 1
            try:
                status, answer = node.post(
                    "/api/v1/incremental-alter-configs",
                    body,
                    self.token,
                    headers={"X-Request-ID": write.request_id},
                    timeout=35,
                )
            except (OSError, ValueError) as error:  # refused, reset, timed out, half an answer
                self._count(f"connection: {type(error).__name__}")
                time.sleep(0.2)
                continue
            self._count(str(status))
            code = answer.get("responses", [{}])[0].get("error_code") if status == 200 else None
            if status == 200 and code == 0:
                write.acknowledged_at = time.monotonic()
                return
            time.sleep(0.2 if status in (429, 503, 504) else 0.5)

    def _count(self, what: str) -> None:
        with self._lock:
            self.statuses[what] += 1
