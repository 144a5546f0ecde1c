"""What the listener holds of requests (issue 34, point 6): a connection is muted while its one
request is handled (Kafka's SocketServer), the bytes of requests held are bounded across
connections (`queued.max.request.bytes`), and a request whose list is longer than its API
allows is refused before anything of it is decoded, so a hostile frame costs no more than its
bytes."""

from __future__ import annotations

import dataclasses
import socket
import struct
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.create_acls.v1 import request as create_acls_v1
from kio.schema.create_acls.v3 import request as create_acls_v3
from kio.schema.envelope.v0 import request as envelope_v0
from kio.schema.errors import ErrorCode

from audit.models import AuditEvent
from controlplane.models import Acl
from controlplane.principals import principal_create
from tests.wire.conftest import RunningListener, start_listener
from tests.wire.rawclient import RawClient, encode_request
from tests.wire.test_admin_apis import encode_principal
from tests.wire.test_server import authenticate, describe_acls
from wire import metrics
from wire.apis.base import MAX_ITEMS_PER_REQUEST, WIRE_APIS
from wire.protocol import leading_items, read_header
from wire.server import Limits

pytestmark = pytest.mark.django_db(transaction=True)

DESCRIBE_ACLS = 29


class HeldHandler:
    """DescribeAcls' own handler, held until released: to look at the listener while a request
    is being handled."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        api = WIRE_APIS[DESCRIBE_ACLS]
        original = api.handler

        def held(request: Any) -> Any:
            self.entered.release()
            assert self.release.wait(30)
            return original(request)

        monkeypatch.setitem(WIRE_APIS, DESCRIBE_ACLS, dataclasses.replace(api, handler=held))

    def wait_entered(self) -> None:
        assert self.entered.acquire(timeout=10)


def correlation(frame: bytes | None) -> int:
    assert frame is not None
    return int(struct.unpack_from(">i", frame)[0])


def test_a_connection_is_muted_while_its_request_is_handled(
    wire_listener: RunningListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldHandler(monkeypatch)
    memory = wire_listener.server.memory
    frames = [encode_request(describe_acls(), correlation_id=i) for i in (1, 2, 3)]
    with RawClient(wire_listener.host, wire_listener.port) as client:
        client.sock.sendall(b"".join(frames))
        held.wait_entered()
        time.sleep(0.2)  # had the listener read ahead, the other two frames would be held now
        assert memory.used_bytes == len(frames[0]) - 4  # the first request's bytes only
        held.release.set()
        assert [correlation(client.read_frame()) for _ in frames] == [1, 2, 3]
    deadline = time.monotonic() + 5
    while memory.used_bytes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert memory.used_bytes == 0  # every request's bytes given back once answered


@pytest.fixture
def small_pool_listener(transactional_db: None) -> Iterator[RunningListener]:
    """Request memory for about one DescribeAcls at a time."""
    size = len(encode_request(describe_acls())) - 4
    runner, running = start_listener(
        Limits(
            authentication_timeout_s=5,
            idle_timeout_s=60,
            threads=4,
            queued_max_request_bytes=size + 8,
        )
    )
    try:
        yield running
    finally:
        runner.stop()


def test_request_memory_is_bounded_across_connections(
    small_pool_listener: RunningListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldHandler(monkeypatch)
    listener = small_pool_listener
    waits = metrics.MEMORY_POOL_WAITS.labels("PLAINTEXT")
    before = waits._value.get()
    with (
        RawClient(listener.host, listener.port) as first,
        RawClient(listener.host, listener.port, timeout_s=0.5) as second,
    ):
        first.sock.sendall(encode_request(describe_acls(), correlation_id=1))
        held.wait_entered()
        second.sock.sendall(encode_request(describe_acls(), correlation_id=2))
        with pytest.raises(socket.timeout):  # muted: its bytes do not fit beside the first's
            second.read_frame()
        assert waits._value.get() == before + 1
        held.release.set()
        assert correlation(first.read_frame()) == 1
        second.sock.settimeout(10)
        held.wait_entered()  # the second request is read once the first's bytes are back
        assert correlation(second.read_frame()) == 2


def over_bound_create_acls(version: int, items: int) -> bytes:
    """A CreateAcls frame that announces `items` creations and carries one: the announcement
    alone must be enough to refuse it."""
    module = create_acls_v3 if version == 3 else create_acls_v1
    creation = module.AclCreation(
        resource_type=2,
        resource_name="t",
        resource_pattern_type=3,
        principal="User:bob",
        host="*",
        operation=3,
        permission_type=3,
    )
    frame = encode_request(module.CreateAclsRequest(creations=(creation,)))[4:]
    header = read_header(frame)
    offset = header.body_offset
    if version == 3:  # compact array: unsigned varint N+1
        value, announced = items + 1, bytearray()
        while value >= 0x80:
            announced.append((value & 0x7F) | 0x80)
            value >>= 7
        announced.append(value)
        patched = frame[:offset] + bytes(announced) + frame[offset + 1 :]
    else:
        patched = frame[:offset] + struct.pack(">i", items) + frame[offset + 4 :]
    assert leading_items(read_header(patched), patched) == items
    return struct.pack(">i", len(patched)) + patched


@pytest.mark.parametrize("version", [1, 3])
@pytest.mark.parametrize("items", [MAX_ITEMS_PER_REQUEST + 1, 2**31 - 2])
def test_a_request_over_its_item_bound_is_refused_unread(
    wire_listener: RunningListener, version: int, items: int
) -> None:
    token = principal_create(name="acl-writer", super_user=True)
    refused = metrics.CONNECTIONS_REFUSED.labels("SASL_PLAINTEXT", "too_many_items")
    before = refused._value.get()
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, "acl-writer", token) == ErrorCode.none
        client.sock.sendall(over_bound_create_acls(version, items))
        assert client.read_frame() is None
    assert refused._value.get() == before + 1
    assert not Acl.objects.exists()
    assert not AuditEvent.objects.filter(api="CreateAcls").exists()


def test_a_forwarded_request_over_its_item_bound_is_the_envelopes_invalid_request(
    wire_listener: RunningListener,
) -> None:
    token = principal_create(name="broker-9", broker=True)
    principal_create(name="acl-admin", super_user=True)
    inner = over_bound_create_acls(3, MAX_ITEMS_PER_REQUEST + 1)[4:]
    request = envelope_v0.EnvelopeRequest(
        request_data=inner,
        request_principal=encode_principal("User:acl-admin"),
        client_host_address=bytes([10, 0, 0, 1]),
    )
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "broker-9", token) == ErrorCode.none
        answer = client.request(request)
    assert answer.error_code == ErrorCode.invalid_request
    assert not Acl.objects.exists()


def test_a_hostile_frame_costs_about_its_bytes(wire_listener: RunningListener) -> None:
    """The report's 14.9 MB CreateAcls from ANONYMOUS cost +578 MiB (decoded, converted,
    validated, then refused). The same frame now costs what reading it costs: traced
    allocations while it is sent and refused stay within three times its size."""
    creation = create_acls_v3.AclCreation(
        resource_type=2,
        resource_name="t" * 60,
        resource_pattern_type=3,
        principal="User:eve",
        host="*",
        operation=3,
        permission_type=3,
    )
    frame = encode_request(create_acls_v3.CreateAclsRequest(creations=(creation,) * 150_000))
    assert len(frame) > 10_000_000
    tracemalloc.start()
    try:
        with RawClient(wire_listener.host, wire_listener.port) as client:
            client.sock.sendall(frame)
            assert client.read_frame() is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(frame) + 8 * 1024 * 1024, (peak, len(frame))
    assert not Acl.objects.exists()
