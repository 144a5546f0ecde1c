"""Simulated brokers as a KIP-590 forwarding proxy, against a real embedded server.

A simulated broker redirects an old client's IncrementalAlterConfigs to the controller in an
Envelope: it is applied and audited as the client, with the broker noted. Retries (a lost answer,
NOT_CONTROLLER, a refused connection) keep ONE request id, so the write applies once; past the
deadline the client gets REQUEST_TIMED_OUT; an envelope the controller refuses reaches the client
as UNKNOWN_SERVER_ERROR. The server is one embedded gunicorn process on SQLite that is also the
controller (as in test_simulator_embedded.py); NOT_CONTROLLER is real: the test hands the
controller lease to another node for a while. Faults the server cannot make on demand (a lost
answer, a refused connection, a wrong token) are injected by a transport wrapped around the
simulator's real one.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from controlplane.controller.errors import Errors
from simulator import ENVELOPE_PATH, BrokerSimulator, ForwardResult
from tests.integration.test_simulator_embedded import (
    PYTHON,
    ROOT,
    EmbeddedServer,
    _token,
    embedded_server,
)

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 300
# The server retries NOT_CONTROLLER itself for this long, then answers 503 to the broker.
SERVER_REQUEST_TIMEOUT_MS = 1000
WAIT_S = 20.0
TOPIC = "orders"


def set_retention(value: str, topic: str = TOPIC) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": topic,
                "configs": [{"name": "retention.ms", "config_operation": "SET", "value": value}],
            }
        ]
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    with embedded_server(
        tmp_path_factory.mktemp("forwarding"),
        CP_BROKER_SESSION_TIMEOUT_MS=str(SESSION_TIMEOUT_MS),
        CP_BROKER_HEARTBEAT_INTERVAL_MS=str(HEARTBEAT_MS),
        CP_REQUEST_TIMEOUT_MS=str(SERVER_REQUEST_TIMEOUT_MS),
    ) as built:
        asyncio.run(asyncio.wait_for(_create_topic_and_grant_alice(built), timeout=60))
        yield built


async def _create_topic_and_grant_alice(server: EmbeddedServer) -> None:
    """The topic the tests alter (placement needs an unfenced broker, so one runs meanwhile),
    and User:alice's ALTER_CONFIGS on it."""
    sim = simulator(server, first_id=900)
    await sim.start()
    try:
        assert await sim.wait_for(lambda s: s.status().unfenced == 1, WAIT_S), sim.status()
        topic = await sim.create_topic(TOPIC, 1, 1, admin_token=server.admin_token)
        assert topic["error_code"] == 0, topic
        await sim.shutdown_all(timeout_s=WAIT_S)
    finally:
        await sim.close()
    status, answer = admin_call(
        server,
        "POST",
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": TOPIC,
                    "pattern_type": "LITERAL",
                    "principal": "User:alice",
                    "host": "*",
                    "operation": "ALTER_CONFIGS",
                    "permission_type": "ALLOW",
                }
            ]
        },
    )
    assert status == 200 and answer["results"][0]["error_code"] == 0, answer


def simulator(
    server: EmbeddedServer, *, first_id: int, transport: httpx.AsyncBaseTransport | None = None
) -> BrokerSimulator:
    return BrokerSimulator(
        server.url,
        server.broker_token,
        internal_url=server.internal_url,
        brokers=1,
        first_id=first_id,
        heartbeat_interval_ms=HEARTBEAT_MS,
        connect_timeout_s=10,
        metadata_wait_ms=2000,
        client_id="fwd-sim",
        transport=transport,
    )


def admin_call(
    server: EmbeddedServer, method: str, path: str, body: Any = None, **params: Any
) -> tuple[int, Any]:
    response = httpx.request(
        method,
        server.url + path,
        json=body,
        params=params or None,
        headers={"Authorization": f"Bearer {server.admin_token}"},
        timeout=10,
    )
    return response.status_code, response.json()


def records_of(server: EmbeddedServer, request_id: str) -> list[dict[str, Any]]:
    status, answer = admin_call(server, "GET", "/api/v1/metadata-log", request_id=request_id)
    assert status == 200, answer
    return list(answer["results"])


