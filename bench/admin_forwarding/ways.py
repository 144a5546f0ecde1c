"""The two ways in: the admin's direct write and the broker's Envelope."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from bench.admin_forwarding.common import (
    ADMIN_CLIENT_ID,
    CLIENT_HOST,
    DIRECT_PATH,
    ENVELOPE_PATH,
    FORWARDING_BROKER,
    set_retention,
)


@dataclasses.dataclass
class Way:
    """One way to send the write: how a request is built and when its answer acknowledges it."""

    name: str
    path: str
    token: str
    client_id: str
    wrap: Callable[[dict[str, Any], int], dict[str, Any]]  # (the RPC body, sequence) -> body
    acknowledged: Callable[[dict[str, Any]], bool]

    def request(self, host: str, sequence: int, value: int, request_id: str) -> bytes:
        body = json.dumps(self.wrap(set_retention(value), sequence), separators=(",", ":")).encode()
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {self.token}\r\n"
            f"Connection: keep-alive\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nX-Request-ID: {request_id}\r\n"
            f"X-Client-ID: {self.client_id}\r\n\r\n"
        )
        return head.encode() + body


def _resources_ok(answer: Any) -> bool:
    responses = answer.get("responses") if isinstance(answer, dict) else None
    return bool(responses) and all(r.get("error_code") == 0 for r in responses)


def ways(tokens: dict[str, str]) -> dict[str, Way]:
    from simulator import admin_api, envelope_request, principal_fields

    api = admin_api("IncrementalAlterConfigs")
    principal = principal_fields("User:admin")

    def in_envelope(rpc: dict[str, Any], sequence: int) -> dict[str, Any]:
        return envelope_request(
            api,
            rpc,
            principal=principal,
            client_id=ADMIN_CLIENT_ID,
            client_host=CLIENT_HOST,
            correlation_id=sequence % 2**31,
            api_version=1,
            forwarding_broker_id=FORWARDING_BROKER,
        )

    def envelope_ok(answer: dict[str, Any]) -> bool:
        return (
            answer.get("error_code") == 0
            and answer.get("response_status") == 200
            and _resources_ok(answer.get("response_data"))
        )

    return {
        "direct": Way(
            "direct",
            DIRECT_PATH,
            tokens["admin"],
            ADMIN_CLIENT_ID,
            lambda rpc, _: rpc,
            _resources_ok,
        ),
        "envelope": Way(
            "envelope",
            ENVELOPE_PATH,
            tokens["broker"],
            f"bench-broker-{FORWARDING_BROKER}",
            in_envelope,
            envelope_ok,
        ),
    }
