"""Benchmark: a SCRAM login on the control plane's own Kafka listener against a PLAIN one.

The real stack: PostgreSQL, Redis, gunicorn, one `run_controller` and one `serve_kafka`
(SASL_PLAINTEXT). SCRAM users are set through the REST API (AlterUserScramCredentials, as
Kafka's admin client sends it) at 4096 iterations (Kafka's minimum) and at 8192. Then, the ways
taking turns in blocks (so whatever else runs on the machine hits them alike), each a whole
login on a new connection, timed from connect to the last SASL answer:

- PLAIN: SaslHandshake, one SaslAuthenticate (a principal's name and token);
- SCRAM-SHA-256 and SCRAM-SHA-512 at 4096 and 8192 iterations: SaslHandshake, then
  SaslAuthenticate twice (client-first, client-final with its proof), checking the server's
  signature.

The client's own Hi() (PBKDF2 over the password, which a real client computes for each login)
is done once per user before timing: the figures are the listener's share (the credential read,
the proof's check, three or two round trips), and the client's Hi() is reported on its own.

    make bench-scram        # or: .venv/bin/python -m bench.scram_login [--help]
Writes bench/results/scram_login.json and prints it; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import secrets
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kio.index import load_response_schema
from kio.schema.sasl_authenticate.v2 import request as sasl_authenticate_v2
from kio.schema.sasl_handshake.v1 import request as sasl_handshake_v1
from kio.serial import entity_reader, entity_writer

from bench.replica_state import bearer_client
from bench.verify import fail_unless_clean, verify_stack
from bench.wire_protocol import start_listener, summary
from controlplane.controller.scram.formatter import (
    client_proof,
    hmac_of,
    salted_password,
    server_key,
)
from devtools.stack import BENCH_SETTINGS, running_stack

RESULTS = Path(__file__).resolve().parent / "results"
SIZE = struct.Struct(">i")
PASSWORD = "bench-scram-password"
ITERATIONS = (4096, 8192)
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def log(message: str) -> None:
    print(f"[bench-scram] {message}", file=sys.stderr, flush=True)


class Connection:
    """One Kafka connection speaking SaslHandshake v1 and SaslAuthenticate v2, nothing else."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0

    def request(self, body: Any) -> Any:
        self.correlation_id += 1
        header_class = body.__header_schema__
        header = header_class(
            request_api_key=body.__api_key__,
            request_api_version=body.__version__,
            correlation_id=self.correlation_id,
            client_id="bench-scram",
        )
        buffer = io.BytesIO()
        entity_writer(header_class)(buffer, header)
        entity_writer(type(body))(buffer, body)
        data = buffer.getvalue()
        self.sock.sendall(SIZE.pack(len(data)) + data)
        (size,) = SIZE.unpack(self._exactly(4))
        frame = self._exactly(size)
        response_class = load_response_schema(body.__api_key__, body.__version__)
        offset = 4 + (1 if response_class.__flexible__ else 0)
        return entity_reader(response_class)(frame, offset)[0]

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise SystemExit("the listener closed the connection")
            data += chunk
        return data

    def handshake(self, mechanism: str) -> None:
        answer = self.request(sasl_handshake_v1.SaslHandshakeRequest(mechanism=mechanism))
        assert int(answer.error_code) == 0, answer

    def authenticate(self, message: bytes) -> bytes:
        answer = self.request(sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=message))
        assert int(answer.error_code) == 0, answer.error_message
        return bytes(answer.auth_bytes)

    def close(self) -> None:
        self.sock.close()


