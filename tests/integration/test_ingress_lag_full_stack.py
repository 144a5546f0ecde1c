"""The listeners' lag is measured on the real servers and reaches the controller's fencing rule: a
web process (its internal listener) and serve_kafka (its Kafka protocol listener, where stock
brokers heartbeat) each report their worst lag of the last session to Redis every second; one
that was paused reports how long it was, and the controller reading it calls itself overloaded
instead of blaming the brokers."""

from __future__ import annotations

import os
import signal
import socket
import time

import pytest
import redis

from controlplane.runtime.ingress import LISTENER_LAGS, RedisListenerLags, ingress_overload
from devtools.real_brokers import start_controller_listener
from devtools.stack import Stack, redis_url, wait_for

pytestmark = pytest.mark.integration


def test_a_paused_web_worker_reports_its_lag_and_the_rule_reads_it(stack: Stack) -> None:
    stack.start_web("web", workers=1, threads=4)
    client = redis.Redis.from_url(redis_url())
    lags = RedisListenerLags(client, key_prefix=stack.key_prefix)
    try:
        reports = wait_for(lambda: lags.all() or None, 30, "the web worker's first report")
        (node, (lag_ms, _)) = next(iter(reports.items()))
        assert lag_ms < 1000, reports  # an idle server keeps up
        assert client.exists(stack.key_prefix + LISTENER_LAGS)
        the_pause_is_reported(lags, node, int(node.rsplit(":", 1)[1]), "the internal listener")
    finally:
        client.close()


def test_a_paused_kafka_protocol_listener_reports_its_lag_and_the_rule_reads_it(
    stack: Stack,
) -> None:
    start_controller_listener(stack, "serve_kafka")
    pid = stack.procs["serve_kafka"].pid
    client = redis.Redis.from_url(redis_url())
    lags = RedisListenerLags(client, key_prefix=stack.key_prefix)
    try:
        node = f"kafka@{socket.gethostname()}:{pid}"
        reports = wait_for(lambda: node in lags.all() or None, 30, "serve_kafka's first report")
        assert lags.all()[node][0] < 1000, reports  # an idle listener keeps up
        the_pause_is_reported(lags, node, pid, "the Kafka protocol listener")
    finally:
        client.close()


def the_pause_is_reported(lags: RedisListenerLags, node: str, pid: int, named: str) -> None:
    """The process stops for 3.5 s: its 1 s housekeeping sleep wakes at least 2.5 s late, it
    reports so, and the fencing rule reading the reports names it overloaded."""
    os.kill(pid, signal.SIGSTOP)
    time.sleep(3.5)
    os.kill(pid, signal.SIGCONT)

    def reported_the_pause() -> tuple[int, int] | None:
        lag = lags.all().get(node)
        return lag if lag is not None and lag[0] >= 2000 else None

    lag_ms, _ = wait_for(reported_the_pause, 30, "a report of the pause")
    assert lag_ms < 10_000
    now = int(time.time() * 1000)
    overload = ingress_overload(
        own=None, listeners=lags.all(), now_ms=now, window_ms=3000, bound_ms=2000
    )
    assert overload is not None and f"{named} of {node.removeprefix('kafka@')}" in overload
