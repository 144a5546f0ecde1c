"""How well the controller hears the brokers: its ingress's lag, measured, for the fencing rule.

Kafka's controller does not blame a broker for a heartbeat that waited in its own event queue
(KAFKA-15019). Ours has three places where a heartbeat or the decision about it can wait, and
each is measured where it happens:

* the controller's queue: how long an event waited between a web node sending it and the
  controller taking it (the request channel, or the embedded batcher);
* the controller's timer: how late a round of the timer ran (a paused or starved process);
* each listener process where brokers heartbeat (a web process's internal listener, and
  `serve_kafka`'s controller listener for stock Kafka brokers): how late its event loop woke
  and how long a heartbeat waited before its handler ran. The process keeps its
  worst lag of the last session and reports it with when it happened (`listener_lags()`: a
  Redis hash shared by every process, or this process's own dict when embedded), where the
  controller reads every process's report.

`ingress_overload` names the worst of them over `CP_FENCING_OVERLOAD_LAG_MS` within the last
session timeout, or None: only then is a lapse suspected to be the controller's own deafness.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from controlplane.redis_client import SharedStore

# Reports older than this are a process that is gone: the controller forgets them.
FORGET_REPORT_MS = 600_000
LISTENER_LAGS = "ingress-lag"  # the hash of reports, under the deployment's key prefix


class LagWindow:
    """The worst lag of each kind seen within the last `window_ms`, and when it was seen."""

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self._peaks: collections.deque[tuple[int, int, str]] = collections.deque()
        self._lock = threading.Lock()

    def record(self, what: str, lag_ms: float, at_ms: int) -> None:
        lag = max(0, int(lag_ms))
        with self._lock:
            # Keep only what can still be the worst: a smaller, older peak never will be.
            while self._peaks and self._peaks[-1][1] <= lag:
                self._peaks.pop()
            self._peaks.append((at_ms, lag, what))
            self._forget(at_ms)

    def worst(self, now_ms: int) -> tuple[str, int, int] | None:
        """(what, lag ms, when) of the worst lag within the window, or None when none."""
        with self._lock:
            self._forget(now_ms)
            if not self._peaks:
                return None
            at, lag, what = self._peaks[0]
            return what, lag, at

    def _forget(self, now_ms: int) -> None:
        while self._peaks and self._peaks[0][0] < now_ms - self.window_ms:
            self._peaks.popleft()


def ingress_overload(
    *,
    own: tuple[str, int, int] | None,
    listeners: Mapping[str, tuple[int, int]],
    now_ms: int,
    window_ms: int,
    bound_ms: int,
) -> str | None:
    """A sentence naming the worst lag over `bound_ms` within the last `window_ms`, or None.

    `own`: the controller's own worst (queue or timer) as `LagWindow.worst` gives it;
    `listeners`: each web process's reported worst internal-listener lag and its time.
    """
    seen: list[tuple[int, str, int]] = []
    if own is not None:
        what, lag, at = own
        seen.append((lag, what, at))
    for node, (lag, at) in listeners.items():
        if at >= now_ms - window_ms:
            seen.append((lag, _listener_of(node), at))
    over = [s for s in seen if s[0] > bound_ms]
    if not over:
        return None
    lag, what, at = max(over)
    return f"overloaded: {what} lagged {lag} ms (bound {bound_ms} ms) {max(0, now_ms - at)} ms ago"


def _listener_of(node: str) -> str:
    # serve_kafka reports as kafka@host:pid (controlplane.server.ingress_lag.node_name).
    if node.startswith("kafka@"):
        return f"the Kafka protocol listener of {node.removeprefix('kafka@')}"
    return f"the internal listener of {node}"


def stale_reports(listeners: Mapping[str, tuple[int, int]], *, now_ms: int) -> list[str]:
    """The web processes whose last report is so old that they are gone."""
    return [node for node, (_, at) in listeners.items() if at < now_ms - FORGET_REPORT_MS]


class ListenerLags(Protocol):
    """Each web process's worst internal-listener lag of late (ms) and when it was seen."""

    def report(self, node: str, *, lag_ms: int, at_ms: int) -> None: ...

    def all(self) -> dict[str, tuple[int, int]]: ...

    def forget(self, nodes: Iterable[str]) -> None: ...


class LocalListenerLags:
    def __init__(self) -> None:
        self._lags: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def report(self, node: str, *, lag_ms: int, at_ms: int) -> None:
        with self._lock:
            self._lags[node] = (lag_ms, at_ms)

    def all(self) -> dict[str, tuple[int, int]]:
        with self._lock:
            return dict(self._lags)

    def forget(self, nodes: Iterable[str]) -> None:
        with self._lock:
            for node in nodes:
                self._lags.pop(node, None)

    def clear(self) -> None:
        with self._lock:
            self._lags.clear()


class RedisListenerLags:
    def __init__(self, client: Any, *, key_prefix: str) -> None:
        self._redis = client
        self.key = key_prefix + LISTENER_LAGS

    def report(self, node: str, *, lag_ms: int, at_ms: int) -> None:
        self._redis.hset(self.key, node, f"{lag_ms}:{at_ms}")

    def all(self) -> dict[str, tuple[int, int]]:
        lags: dict[str, tuple[int, int]] = {}
        for node, value in self._redis.hgetall(self.key).items():
            lag, _, at = value.decode().partition(":")
            if lag.isdigit() and at.isdigit():
                lags[node.decode()] = (int(lag), int(at))
        return lags

    def forget(self, nodes: Iterable[str]) -> None:
        names = list(nodes)
        if names:
            self._redis.hdel(self.key, *names)


_local = LocalListenerLags()


def local_listener_lags() -> LocalListenerLags:
    return _local


# Where web processes report their listener's lag: Redis when there is one (every web node and
# the controller share it), else this process's own (embedded: both live here).
listener_lags = SharedStore[ListenerLags](
    _local, lambda client, prefix: RedisListenerLags(client, key_prefix=prefix)
)


class TimerLag:
    """The worst lateness of the fencing rounds since it was last read (`take`), and of all
    time, in ms: what the benchmarks report as the timer's lag."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.worst_ms = 0.0
        self.since_taken_ms = 0.0
        self.rounds = 0

    def record(self, late_ms: float) -> None:
        with self._lock:
            self.rounds += 1
            self.worst_ms = max(self.worst_ms, late_ms)
            self.since_taken_ms = max(self.since_taken_ms, late_ms)

    def take(self) -> float:
        """The worst lateness since the last `take`, and start over."""
        with self._lock:
            worst, self.since_taken_ms = self.since_taken_ms, 0.0
            return worst