def alternate(ways: dict[str, Callable[[int], None]], rounds: int, block: int) -> dict[str, Any]:
    """Each way `block` times per round, the ways taking turns, so load hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for round_index in range(rounds):
        for name, run in ways.items():
            for i in range(block):
                started = time.perf_counter()
                run(round_index * block + i)
                samples[name].append(time.perf_counter() - started)
        log(f"round {round_index + 1}/{rounds}")
    return samples


def plain_login(port: int, token: str) -> Callable[[int], None]:
    def login(_: int) -> None:
        connection = Connection(port)
        try:
            connection.handshake("PLAIN")
            connection.authenticate(b"\x00admin\x00" + token.encode())
        finally:
            connection.close()

    return login


def scram_login(port: int, mechanism: str, user: str, salted: bytes) -> Callable[[int], None]:
    """A SCRAM login with the client's salted password at hand (see the module's docstring)."""

    def login(_: int) -> None:
        connection = Connection(port)
        try:
            connection.handshake(mechanism)
            bare = f"n={user},r={secrets.token_urlsafe(18)}"
            server_first = connection.authenticate(f"n,,{bare}".encode()).decode()
            nonce = dict(item.split("=", 1) for item in server_first.split(","))["r"]
            without_proof = f"c=biws,r={nonce}"
            auth = f"{bare},{server_first},{without_proof}".encode()
            proof = base64.b64encode(client_proof(mechanism, salted, auth)).decode()
            final = connection.authenticate(f"{without_proof},p={proof}".encode())
            expected = hmac_of(mechanism, server_key(mechanism, salted), auth)
            assert final == b"v=" + base64.b64encode(expected), "the server's signature"
        finally:
            connection.close()

    return login


def set_users(http: Any) -> dict[tuple[str, int], bytes]:
    """One user per iteration count, with both mechanisms; their salted passwords by (mechanism,
    iterations), as the client would compute them."""
    salted: dict[tuple[str, int], bytes] = {}
    upsertions = []
    for iterations in ITERATIONS:
        for mechanism in MECHANISMS:
            salt = os.urandom(32)
            salted[(mechanism, iterations)] = salted_password(mechanism, PASSWORD, salt, iterations)
            upsertions.append(
                {
                    "name": f"scram{iterations}",
                    "mechanism": mechanism,
                    "iterations": iterations,
                    "salt": base64.b64encode(salt).decode(),
                    "salted_password": base64.b64encode(salted[(mechanism, iterations)]).decode(),
                }
            )
    for upsertion in upsertions:  # one per request: a user is named once per request
        answer = http.post("/api/v1/alter-user-scram-credentials", json={"upsertions": [upsertion]})
        assert answer.json()["results"][0]["error_code"] == 0, answer.text
    return salted


def client_hi_ms(rounds: int = 20) -> dict[str, float]:
    """What a client's Hi() costs it per login (PBKDF2 over the password), by mechanism and
    iteration count: the client's share, not the listener's."""
    costs = {}
    for iterations in ITERATIONS:
        for mechanism in MECHANISMS:
            started = time.perf_counter()
            for _ in range(rounds):
                salted_password(mechanism, PASSWORD, os.urandom(32), iterations)
            elapsed = (time.perf_counter() - started) / rounds
            costs[f"{mechanism}@{iterations}"] = round(elapsed * 1000, 2)
    return costs


def measure(stack: Any, args: argparse.Namespace) -> dict[str, Any]:
    urls = stack.start_web(workers=1, threads=4)
    stack.start_controller("controller", 3000)
    stack.wait_active("controller")
    port = start_listener(stack)
    http = bearer_client(urls.base, stack.tokens["admin"], timeout_s=60)
    try:
        salted = set_users(http)
    finally:
        http.close()
    ways: dict[str, Callable[[int], None]] = {"PLAIN": plain_login(port, stack.tokens["admin"])}
    for (mechanism, iterations), key in salted.items():
        ways[f"{mechanism}@{iterations}"] = scram_login(port, mechanism, f"scram{iterations}", key)
    log("warming up")
    for way in ways.values():
        for i in range(5):
            way(i)
    samples = alternate(ways, args.rounds, args.block)
    plain = summary(samples["PLAIN"])
    logins = {name: summary(values) for name, values in samples.items()}
    return {
        "logins": logins,
        "p50_ratio_over_plain": {
            name: round(result["p50_ms"] / plain["p50_ms"], 2)
            for name, result in logins.items()
            if name != "PLAIN"
        },
        "client_hi_ms_per_login": client_hi_ms(),
        "rounds": args.rounds,
        "block": args.block,
        "verify_metadata": verify_stack(stack),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scram_login",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds")
    parser.add_argument("--block", type=int, default=20, help="logins per way per round")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-scram-") as logs,
        running_stack(Path(logs), settings=BENCH_SETTINGS) as stack,
    ):
        result = measure(stack, args)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "scram_login.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    fail_unless_clean(result["verify_metadata"], "scram_login")


if __name__ == "__main__":
    main()
