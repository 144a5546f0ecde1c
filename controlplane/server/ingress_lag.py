"""A listener process's lag, for the controller's fencing rule (controlplane.runtime.ingress):
how late its event loop woke and how long a broker's heartbeat waited before its handler ran,
the worst of the last session reported each second (`listener_lags`), from a thread (a store
that is down never blocks the loop).

Both listener processes report: each web worker for its internal listener (REST heartbeats), and
`serve_kafka` for its Kafka protocol listener (BrokerHeartbeat on the controller listener, from
stock Kafka brokers). A heartbeat that waited in either is the controller side's deafness, not
the broker's silence.

What is measured is the heartbeats' and registrations' wait only (`take_longest_wait`), never the
metadata fetch's nor the wait of AlterPartition, AlterReplicaState and Envelopes: many brokers
woken by one large commit queue their refetches, writes wait for the controller, and neither
queue is a broker's silence. Were they counted, every large commit would read as an overloaded
ingress and hold the fencing of brokers off."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Sequence
from typing import Protocol

HOUSEKEEPING_S = 1.0
# The node name of a serve_kafka process's report: the fencing rule names it as such.
KAFKA_LISTENER_NODE_PREFIX = "kafka@"


class WaitSource(Protocol):
    def take_longest_wait(self) -> float:
        """The longest a heartbeat waited before its handler ran since the last call (s)."""
        ...


def node_name(*, kafka_listener: bool = False) -> str:
    """This process's name in the reports: host:pid, `kafka@host:pid` for serve_kafka."""
    name = f"{socket.gethostname()}:{os.getpid()}"
    return KAFKA_LISTENER_NODE_PREFIX + name if kafka_listener else name


class IngressLagReporter:
    def __init__(self, sources: Sequence[WaitSource], node: str | None = None) -> None:
        from django.conf import settings

        from controlplane.runtime.ingress import LagWindow

        self.sources = list(sources)
        self.node = node or node_name()
        self.window = LagWindow(window_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS)
        self._reporting: asyncio.Future[None] | None = None

    def measure(self, woke_late_s: float) -> None:
        from controlplane.runtime.lease import now_ms

        now = now_ms()
        self.window.record("event loop", woke_late_s * 1000, now)
        for source in self.sources:
            self.window.record("thread pool", source.take_longest_wait() * 1000, now)
        if self._reporting is None or self._reporting.done():
            worst = self.window.worst(now)
            lag_ms, at_ms = (worst[1], worst[2]) if worst is not None else (0, now)
            self._reporting = asyncio.get_running_loop().run_in_executor(
                None, self._report, lag_ms, at_ms
            )

    def _report(self, lag_ms: int, at_ms: int) -> None:
        from controlplane.runtime.ingress import listener_lags

        # A store that is down: the controller hears nobody through it anyway.
        with contextlib.suppress(Exception):
            listener_lags().report(self.node, lag_ms=lag_ms, at_ms=at_ms)

    async def sleep_and_measure(self) -> None:
        """One housekeeping second: sleep it, and measure how late the loop woke."""
        loop = asyncio.get_running_loop()
        slept = loop.time()
        await asyncio.sleep(HOUSEKEEPING_S)
        self.measure(loop.time() - slept - HOUSEKEEPING_S)


async def report_until(reporter: IngressLagReporter, stop: asyncio.Event) -> None:
    """Measure and report every housekeeping second until `stop` is set (serve_kafka's)."""
    while not stop.is_set():
        await reporter.sleep_and_measure()
