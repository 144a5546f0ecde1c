"""Bytes from a peer that has proved nothing starve no one. Each case here is a finding of a
hostile tenant with raw frames on loopback: one ANONYMOUS connection announcing a 100 MiB
frame held the whole request pool, one pool served every listener (so the controller
listener's brokers waited behind client connections and were fenced), a connection waited for
memory without end, and an unauthenticated session outlived its deadline by sending
ApiVersions every few seconds."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from controlplane.principals import principal_create
from tests.wire.conftest import RunningListener, start_listener
from tests.wire.rawclient import RawClient, encode_request
from tests.wire.test_server import API_VERSIONS, authenticate, describe_acls, served
from wire import metrics
from wire.server import Limits

pytestmark = pytest.mark.django_db(transaction=True)

MAX_FRAME = 100 * 1024 * 1024 - 4096


def announce(host: str, port: int, size: int, body: bytes = b"") -> socket.socket:
    """A connection that sends a frame's size (and maybe part of it), then nothing."""
    sock = socket.create_connection((host, port))
    sock.sendall(struct.pack(">i", size) + body)
    return sock


def refused(listener: str, reason: str) -> float:
    return float(metrics.CONNECTIONS_REFUSED.labels(listener, reason)._value.get())


def wait_until(check: object, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def tight_listener(transactional_db: None) -> Iterator[RunningListener]:
    """Small pools and short deadlines, to see each bound act within a test."""
    runner, running = start_listener(
        Limits(
            authentication_timeout_s=1.0,
            idle_timeout_s=60,
            threads=2,
            controller_threads=2,
            queued_max_request_bytes=256 * 1024,
            controller_queued_max_request_bytes=256 * 1024,
            memory_wait_timeout_s=0.5,
            frame_timeout_s=1.5,
            max_connections_per_ip=8,
        )
    )
    try:
        yield running
    finally:
        runner.stop()


def test_an_announced_frame_takes_no_memory_until_its_bytes_arrive(
    wire_listener: RunningListener,
) -> None:
    memory = wire_listener.server.memory
    held = [announce(wire_listener.host, wire_listener.port, MAX_FRAME) for _ in range(28)]
    try:
        time.sleep(0.3)
        assert memory.used_bytes == 0
        with RawClient(wire_listener.host, wire_listener.port) as client:
            assert served(client)  # served at once beside them
        held[0].sendall(b"x" * 100_000)
        wait_until(lambda: memory.used_bytes == 100_000)  # the bytes that came, no more
    finally:
        for sock in held:
            sock.close()
    wait_until(lambda: memory.used_bytes == 0)


def test_a_full_client_pool_never_reaches_the_controller_listener(
    tight_listener: RunningListener,
) -> None:
    listener = tight_listener
    token = principal_create(name="fleet", broker=True)
    filler = [
        announce(listener.host, listener.port, 1024 * 1024, b"x" * (100 * 1024)) for _ in range(4)
    ]
    try:
        wait_until(lambda: listener.server.memory.used_bytes >= 200 * 1024)
        with RawClient(listener.host, listener.controller_port) as broker:
            started = time.monotonic()
            assert authenticate(broker, "fleet", token) == ErrorCode.none
            assert served(broker)
            assert time.monotonic() - started < 0.5  # never waited for the client pool
        controller_memory = listener.server.doors["controller"].memory
        wait_until(lambda: controller_memory.used_bytes == 0)  # its own, given back
        assert listener.server.memory.used_bytes >= 200 * 1024  # the client pool, still held
    finally:
        for sock in filler:
            sock.close()


def test_a_wait_for_memory_has_a_deadline_then_the_connection_closes(
    tight_listener: RunningListener,
) -> None:
    listener = tight_listener
    before = refused("PLAINTEXT", "memory_wait_timeout")
    filler = [
        announce(listener.host, listener.port, 1024 * 1024, b"x" * (128 * 1024)) for _ in range(2)
    ]
    try:
        wait_until(lambda: listener.server.memory.used_bytes == 256 * 1024)
        late = announce(listener.host, listener.port, 1024 * 1024, b"y" * 1024)
        late.settimeout(5)
        assert late.recv(1) == b""  # closed once its wait passed the deadline
        late.close()
        assert refused("PLAINTEXT", "memory_wait_timeout") >= before + 1
    finally:
        for sock in filler:
            sock.close()
    wait_until(lambda: listener.server.memory.used_bytes == 0)


def test_a_frame_must_arrive_within_its_deadline_and_its_bytes_come_back(
    tight_listener: RunningListener,
) -> None:
    listener = tight_listener
    trickle = announce(listener.host, listener.port, 200 * 1024, b"z" * (50 * 1024))
    trickle.settimeout(5)
    started = time.monotonic()
    wait_until(lambda: listener.server.memory.used_bytes == 50 * 1024)
    assert trickle.recv(1) == b""
    assert 1.0 < time.monotonic() - started < 4
    trickle.close()
    wait_until(lambda: listener.server.memory.used_bytes == 0)


def test_frames_before_authentication_are_charged_to_no_pool(
    tight_listener: RunningListener,
) -> None:
    listener = tight_listener
    unauthenticated = [
        announce(listener.host, port, 512 * 1024, b"u" * (200 * 1024))
        for port in (listener.sasl_port, listener.controller_port)
    ]
    try:
        time.sleep(0.3)
        for door in listener.server.doors.values():
            assert door.memory.used_bytes == 0
        too_large = announce(listener.host, listener.sasl_port, 512 * 1024 + 1)
        too_large.settimeout(5)
        assert too_large.recv(1) == b""  # over sasl.server.max.receive.size: closed unread
        too_large.close()
    finally:
        for sock in unauthenticated:
            sock.close()


def test_an_unauthenticated_session_has_one_deadline_whatever_it_sends(
    tight_listener: RunningListener,
) -> None:
    listener = tight_listener
    with RawClient(listener.host, listener.sasl_port) as client:
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 5:
            try:
                client.sock.sendall(encode_request(API_VERSIONS))
                if client.read_frame() is None:
                    closed = True
                    break
            except OSError:
                closed = True
                break
            time.sleep(0.3)  # well within the per-read timeout, again and again
        assert closed
        assert time.monotonic() - started < 2.5  # the session's 1 s, not one per read


def test_connections_are_counted_per_door(tight_listener: RunningListener) -> None:
    listener = tight_listener
    held = [RawClient(listener.host, listener.port) for _ in range(8)]
    try:
        for client in held:
            assert served(client)
        with RawClient(listener.host, listener.port) as extra:
            assert extra.read_frame() is None  # the client door is full for this address
        with RawClient(listener.host, listener.controller_port) as broker:
            assert served(broker)  # the controller door counts its own
    finally:
        for client in held:
            client.close()


def test_requests_are_answered_beside_a_thousand_maximal_announcements(
    wire_listener: RunningListener,
) -> None:
    """The goal's shape on one listener: 1,000 connections announce maximal frames on the
    client listeners; a broker's requests on the controller listener are answered as usual."""
    listener = wire_listener
    token = principal_create(name="fleet", broker=True)
    flood = [
        announce(listener.host, port, MAX_FRAME if port == listener.port else 512 * 1024)
        for port in (listener.port, listener.sasl_port)
        for _ in range(500)
    ]
    try:
        with RawClient(listener.host, listener.controller_port) as broker:
            assert authenticate(broker, "fleet", token) == ErrorCode.none
            for _ in range(20):
                started = time.monotonic()
                broker.send(describe_acls())
                assert broker.read_frame() is not None
                assert time.monotonic() - started < 1.0
        for door in listener.server.doors.values():
            wait_until(lambda door=door: door.memory.used_bytes == 0)
    finally:
        for sock in flood:
            sock.close()
