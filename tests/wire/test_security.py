"""The listener's security: a delegation token authenticates over SASL/PLAIN and may not
create tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), TLS on SSL listeners (stock client
included), and its request metrics on /metrics."""

from __future__ import annotations

import base64
import datetime
import socket
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_delegation_token.v3 import request as create_token_v3
from kio.schema.describe_acls.v3 import request as describe_acls_v3
from kio.schema.errors import ErrorCode
from kio.schema.expire_delegation_token.v2 import request as expire_token_v2
from kio.schema.renew_delegation_token.v2 import request as renew_token_v2

from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient, encode_request
from tests.wire.test_admin_apis import set_secret
from tests.wire.test_server import API_VERSIONS, authenticate
from wire.runner import ThreadedListener
from wire.server import Limits, Listener, WireServer, ssl_context

pytestmark = pytest.mark.django_db(transaction=True)


def create_token_request() -> Any:
    return create_token_v3.CreateDelegationTokenRequest(
        owner_principal_type=None,
        owner_principal_name=None,
        renewers=(),
        max_lifetime=datetime.timedelta(milliseconds=-1),
    )


def describe_acls() -> Any:
    return describe_acls_v3.DescribeAclsRequest(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )


def test_a_delegation_token_authenticates_but_creates_no_token(
    wire_listener: RunningListener, api: Any, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    with RawClient(wire_listener.host, wire_listener.sasl_port) as admin:
        assert authenticate(admin, "admin", tokens["admin"]) == ErrorCode.none
        created = admin.request(create_token_request())
        assert created.error_code == ErrorCode.none
    token_id = created.token_id

    hmac_text = base64.b64encode(bytes(created.hmac)).decode()
    with RawClient(wire_listener.host, wire_listener.sasl_port) as delegated:
        assert authenticate(delegated, token_id, hmac_text) == ErrorCode.none
        # The token's owner: a super user, who may describe ACLs...
        assert delegated.request(describe_acls()).error_code == ErrorCode.none
        # ...but never a token by a token (Kafka: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
        refused = delegated.request(create_token_request())
        assert refused.error_code == ErrorCode.delegation_token_request_not_allowed
    with RawClient(wire_listener.host, wire_listener.sasl_port) as forged:
        assert authenticate(forged, token_id, base64.b64encode(b"x" * 64).decode()) == (
            ErrorCode.sasl_authentication_failed
        )


def test_no_delegation_token_requests_on_plaintext(
    wire_listener: RunningListener, api: Any, tokens: dict[str, str], settings: Any
) -> None:
    """Issue 34: Kafka's allowTokenRequests, before anything else: on a PLAINTEXT listener
    (nobody is authenticated there) Create, Renew and Expire DelegationToken answer
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, however the ACLs read; no token is made."""
    set_secret(settings)
    status, _ = api.post(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "USER",
                    "resource_name": "*",
                    "pattern_type": "LITERAL",
                    "principal": "User:ANONYMOUS",
                    "host": "*",
                    "operation": "ALL",
                    "permission_type": "ALLOW",
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200
    with RawClient(wire_listener.host, wire_listener.port) as anonymous:
        refused = anonymous.request(create_token_request())
        assert refused.error_code == ErrorCode.delegation_token_request_not_allowed
        assert (refused.token_id, bytes(refused.hmac)) == ("", b"")
        renew = renew_token_v2.RenewDelegationTokenRequest(
            hmac=b"x" * 32, renew_period=datetime.timedelta(hours=1)
        )
        assert anonymous.request(renew).error_code == (
            ErrorCode.delegation_token_request_not_allowed
        )
        expire = expire_token_v2.ExpireDelegationTokenRequest(
            hmac=b"x" * 32, expiry_time_period=datetime.timedelta(milliseconds=-1)
        )
        assert anonymous.request(expire).error_code == (
            ErrorCode.delegation_token_request_not_allowed
        )
    status, described = api.post(
        "/api/v1/describe-delegation-token", {"owners": None}, token=tokens["admin"]
    )
    assert status == 200 and described["tokens"] == []
    # The same principal's request on SASL (authenticated) is served.
    with RawClient(wire_listener.host, wire_listener.sasl_port) as admin:
        assert authenticate(admin, "admin", tokens["admin"]) == ErrorCode.none
        assert admin.request(create_token_request()).error_code == ErrorCode.none


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[str, str]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


@pytest.fixture
def tls_listener(
    transactional_db: None, certificate: tuple[str, str]
) -> Iterator[tuple[int, int, str]]:
    cert, key = certificate
    server = WireServer(
        [Listener("SSL", "127.0.0.1", 0), Listener("SASL_SSL", "127.0.0.1", 0)],
        limits=Limits(authentication_timeout_s=5, threads=2),
        ssl_context=ssl_context(cert, key),
    )
    runner = ThreadedListener(server)
    ssl_bound, sasl_ssl_bound = runner.start()
    try:
        yield ssl_bound.port, sasl_ssl_bound.port, cert
    finally:
        runner.stop()


def test_ssl_listener_speaks_tls_only(tls_listener: tuple[int, int, str]) -> None:
    port, _, cert = tls_listener
    context = ssl.create_default_context(cafile=cert)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(encode_request(API_VERSIONS))
        assert len(tls.recv(4)) == 4  # a framed answer, over TLS
    with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
        plain.sendall(encode_request(API_VERSIONS))  # not a TLS hello: refused, closed
        assert plain.recv(4096)[:1] in (b"", b"\x15")  # EOF or a TLS alert, never an answer


def test_kafka_python_over_sasl_ssl(
    tls_listener: tuple[int, int, str], register: Callable[..., int], tokens: dict[str, str]
) -> None:
    from kafka import KafkaAdminClient

    _, port, cert = tls_listener
    register(0, unfence=True)
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{port}",
        security_protocol="SASL_SSL",
        ssl_cafile=cert,
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password=tokens["admin"],
        request_timeout_ms=15000,
    )
    try:
        assert admin.describe_cluster()["brokers"][0]["broker_id"] == 0
    finally:
        admin.close()


def test_request_metrics_join_metrics(wire_listener: RunningListener, client: Any) -> None:
    with RawClient(wire_listener.host, wire_listener.port) as raw:
        raw.request(API_VERSIONS)
        raw.request(describe_acls())  # anonymous: CLUSTER_AUTHORIZATION_FAILED
    text = client.get("/metrics").content.decode()
    assert 'kafka_network_requestmetrics_requests_total{request="ApiVersions",version="3"}' in text
    assert (
        'kafka_network_requestmetrics_errors_total{error="CLUSTER_AUTHORIZATION_FAILED",'
        'request="DescribeAcls"}' in text
    )
    assert 'kafka_network_requestmetrics_totaltimems_count{request="DescribeAcls"}' in text
    assert "kafka_server_socketservermetrics_connection_count" in text
