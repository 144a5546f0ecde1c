"""Every client library connects (issue 34): Debian's kcat, built on Debian's librdkafka 2.0.2,
authenticates with SASL/PLAIN (it needs SaslHandshake v0 advertised, as Kafka advertises 0-1)
and lists the cluster's metadata as an operator would; a raw SaslHandshake v0 exchange (the
token in a raw frame, an empty raw frame back) authenticates too."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.sasl_handshake.v0 import request as sasl_handshake_v0

from controlplane.principals import principal_create
from tests.conftest import REQUIRE_SERVICES
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_server import describe_acls, served

pytestmark = pytest.mark.django_db(transaction=True)


def kcat() -> str:
    found = shutil.which("kcat")
    if found:
        return found
    message = "Debian's kcat is missing (bash scripts/install-kcat.sh)"
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} and CP_REQUIRE_SERVICES=1")
    pytest.skip(message)


def test_kcat_lists_the_cluster_over_sasl_plain(
    wire_listener: RunningListener,
    register: Callable[..., int],
    tokens: dict[str, str],
    api: object,
) -> None:
    for broker in range(3):
        register(broker, unfence=True)
    status, _ = api.post(  # type: ignore[attr-defined]
        "/api/v1/create-topics",
        {"topics": [{"name": "kcat-orders", "num_partitions": 2, "replication_factor": 3}]},
        token=tokens["admin"],
    )
    assert status == 200
    listed = subprocess.run(
        [
            kcat(),
            "-L",
            "-b",
            wire_listener.sasl_bootstrap,
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            "sasl.mechanisms=PLAIN",
            "-X",
            "sasl.username=admin",
            "-X",
            f"sasl.password={tokens['admin']}",
            "-m",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert "3 brokers:" in listed.stdout
    assert 'topic "kcat-orders" with 2 partitions:' in listed.stdout
    assert "SASL Handshake not supported" not in listed.stderr


def test_sasl_handshake_v0_then_a_raw_token(wire_listener: RunningListener) -> None:
    token = principal_create(name="raw-v0")
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        assert served(client)[17] == (0, 1)  # SaslHandshake: v0 and v1, as Kafka
        answer = client.request(sasl_handshake_v0.SaslHandshakeRequest(mechanism="PLAIN"))
        assert answer.error_code == ErrorCode.none
        raw = b"\x00raw-v0\x00" + token.encode()
        client.sock.sendall(struct.pack(">i", len(raw)) + raw)
        assert client.read_frame() == b""  # success: an empty raw frame
        # Authenticated as User:raw-v0 (no DESCRIBE on the cluster): served, and refused.
        assert client.request(describe_acls()).error_code == ErrorCode.cluster_authorization_failed
    with RawClient(wire_listener.host, wire_listener.sasl_port) as client:
        client.request(sasl_handshake_v0.SaslHandshakeRequest(mechanism="PLAIN"))
        raw = b"\x00raw-v0\x00not-the-token"
        client.sock.sendall(struct.pack(">i", len(raw)) + raw)
        assert client.read_frame() is None  # a failure closes the connection