def audit_events(server: EmbeddedServer, **filters: Any) -> list[dict[str, Any]]:
    status, answer = admin_call(server, "GET", "/api/v1/audit-events", page_size=100, **filters)
    assert status == 200, answer
    return list(answer["results"])


def retention_of(server: EmbeddedServer) -> str | None:
    status, answer = admin_call(
        server,
        "POST",
        "/api/v1/describe-configs",
        {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": TOPIC,
                    "configuration_keys": ["retention.ms"],
                }
            ]
        },
    )
    assert status == 200, answer
    configs = answer["results"][0]["configs"]
    return next((c["value"] for c in configs if c["config_source"] == "DYNAMIC_TOPIC_CONFIG"), None)


def hand_the_lease_away(server: EmbeddedServer, seconds: float) -> None:
    """Another node holds the controller lease for `seconds`: this server's controller loses
    it, answers NOT_CONTROLLER, and takes it over again (epoch + 1) once it lapsed."""
    path = server.env["CP_SQLITE_PATH"]
    with sqlite3.connect(path, timeout=10) as conn:
        conn.execute(
            "UPDATE cp_cluster SET lease_holder = 'another-node', lease_expires_ms = ? "
            "WHERE id = 1",
            (int(time.time() * 1000 + seconds * 1000),),
        )


