"""A rolling upgrade of stock Kafka brokers under this control plane, the most common operation
on a Kafka cluster, with clients running throughout: an idempotent `acks=all` producer and a
consumer group read and write the topic while each broker in turn stops (SIGTERM: a controlled
shutdown), starts again as the new release on the same data dirs, and is back in every ISR
before the next goes. Shared by tests/kafka/test_rolling_upgrade.py, which asserts that no
acknowledged message is lost and that the group never stalls past its session, and
bench.rolling_upgrade, which writes the figures.

The figures (`RollFigures`): the producer's longest stall (the longest time without an
acknowledgement while it kept sending), the consumer group's longest stall (the longest time
without a new message read while the producer was being acknowledged) and its largest lag
(acknowledged but not yet read: in messages, sampled, and in time, from acknowledgement to
read)."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from devtools.kafka_clients import Consuming, Producing
from stock_kafka.broker import KafkaBroker

SAMPLE_EVERY_S = 0.5


@dataclasses.dataclass
class RollFigures:
    restarts: list[dict[str, Any]]  # per broker: its id and how long it took to be back
    acknowledged: int
    read: int
    lost: int  # acknowledged, never read
    producer_errors: int
    producer_longest_stall_s: float
    consumer_longest_stall_s: float
    consumer_max_lag_messages: int
    consumer_max_lag_s: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class LagSampler:
    """Acknowledged minus read, every half second, the largest kept."""

    def __init__(self, producing: Producing, consuming: Consuming) -> None:
        self.producing, self.consuming = producing, consuming
        self.max_lag = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lag", daemon=True)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            acked = self.producing.acknowledged
            lag = len(acked - self.consuming.read().keys())
            self.max_lag = max(self.max_lag, lag)


def longest_gap(times: Sequence[float]) -> float:
    ordered = sorted(times)
    return max((b - a for a, b in itertools.pairwise(ordered)), default=0.0)


def consumer_stall(ack_times: Sequence[float], reads: dict[str, float]) -> float:
    """The longest time the group read nothing new while the producer was being acknowledged
    (it sends every few milliseconds: something was always waiting to be read)."""
    if not ack_times:
        return 0.0
    first, last = min(ack_times), max(ack_times)
    during = [at for at in reads.values() if first <= at <= last]
    return longest_gap([first, *during, last])


def restart_as(
    broker: KafkaBroker, version: str, back: Callable[[KafkaBroker], bool], timeout_s: float
) -> float:
    """Stop `broker` (controlled shutdown), start it as `version` on the same data dirs, and
    wait until `back(broker)`; the seconds from the signal until then."""
    started = time.monotonic()
    broker.stop(timeout=60)
    broker.version = version
    broker.start()
    deadline = started + timeout_s
    while not back(broker):
        if not broker.running:
            raise RuntimeError(f"broker {broker.node_id} exited:\n{broker.log_tail(40)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"broker {broker.node_id} not back as {version} in {timeout_s}s")
        time.sleep(0.5)
    return time.monotonic() - started


def roll(
    brokers: Sequence[KafkaBroker],
    version: str,
    *,
    topic: str,
    group: str,
    back: Callable[[KafkaBroker], bool],
    settle_s: float = 5.0,
    restart_timeout_s: float = 240.0,
    read_timeout_s: float = 120.0,
    session_timeout_ms: int = 10_000,
    between: Callable[[KafkaBroker], None] | None = None,
) -> tuple[RollFigures, Producing, Consuming]:
    """Restart every broker as `version`, one at a time, clients running; then stop producing
    and read until every acknowledged message is read (or `read_timeout_s`)."""
    bootstrap = ",".join(b.bootstrap for b in brokers)
    producing = Producing(bootstrap, "roll", topic, client_id="rolling-producer")
    consuming = Consuming(
        bootstrap, topic, group, session_timeout_ms=session_timeout_ms, client_id="rolling-group"
    )
    restarts = []
    with consuming, LagSampler(producing, consuming) as lag:
        producing.start()
        try:
            time.sleep(settle_s)
            for broker in brokers:
                took = restart_as(broker, version, back, restart_timeout_s)
                restarts.append({"broker_id": broker.node_id, "back_s": round(took, 2)})
                if between is not None:
                    between(broker)
                time.sleep(settle_s)
        finally:
            producing.stop()
        acked = producing.acknowledged
        deadline = time.monotonic() + read_timeout_s
        while not acked <= consuming.read().keys() and time.monotonic() < deadline:
            time.sleep(0.5)
    ack_times = producing.ack_times()
    reads = consuming.read()
    acks = producing.acknowledged_at()
    lags = [reads[key] - at for key, at in acks.items() if key in reads]
    figures = RollFigures(
        restarts=restarts,
        acknowledged=len(acked),
        read=len(acked & reads.keys()),
        lost=len(acked - reads.keys()),
        producer_errors=len(producing.errors),
        producer_longest_stall_s=round(longest_gap(ack_times), 3),
        consumer_longest_stall_s=round(consumer_stall(ack_times, reads), 3),
        consumer_max_lag_messages=lag.max_lag,
        consumer_max_lag_s=round(max(lags, default=0.0), 3),
    )
    return figures, producing, consuming
