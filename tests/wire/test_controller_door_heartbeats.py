"""A broker's lifeline on the controller door: BrokerHeartbeat and BrokerRegistration are answered
while more Raft Fetches than the door has handler threads are parked (they hold no thread), and
while every handler thread is taken by fetches waiting for the encoding of a commit (the
heartbeats have a pool of their own, wire.doors). No timing: a heartbeat that queued behind the
fetches would never be answered while they are held, and its read would time out."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from controlplane.controller.kraft import decode_records
from controlplane.principals import principal_create
from controlplane.runtime.kraft_log import kraft_log
from controlplane.runtime.lease import cluster_get_or_create, cluster_read
from controlplane.runtime.notifier import notifier
from devtools.stack import wait_for
from tests.wire.conftest import RunningListener, start_listener
from tests.wire.rawclient import RawClient
from tests.wire.test_broker_lifecycle import heartbeat, registration
from tests.wire.test_raft_fetch import fetch, register
from tests.wire.test_server import authenticate
from wire.listeners import CONTROLLER
from wire.server import Limits

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 2  # the controller door's handler threads
FETCHERS = THREADS + 2  # more fetches than threads
BROKER = "kafka-broker"


@pytest.fixture
def listener(transactional_db: None) -> Iterator[RunningListener]:
    limits = Limits(authentication_timeout_s=5, idle_timeout_s=60, controller_threads=THREADS)
    runner, running = start_listener(limits)
    try:
        yield running
    finally:
        runner.stop()


@contextlib.contextmanager
def brokers(listener: RunningListener, count: int) -> Iterator[list[RawClient]]:
    """`count` authenticated connections to the controller listener (authentication runs on
    the door's pool: every connection is opened before the pool is taken)."""
    token = principal_create(name=BROKER, broker=True)
    with contextlib.ExitStack() as stack:
        clients = []
        for _ in range(count):
            client = stack.enter_context(
                RawClient(listener.host, listener.controller_port, timeout_s=20)
            )
            assert authenticate(client, BROKER, token) == ErrorCode.none
            clients.append(client)
        yield clients


def unfenced_broker(client: RawClient, broker_id: int) -> int:
    """Register `broker_id` over the wire and heartbeat it unfenced: its epoch."""
    answer = client.request(registration(broker_id, cluster_get_or_create().cluster_id))
    assert answer.error_code == ErrorCode.none
    epoch = int(answer.broker_epoch)
    beat = client.request(heartbeat(broker_id, epoch, cluster_read().last_offset))
    assert (beat.error_code, beat.is_fenced) == (ErrorCode.none, False)
    return epoch


def voter_set_written(client: RawClient) -> None:
    """A first Fetch served: the listener's first one writes the voter set naming it (KIP-853,
    kraft.version and VotersRecord), so the log's end read after it stays the end."""
    leader_epoch = cluster_read().controller_epoch
    assert client.request(fetch(0, 0, leader_epoch)).error_code == ErrorCode.none


def answered_heartbeat(client: RawClient, broker_id: int, epoch: int) -> None:
    beat = client.request(heartbeat(broker_id, epoch, cluster_read().last_offset))
    assert (beat.error_code, beat.is_fenced, beat.is_caught_up) == (ErrorCode.none, False, True)


def test_heartbeats_are_answered_while_more_fetches_than_threads_are_parked(
    listener: RunningListener,
) -> None:
    with brokers(listener, FETCHERS + 1) as (lifeline, *fetchers):
        epoch = unfenced_broker(lifeline, 1)
        voter_set_written(fetchers[0])
        cluster = cluster_read()
        end, leader_epoch = cluster.last_offset + 1, cluster.controller_epoch
        long_poll = fetch(end, leader_epoch, leader_epoch, max_wait_ms=60_000)
        sent = [client.send(long_poll) for client in fetchers]
        wait_for(lambda: notifier.parked == FETCHERS, 10, "every fetch to be parked")

        for _ in range(3):
            answered_heartbeat(lifeline, 1, epoch)
        assert notifier.parked == FETCHERS  # still parked: the heartbeats wrote nothing
        registered = lifeline.request(registration(2, cluster.cluster_id))
        assert registered.error_code == ErrorCode.none

        # The registration's commit woke every parked fetch, which answers its record.
        for client, correlation_id in zip(fetchers, sent, strict=True):
            woken = client.read_response(long_poll, correlation_id).responses[0].partitions[0]
            names = [record.name for _, record in decode_records(bytes(woken.records))]
            assert names == ["RegisterBrokerRecord"]


@contextlib.contextmanager
def an_encoding_in_progress() -> Iterator[None]:
    """What fetches woken by a large commit meet: one of them encodes it into Kafka's batches
    while the others wait for that encoding (each holding a handler thread). Held here until
    the block ends, so the wait lasts as long as the test needs."""
    cluster = cluster_read()
    lock = kraft_log(cluster.log_start_offset, cluster.cluster_id)._lock
    with lock:
        yield


def test_heartbeats_and_registrations_are_answered_while_fetches_take_every_thread(
    listener: RunningListener,
) -> None:
    with brokers(listener, FETCHERS + 1) as (lifeline, *fetchers):
        epoch = unfenced_broker(lifeline, 1)
        voter_set_written(fetchers[0])
        cluster = cluster_read()
        end, leader_epoch = cluster.last_offset + 1, cluster.controller_epoch
        register(2)  # a commit the fetchers have not read yet: it must be encoded first
        catch_up = fetch(end, leader_epoch, leader_epoch, max_wait_ms=60_000)
        pool: Any = listener.server.doors[CONTROLLER].pool
        with an_encoding_in_progress():
            sent = [client.send(catch_up) for client in fetchers]
            # Every thread holds a fetch waiting for the encoding, and more fetches queue.
            wait_for(lambda: pool._work_queue.qsize() == FETCHERS - THREADS, 10, "a full pool")

            for _ in range(3):
                answered_heartbeat(lifeline, 1, epoch)
            registered = lifeline.request(registration(3, cluster.cluster_id))
            assert registered.error_code == ErrorCode.none
            assert pool._work_queue.qsize() == FETCHERS - THREADS  # the fetches still wait

        for client, correlation_id in zip(fetchers, sent, strict=True):
            read = client.read_response(catch_up, correlation_id).responses[0].partitions[0]
            names = [record.name for _, record in decode_records(bytes(read.records))]
            assert names[0] == "RegisterBrokerRecord"


def test_a_heartbeat_that_waited_for_its_pool_is_the_listeners_lag_and_fetches_are_not(
    listener: RunningListener,
) -> None:
    """What serve_kafka reports to the fencing rule (controlplane.server.ingress_lag): how long
    a heartbeat waited before its handler ran. Fetches queued behind an encoding are not a
    broker's silence and are not counted."""
    server = listener.server
    heartbeats: Any = server.doors[CONTROLLER].heartbeats
    with brokers(listener, FETCHERS + 1) as (lifeline, *fetchers):
        epoch = unfenced_broker(lifeline, 1)
        voter_set_written(fetchers[0])
        cluster = cluster_read()
        end, leader_epoch = cluster.last_offset + 1, cluster.controller_epoch
        register(2)
        catch_up = fetch(end, leader_epoch, leader_epoch, max_wait_ms=60_000)
        pool: Any = server.doors[CONTROLLER].pool
        server.take_longest_wait()
        with an_encoding_in_progress():
            sent = [client.send(catch_up) for client in fetchers]
            wait_for(lambda: pool._work_queue.qsize() == FETCHERS - THREADS, 10, "a full pool")
            assert server.take_longest_wait() == 0.0  # fetches wait: no heartbeat does
        for client, correlation_id in zip(fetchers, sent, strict=True):
            client.read_response(catch_up, correlation_id)

        # Every thread of the heartbeats' pool taken: the next heartbeat waits for one.
        release = threading.Event()
        taken = [heartbeats.submit(release.wait, 30) for _ in range(heartbeats._max_workers)]
        beat = heartbeat(1, epoch, cluster_read().last_offset)
        correlation_id = lifeline.send(beat)
        time.sleep(0.5)
        release.set()
        answer = lifeline.read_response(beat, correlation_id)
        assert answer.error_code == ErrorCode.none
        assert all(future.result(5) for future in taken)
        # Its wait counts from its frame read (just after the send), through the held pool.
        assert server.take_longest_wait() >= 0.4
        assert server.take_longest_wait() == 0.0  # taken: the next report starts afresh
