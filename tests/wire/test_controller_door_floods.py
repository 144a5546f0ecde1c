"""One peer's flood never starves the others on the controller door: a broker's heartbeats are
in its lane one at a time (the others of the same broker, from any number of connections, wait
on the event loop holding no thread) and past its rate are applied and answered with
throttle_time_ms, their connection muted for it, as Kafka's request quota does; a principal and
address past their cap of parked Raft Fetches get what there is at once. No timing: a request
that waited where it must not would not be answered while the test holds the others, and its
read would time out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from controlplane.runtime.lease import cluster_get_or_create, cluster_read
from controlplane.runtime.notifier import notifier
from devtools.stack import wait_for
from tests.api.test_internal_listener_floods import HeldHeartbeats
from tests.wire.conftest import RunningListener, start_listener
from tests.wire.test_broker_lifecycle import heartbeat, registration
from tests.wire.test_controller_door_heartbeats import (
    BROKER,
    answered_heartbeat,
    brokers,
    unfenced_broker,
    voter_set_written,
)
from tests.wire.test_raft_fetch import fetch
from wire import metrics
from wire.listeners import CONTROLLER
from wire.server import Limits

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 2  # the heartbeat pool's
FLOOD = 3 * THREADS  # the flooding broker's connections, each with a heartbeat in flight
PARKED_CAP = 2
# A burst of 3 (the other broker's heartbeats fit in it) and a slow refill: the flood's first
# 3 go unthrottled, the rest are throttled.
RATE, BURST = 0.1, 3.0


@pytest.fixture
def listener(transactional_db: None) -> Iterator[RunningListener]:
    limits = Limits(
        authentication_timeout_s=5,
        idle_timeout_s=60,
        controller_threads=THREADS,
        heartbeat_threads=THREADS,
        heartbeat_rate=RATE,
        heartbeat_burst=BURST,
        max_long_polls_per_peer=PARKED_CAP,
    )
    runner, running = start_listener(limits)
    try:
        yield running
    finally:
        runner.stop()


def counted(counter: Any) -> float:
    return float(counter.labels("CONTROLLER")._value.get())


def test_a_broker_flooding_heartbeats_takes_one_thread_and_is_throttled(
    listener: RunningListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    with brokers(listener, FLOOD + 1) as (lifeline, *flooders):
        flooder, other = unfenced_broker(lifeline, 1), unfenced_broker(lifeline, 2)
        throttled_before = counted(metrics.HEARTBEATS_THROTTLED)
        held = HeldHeartbeats(monkeypatch, held=1)
        beat = heartbeat(1, flooder, cluster_read().last_offset)
        sent = [client.send(beat) for client in flooders]
        lanes = listener.server.doors[CONTROLLER].heartbeat_lanes
        wait_for(lambda: lanes.waiting((f"User:{BROKER}", 1)) == FLOOD, 10, "a full lane")

        # One of the flood is in the controller, the others wait on the loop: broker 2's
        # heartbeats and a registration take the pool's other threads.
        answered_heartbeat(lifeline, 2, other)
        registered = lifeline.request(registration(3, cluster_get_or_create().cluster_id))
        assert registered.error_code == ErrorCode.none
        assert held.entered == 1  # one heartbeat of broker 1 at a time

        held.release.set()
        answers = [
            client.read_response(beat, correlation_id)
            for client, correlation_id in zip(flooders, sent, strict=True)
        ]
    # Every one applied (Kafka answers a throttled request in full), the later ones throttled.
    assert held.entered == FLOOD
    assert all((a.error_code, a.is_fenced) == (ErrorCode.none, False) for a in answers)
    throttled = [a for a in answers if a.throttle_time.total_seconds() > 0]
    assert 0 < len(throttled) < FLOOD
    assert all(a.throttle_time.total_seconds() <= 1 for a in throttled)  # one quota window
    assert counted(metrics.HEARTBEATS_THROTTLED) - throttled_before == len(throttled)


def test_a_throttled_connection_is_muted_then_served(listener: RunningListener) -> None:
    """After a throttled answer the connection is read again once its throttle time passed:
    its next heartbeat is answered (no close, nothing lost)."""
    with brokers(listener, 1) as (client,):
        epoch = unfenced_broker(client, 1)
        answers = [client.request(heartbeat(1, epoch, cluster_read().last_offset))]
        answers += [client.request(heartbeat(1, epoch, cluster_read().last_offset))]
        answers += [client.request(heartbeat(1, epoch, cluster_read().last_offset))]
    assert all(a.error_code == ErrorCode.none for a in answers)
    assert answers[-1].throttle_time.total_seconds() > 0  # past the burst of 3


def test_raft_fetches_past_the_cap_are_answered_at_once(listener: RunningListener) -> None:
    with brokers(listener, PARKED_CAP + 2) as (lifeline, extra, *parked):
        unfenced_broker(lifeline, 1)
        voter_set_written(extra)
        cluster = cluster_read()
        end, leader_epoch = cluster.last_offset + 1, cluster.controller_epoch
        long_poll = fetch(end, leader_epoch, leader_epoch, max_wait_ms=60_000)
        sent = [client.send(long_poll) for client in parked]
        wait_for(lambda: notifier.parked == PARKED_CAP, 10, "the cap of fetches parked")
        at_once_before = counted(metrics.LONG_POLLS_ANSWERED_AT_ONCE)

        # One more from the same principal and address: answered now, with no records (parked,
        # it would wait 60 s and its read time out).
        answer = extra.request(long_poll).responses[0].partitions[0]
        assert (answer.error_code, bytes(answer.records or b"")) == (ErrorCode.none, b"")
        assert answer.high_watermark == end
        assert counted(metrics.LONG_POLLS_ANSWERED_AT_ONCE) - at_once_before == 1
        assert notifier.parked == PARKED_CAP

        registered = lifeline.request(registration(2, cluster.cluster_id))
        assert registered.error_code == ErrorCode.none
        for client, correlation_id in zip(parked, sent, strict=True):
            woken = client.read_response(long_poll, correlation_id).responses[0].partitions[0]
            assert bytes(woken.records)  # the registration's record
