"""The listener's connection handling: framing, ApiVersions (KIP-511), SASL/PLAIN and its
pre-authentication state, limits, and bad input that closes one connection while the listener
keeps serving everyone else."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.describe_acls.v1 import request as describe_acls_v1
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2 import request as sasl_authenticate_v2
from kio.schema.sasl_handshake.v1 import request as sasl_handshake_v1

from controlplane.principals import principal_create
from tests.wire.conftest import RunningListener, start_listener
from tests.wire.rawclient import RawClient, encode_request
from wire import metrics
from wire.server import Limits, Listener

pytestmark = pytest.mark.django_db(transaction=True)

API_VERSIONS = api_versions_v3.ApiVersionsRequest(
    client_software_name="raw", client_software_version="1"
)


def describe_acls() -> describe_acls_v1.DescribeAclsRequest:
    return describe_acls_v1.DescribeAclsRequest(
        resource_type_filter=1,  # ANY
        resource_name_filter=None,
        pattern_type_filter=1,  # ANY
        principal_filter=None,
        host_filter=None,
        operation=1,  # ANY
        permission_type=1,  # ANY
    )


def served(client: RawClient) -> dict[int, tuple[int, int]]:
    response = client.request(API_VERSIONS)
    assert response.error_code == ErrorCode.none
    return {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys}


def still_serves(listener: RunningListener) -> bool:
    with RawClient(listener.host, listener.port) as client:
        return bool(served(client))


def authenticate(client: RawClient, user: str, password: str) -> ErrorCode:
    handshake = client.request(sasl_handshake_v1.SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == ErrorCode.none
    assert tuple(handshake.mechanisms) == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    answer = client.request(
        sasl_authenticate_v2.SaslAuthenticateRequest(
            auth_bytes=b"\x00" + user.encode() + b"\x00" + password.encode()
        )
    )
    return ErrorCode(answer.error_code)


def test_api_versions_lists_every_served_api(wire_listener: RunningListener) -> None:
    with RawClient(wire_listener.host, wire_listener.port) as client:
        versions = served(client)
    assert versions[18] == (0, 4)  # ApiVersions
    assert versions[17] == (0, 1)  # SaslHandshake: v0 (raw tokens after it) and v1, as Kafka
    assert versions[36][1] == 2  # SaslAuthenticate
    assert versions[29][1] >= 3  # DescribeAcls v3: kafka-python reads the broker version off it
    assert versions[60][0] >= 1  # DescribeCluster: kafka-python breaks on v0
    for key in (3, 19, 20, 32, 33, 37, 38, 39, 40, 41, 43, 44, 48, 49, 30, 31):
        assert key in versions, key
    assert 0 not in versions  # Produce: a control plane has no log to append to
    assert 58 not in versions  # Envelope: on controller listeners only


def test_a_newer_api_versions_is_answered_in_v0_with_the_list(
    wire_listener: RunningListener,
) -> None:
    with RawClient(wire_listener.host, wire_listener.port) as client:
        # ApiVersions v9: header v2 with a client id, an empty body the server never reads.
        client.sock.sendall(struct.pack(">ihhih", 10, 18, 9, 41, -1))
        frame = client.read_frame()
        assert frame is not None
        correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
        assert (correlation_id, error_code) == (41, int(ErrorCode.unsupported_version))
        assert count >= 15
        assert served(client)  # the client retries with a version we serve, on the same socket


def test_requests_are_answered_in_order(wire_listener: RunningListener) -> None:
    with RawClient(wire_listener.host, wire_listener.port) as client:
        frames = b"".join(encode_request(API_VERSIONS, correlation_id=i) for i in range(1, 9))
        client.sock.sendall(frames)
        answered = []
        for _ in range(8):
            frame = client.read_frame()
            assert frame is not None
            answered.append(struct.unpack_from(">i", frame)[0])
    assert answered == list(range(1, 9))


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">ihhih", 10, 999, 0, 7, -1),  # an unknown API key
        struct.pack(">ihhih", 10, 3, 99, 7, -1),  # Metadata v99
        struct.pack(">ihhih", 10, 0, 9, 7, -1),  # Produce: not served
        struct.pack(">i", -5),  # a negative size
        struct.pack(">i", 200 * 1024 * 1024),  # larger than the maximum frame
        struct.pack(">ihhi", 8, 3, 12, 7),  # a header cut before its client id
        struct.pack(">ihhihb", 11, 32, 4, 7, -1, 99),  # DescribeConfigs with a broken body
    ],
    ids=["unknown-key", "unknown-version", "produce", "negative", "oversized", "header", "body"],
)
def test_what_kafka_would_not_parse_closes_the_connection(
    wire_listener: RunningListener, frame: bytes
) -> None:
    with RawClient(wire_listener.host, wire_listener.port) as client:
        client.sock.sendall(frame)
        assert client.read_frame() is None
    assert still_serves(wire_listener)


def test_a_truncated_frame_and_a_silent_peer_are_dropped_without_harm(
    wire_listener: RunningListener,
) -> None:
    truncated = RawClient(wire_listener.host, wire_listener.port)
    truncated.sock.sendall(struct.pack(">i", 100) + b"\x00\x03")  # 100 announced, 2 sent
    truncated.close()
    silent = [RawClient(wire_listener.host, wire_listener.port) for _ in range(20)]
    try:
        assert still_serves(wire_listener)
    finally:
        for client in silent:
            client.close()


def test_sasl_listener_serves_only_api_versions_and_sasl_before_authentication(
    wire_listener: RunningListener,
) -> None:
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert served(client)  # allowed before authentication
        client.send(describe_acls())
        assert client.read_frame() is None  # anything else: closed, as Kafka closes it


def test_sasl_plain_with_a_principal_token(wire_listener: RunningListener) -> None:
    token = principal_create(name="wire-alice")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, "wire-alice", token) == ErrorCode.none
        answer = client.request(describe_acls())
        # Authenticated as User:wire-alice, who holds no DESCRIBE on the cluster.
        assert answer.error_code == ErrorCode.cluster_authorization_failed


@pytest.mark.parametrize(
    ("user", "password"),
    [("wire-alice", "not-her-token"), ("someone-else", None), ("", None)],
    ids=["wrong-token", "another-name", "empty-user"],
)
def test_a_failed_authentication_is_answered_then_closed(
    wire_listener: RunningListener, user: str, password: str | None
) -> None:
    token = principal_create(name="wire-alice")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, user, password or token) == (
            ErrorCode.sasl_authentication_failed
        )
        assert client.read_frame() is None


def test_garbage_after_sasl_handshake(wire_listener: RunningListener) -> None:
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        client.request(sasl_handshake_v1.SaslHandshakeRequest(mechanism="PLAIN"))
        answer = client.request(
            sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=b"\xff" * 5000)
        )
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert client.read_frame() is None
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        client.request(sasl_handshake_v1.SaslHandshakeRequest(mechanism="PLAIN"))
        client.sock.sendall(struct.pack(">i", 12) + b"\x00\x24\x00\x02garbage!")
        assert client.read_frame() is None
    assert still_serves(wire_listener)


def test_an_unknown_mechanism_and_sasl_on_a_plaintext_listener(
    wire_listener: RunningListener,
) -> None:
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        answer = client.request(sasl_handshake_v1.SaslHandshakeRequest(mechanism="SCRAM-SHA-1"))
        assert answer.error_code == ErrorCode.unsupported_sasl_mechanism
        assert tuple(answer.mechanisms) == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    with RawClient(wire_listener.host, wire_listener.port) as client:
        answer = client.request(sasl_handshake_v1.SaslHandshakeRequest(mechanism="PLAIN"))
        assert answer.error_code == ErrorCode.illegal_sasl_state


@pytest.fixture
def strict_listener(transactional_db: None) -> Iterator[RunningListener]:
    runner, running = start_listener(
        Limits(authentication_timeout_s=0.5, idle_timeout_s=1.0, max_connections_per_ip=5)
    )
    try:
        yield running
    finally:
        runner.stop()


def test_unauthenticated_and_idle_connections_are_closed(
    strict_listener: RunningListener,
) -> None:
    unauthenticated = RawClient(strict_listener.host, strict_listener.sasl_port)
    idle = RawClient(strict_listener.host, strict_listener.port)
    try:
        started = time.monotonic()
        assert unauthenticated.read_frame() is None  # closed after 0.5 s without SASL
        assert idle.read_frame() is None  # closed after 1 s idle
        assert time.monotonic() - started < 5
    finally:
        unauthenticated.close()
        idle.close()


def test_connections_per_ip_are_limited(strict_listener: RunningListener) -> None:
    held = [RawClient(strict_listener.host, strict_listener.port) for _ in range(5)]
    try:
        for client in held:  # each is accepted and served
            assert served(client)
        extra = RawClient(strict_listener.host, strict_listener.port)
        assert extra.read_frame() is None  # the sixth from this address is closed at once
        extra.close()
    finally:
        for client in held:
            client.close()
    deadline = time.monotonic() + 5
    while True:  # the count falls as the held ones close
        try:
            assert still_serves(strict_listener)
            break
        except (AssertionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_client_that_vanishes_mid_request_leaves_the_listener_serving(
    wire_listener: RunningListener,
) -> None:
    sock = socket.create_connection((wire_listener.host, wire_listener.port))
    sock.sendall(encode_request(API_VERSIONS) * 50)
    sock.close()  # gone before reading its 50 answers
    assert still_serves(wire_listener)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PLAINTEXT://127.0.0.1:9092", ("PLAINTEXT", "127.0.0.1", 9092)),
        ("SASL_PLAINTEXT://0.0.0.0:9093", ("SASL_PLAINTEXT", "0.0.0.0", 9093)),
        ("sasl_ssl://broker.example:9094", ("SASL_SSL", "broker.example", 9094)),
        ("SSL://[::1]:9095", ("SSL", "::1", 9095)),
        ("PLAINTEXT://:9092", ("PLAINTEXT", "0.0.0.0", 9092)),
    ],
)
def test_listener_parse(text: str, expected: tuple[str, str, int]) -> None:
    listener = Listener.parse(text)
    assert (listener.protocol, listener.host, listener.port) == expected


@pytest.mark.parametrize(
    "text", ["HTTP://h:1", "PLAINTEXT://h", "PLAINTEXT://h:99999", "h:9092", "PLAINTEXT://a:b:1"]
)
def test_listener_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        Listener.parse(text)


def test_an_unauthenticated_connection_announcing_a_large_frame_is_closed_at_once(
    wire_listener: RunningListener,
) -> None:
    """Issue 34: before (and during) SASL authentication a frame may be at most
    sasl.server.max.receive.size (512 KiB, CVE-2022-34917): a 100 MiB announcement is refused
    and the connection closed at once, without reading (or allocating) its body."""
    refused = metrics.CONNECTIONS_REFUSED.labels("SASL_PLAINTEXT", "sasl_receive_size")
    before = refused._value.get()
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        client.sock.sendall(struct.pack(">i", 100 * 1024 * 1024 - 1))
        assert client.read_frame() is None  # closed without waiting for a byte of the body
    assert refused._value.get() == before + 1  # refused for its size, not timed out
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert served(client)  # an ordinary frame before authentication is still served
    token = principal_create(name="wire-big")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert authenticate(client, "wire-big", token) == ErrorCode.none
        # Authenticated: the listener's own bound applies. An ApiVersions with 600 KiB of
        # trailing bytes (tolerated, as librdkafka's Metadata needs) is read and answered.
        frame = encode_request(API_VERSIONS, correlation_id=7)[4:] + b"\x00" * (600 * 1024)
        client.sock.sendall(struct.pack(">i", len(frame)) + frame)
        assert client.read_frame() is not None
    assert still_serves(wire_listener)