class Faults(httpx.AsyncBaseTransport):
    """The simulator's real transport, with faults on its Envelope requests, one per request in
    `plan` order (then none): "lose-answer" (the server gets and applies it, the broker never
    hears back: a read timeout), "not-controller" (a 503 NOT_CONTROLLER that never reached the
    server), "refuse-connection", "token:T" (sent with token T instead of the broker's)."""

    def __init__(self, plan: list[str]) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.plan = list(plan)
        self.seen: list[httpx.Request] = []  # every Envelope request, as the simulator sent it
        self.reached_server = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != ENVELOPE_PATH:
            return await self.inner.handle_async_request(request)
        self.seen.append(request)
        step = self.plan.pop(0) if self.plan else "pass"
        if step == "refuse-connection":
            raise httpx.ConnectError("connection refused (injected)", request=request)
        if step == "not-controller":
            return httpx.Response(
                503,
                json={
                    "error_code": int(Errors.NOT_CONTROLLER),
                    "error": "NOT_CONTROLLER",
                    "error_message": "injected",
                    "response_data": None,
                },
                headers={"Retry-After": "0"},
            )
        if step.startswith("token:"):
            request.headers["Authorization"] = f"Bearer {step.removeprefix('token:')}"
        self.reached_server += 1
        response = await self.inner.handle_async_request(request)
        if step == "lose-answer":
            await response.aread()
            await response.aclose()
            raise httpx.ReadTimeout("the answer was lost (injected)", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def forward(
    server: EmbeddedServer,
    *,
    first_id: int,
    value: str,
    api: str = "IncrementalAlterConfigs",
    principal: str = "User:alice",
    transport: httpx.AsyncBaseTransport | None = None,
    lease_away_s: float = 0.0,
    **options: Any,
) -> tuple[ForwardResult, list[str]]:
    """One simulated broker (id `first_id`) forwards the client's SET retention.ms=value; with
    `lease_away_s`, another node holds the lease for that long from when it is registered."""
    lines: list[str] = []

    async def scenario() -> ForwardResult:
        sim = simulator(server, first_id=first_id, transport=transport)
        await sim.start()
        try:
            assert await sim.wait_for(lambda s: s.broker(first_id).registered, WAIT_S)
            if lease_away_s:
                hand_the_lease_away(server, lease_away_s)
            return await sim.forward_admin_request(
                first_id,
                api,
                set_retention(value),
                principal,
                client_id="legacy-admin",
                client_host="10.1.2.3",
                progress=lines.append,
                **options,
            )
        finally:
            await sim.close()

    return asyncio.run(asyncio.wait_for(scenario(), timeout=120)), lines


def test_a_forwarded_write_is_applied_and_audited_as_the_client(server: EmbeddedServer) -> None:
    result, lines = forward(server, first_id=1, value="60000")

    assert result.ok and result.delivered, (result, lines)
    assert result.attempts == 1 and result.retried == []
    assert (result.api, result.api_key, result.response_status) == (
        "IncrementalAlterConfigs",
        44,
        200,
    )
    [answer] = result.response_data["responses"]
    assert (answer["resource_type"], answer["resource_name"]) == ("TOPIC", TOPIC)
    assert answer["error_code"] == 0, answer
    assert result.envelope is not None
    assert result.envelope["request_principal"] == {"type": "User", "name": "alice"}
    assert result.envelope["request_header"]["request_api_key"] == 44
    assert result.envelope["forwarding_broker_id"] == 1
    assert retention_of(server) == "60000"

    # Written once, as the client.
    [record] = records_of(server, result.request_id)
    assert record["type"] == "ConfigRecord"
    assert (record["principal"], record["client_id"], record["client_host"]) == (
        "User:alice",
        "legacy-admin",
        "10.1.2.3",
    )
    # Audited as the client, with the broker that forwarded it.
    [event] = audit_events(server, forwarding_broker_id=1)
    assert event["request_id"] == result.request_id
    assert (event["api"], event["principal"], event["outcome"]) == (
        "IncrementalAlterConfigs",
        "User:alice",
        "SUCCESS",
    )
    assert (event["forwarding_principal"], event["forwarding_broker_id"]) == ("User:sim", 1)
    assert (event["client_id"], event["client_host"]) == ("legacy-admin", "10.1.2.3")
    assert event["first_offset"] == event["last_offset"] == record["offset"]
    assert any("forwarding IncrementalAlterConfigs (apiKey 44) of User:alice" in x for x in lines)
    assert any("the controller answered HTTP 200" in x and "TOPIC orders: NONE" in x for x in lines)


def test_the_inner_request_is_authorized_as_the_client(server: EmbeddedServer) -> None:
    # bob has no ACL: the broker could alter the topic, the client may not.
    denied, lines = forward(
        server, first_id=2, value="1", api="incremental-alter-configs", principal="User:bob"
    )
    assert denied.delivered and not denied.ok, denied
    assert denied.response_data["responses"][0]["error"] == "TOPIC_AUTHORIZATION_FAILED"
    assert records_of(server, denied.request_id) == []
    [event] = audit_events(server, forwarding_broker_id=2)
    assert (event["principal"], event["outcome"]) == ("User:bob", "DENIED")
    assert any("TOPIC orders: TOPIC_AUTHORIZATION_FAILED" in x for x in lines), lines


def test_retries_keep_the_request_id_and_the_write_applies_once(server: EmbeddedServer) -> None:
    faults = Faults(["lose-answer", "not-controller", "refuse-connection"])
    result, lines = forward(server, first_id=3, value="70000", transport=faults)

    assert result.ok, (result, lines)
    assert result.attempts == 4
    assert result.retried == ["ReadTimeout", "HTTP 503 NOT_CONTROLLER", "ConnectError"]
    # Every attempt carried the same request id and the same envelope.
    assert [r.headers["X-Request-ID"] for r in faults.seen] == [result.request_id] * 4
    assert len({r.content for r in faults.seen}) == 1
    assert faults.reached_server == 2  # the lost answer's request, and the last one
    # The controller applied it once; the two requests that arrived answered that one write,
    # which is audited once (one audit row per applied write).
    [record] = records_of(server, result.request_id)
    events = audit_events(server, request_id=result.request_id)
    assert len(events) == 1
    assert {(e["first_offset"], e["last_offset"]) for e in events} == {
        (record["offset"], record["offset"])
    }
    assert {(e["principal"], e["forwarding_broker_id"]) for e in events} == {("User:alice", 3)}
    assert retention_of(server) == "70000"
    assert sum("retrying in" in x and "same request id" in x for x in lines) == 3, lines


def test_not_controller_is_retried_until_a_controller_takes_over(server: EmbeddedServer) -> None:
    status, before = admin_call(server, "GET", "/api/v1/cluster")
    assert status == 200, before
    result, lines = forward(server, first_id=4, value="80000", lease_away_s=2.5, timeout_s=20.0)

    assert result.ok, (result, lines)
    assert "HTTP 503 NOT_CONTROLLER" in result.retried, result.retried
    assert len(records_of(server, result.request_id)) == 1
    assert retention_of(server) == "80000"
    _, after = admin_call(server, "GET", "/api/v1/cluster")
    assert after["controller_epoch"] > before["controller_epoch"]  # taken over again


def test_the_client_gets_request_timed_out_after_the_deadline(server: EmbeddedServer) -> None:
    started = time.monotonic()
    result, lines = forward(server, first_id=5, value="90000", lease_away_s=5.0, timeout_s=2.5)

    assert not result.delivered and not result.ok
    assert result.response_data["error"] == "REQUEST_TIMED_OUT", result
    assert result.error_code == Errors.REQUEST_TIMED_OUT
    assert result.attempts >= 2 and result.retried[0] == "HTTP 503 NOT_CONTROLLER"
    assert result.envelope_error and "no answer from the controller" in result.envelope_error
    assert time.monotonic() - started < 15
    assert any("REQUEST_TIMED_OUT for the client" in x for x in lines), lines
    # Nothing was written, even once the lease is back (the server gave up its attempts too).
    time.sleep(SERVER_REQUEST_TIMEOUT_MS / 1000 + 0.5)
    hand_the_lease_away(server, seconds=-1)
    status, _ = admin_call(server, "GET", "/api/v1/cluster")
    assert status == 200
    assert records_of(server, result.request_id) == []
    assert retention_of(server) != "90000"


def test_an_envelope_the_controller_refuses_is_an_unknown_server_error_for_the_client(
    server: EmbeddedServer,
) -> None:
    # Sent with a token that lacks CLUSTER_ACTION: the envelope itself is refused.
    plain = _token(server.env, "mallory")
    faults = Faults([f"token:{plain}"])
    result, _ = forward(server, first_id=6, value="1", transport=faults)

    assert not result.delivered and result.attempts == 1
    assert result.response_data["error"] == "UNKNOWN_SERVER_ERROR"
    assert result.error_code == Errors.UNKNOWN_SERVER_ERROR
    assert result.envelope_error and "CLUSTER_AUTHORIZATION_FAILED" in result.envelope_error
    assert records_of(server, result.request_id) == []
    [event] = audit_events(server, request_id=result.request_id)
    assert (event["api"], event["principal"], event["outcome"]) == (
        "Envelope",
        "User:mallory",
        "DENIED",
    )


def test_cli_forward_command(server: EmbeddedServer) -> None:
    commands = "\n".join(
        [
            "forward 100 DescribeConfigs {}",
            "forward 100 IncrementalAlterConfigs not-json",
            'forward 100 IncrementalAlterConfigs {"resources": [{"resource_type": "TOPIC", '
            '"resource_name": "orders", "configs": [{"name": "retention.ms", '
            '"config_operation": "SET", "value": "123456"}]}]} --as User:alice '
            "--client-id cli-admin --host 10.9.8.7",
            "quit",
            "",
        ]
    )
    result = subprocess.run(
        [
            PYTHON,
            "manage.py",
            "simulate_brokers",
            "--url",
            server.url,
            "--internal-url",
            server.internal_url,
            "--brokers",
            "1",
            "--first-id",
            "100",
            "--heartbeat-ms",
            str(HEARTBEAT_MS),
            "--control",
            "stdin",
            "--duration",
            "60",
            "--status-every",
            "30",
        ],
        cwd=ROOT,
        env={**server.env, "CP_BROKER_TOKEN": server.broker_token},
        input=commands,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "DescribeConfigs is not forwarded" in out, out
    assert "forward: the body is not JSON" in out and "usage: forward BROKER_ID" in out, out
    assert (
        "broker 100: forwarding IncrementalAlterConfigs (apiKey 44) of User:alice "
        "(client cli-admin at 10.9.8.7)" in out
    ), out
    assert "broker 100: forward IncrementalAlterConfigs done (HTTP 200):" in out, out
    assert retention_of(server) == "123456"
    [event] = audit_events(server, forwarding_broker_id=100)
    assert (event["principal"], event["client_id"], event["client_host"]) == (
        "User:alice",
        "cli-admin",
        "10.9.8.7",
    )
    verify = server.manage("verify_metadata")
    assert verify.returncode == 0, verify.stdout + verify.stderr
