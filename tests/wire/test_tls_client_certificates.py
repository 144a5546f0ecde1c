"""The TLS principal is the client's certificate (issue 34): on an SSL listener with
`ssl.client.auth=required` a connection is its certificate's subject, mapped by
`ssl.principal.mapping.rules` (default: the whole distinguished name), as Kafka's
DefaultKafkaPrincipalBuilder; ACLs name it; no certificate, no connection."""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.wire.rawclient import RawClient, encode_request
from tests.wire.test_security import describe_acls
from wire.runner import ThreadedListener
from wire.server import Limits, Listener, WireServer, ssl_context

pytestmark = pytest.mark.django_db(transaction=True)


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, str]:
    """A CA, a server certificate for localhost and a client certificate for alice, both
    signed by the CA."""
    files = {n: str(tmp_path / n) for n in ("ca.pem", "ca.key", "server.pem", "server.key")}
    files |= {n: str(tmp_path / n) for n in ("client.pem", "client.key", "san.cnf")}
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
            "-keyout", files["ca.key"], "-out", files["ca.pem"])  # fmt: skip
    Path(files["san.cnf"]).write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for who, subject in (("server", "/CN=localhost"), ("client", "/C=US/O=acme/CN=alice")):
        csr = str(tmp_path / f"{who}.csr")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                "-keyout", files[f"{who}.key"], "-out", csr)  # fmt: skip
        extra = ["-extfile", files["san.cnf"]] if who == "server" else []
        openssl("x509", "-req", "-in", csr, "-CA", files["ca.pem"], "-CAkey", files["ca.key"],
                "-CAcreateserial", "-days", "1", "-out", files[f"{who}.pem"], *extra)  # fmt: skip
    return files


def listening(pki: dict[str, str], rules: str) -> tuple[ThreadedListener, int]:
    context = ssl_context(pki["server.pem"], pki["server.key"], pki["ca.pem"], "required")
    server = WireServer(
        [Listener("SSL", "127.0.0.1", 0)],
        limits=Limits(authentication_timeout_s=5, idle_timeout_s=30, threads=2),
        ssl_context=context,
        principal_mapping_rules=rules,
    )
    runner = ThreadedListener(server)
    (bound,) = runner.start()
    return runner, bound.port


@pytest.fixture
def tls_client(pki: dict[str, str]) -> Iterator[Any]:
    def connect(port: int, *, certificate: bool = True) -> RawClient:
        context = ssl.create_default_context(cafile=pki["ca.pem"])
        if certificate:
            context.load_cert_chain(pki["client.pem"], pki["client.key"])
        client = RawClient.__new__(RawClient)
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        client.sock = context.wrap_socket(raw, server_hostname="localhost")
        client.correlation_id = 0
        return client

    yield connect


def answered_without_a_certificate(tls_client: Any, port: int) -> bool:
    try:
        with tls_client(port, certificate=False) as client:
            client.sock.sendall(encode_request(describe_acls()))
            return client.read_frame() is not None
    except (ssl.SSLError, OSError):
        return False


def grant_describe(api: Any, tokens: dict[str, str], principal: str) -> None:
    acl = {
        "resource_type": "CLUSTER",
        "resource_name": "kafka-cluster",
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": "DESCRIBE",
        "permission_type": "ALLOW",
    }
    status, answer = api.post("/api/v1/create-acls", {"creations": [acl]}, token=tokens["admin"])
    assert status == 200 and answer["results"][0]["error_code"] == 0, answer


@pytest.mark.parametrize(
    ("rules", "principal"),
    [("DEFAULT", "User:CN=alice,O=acme,C=US"), ("RULE:^CN=(.*?),.*$/$1/L,DEFAULT", "User:alice")],
)
def test_the_certificate_is_the_principal(
    pki: dict[str, str], tls_client: Any, api: Any, tokens: dict[str, str], rules: str,
    principal: str,
) -> None:  # fmt: skip
    runner, port = listening(pki, rules)
    try:
        with tls_client(port) as client:  # no ACL for it yet: not ANONYMOUS's answer either
            assert client.request(describe_acls()).error_code == (
                ErrorCode.cluster_authorization_failed
            )
        grant_describe(api, tokens, principal)
        with tls_client(port) as client:
            assert client.request(describe_acls()).error_code == ErrorCode.none
        # ssl.client.auth=required: no certificate, no connection (TLS 1.3 ends it after the
        # client's handshake: the request is never answered).
        assert not answered_without_a_certificate(tls_client, port)
    finally:
        runner.stop()
