"""KIP-590's forwarding metrics on /metrics, moved by real requests."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.django_db

ENVELOPE = "/internal/v1/envelope"


def scrape(client: Any) -> dict[str, float]:
    text = client.get("/metrics").content.decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        match = re.match(r"^(kafka_server_forward\S*?)(\{[^}]*\})? (\S+)$", line)
        if match:
            key = match.group(1) + (match.group(2) or "")
            samples[key] = float(match.group(3))
    return samples


def delta(before: dict[str, float], after: dict[str, float], key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


def quota_body(value: float) -> dict[str, Any]:
    return {
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "bob"}],
                "ops": [{"key": "producer_byte_rate", "value": value}],
            }
        ]
    }


def envelope(body: dict[str, Any], api_key: int = 49) -> dict[str, Any]:
    return {
        "request_header": {
            "request_api_key": api_key,
            "request_api_version": 1,
            "client_id": "old-client",
            "correlation_id": 1,
        },
        "request_data": body,
        "request_principal": {"type": "User", "name": "admin"},
        "client_host_address": "10.0.0.9",
    }


def test_forwarding_counters_and_times_move_with_requests(
    client: Any, api: Any, tokens: dict[str, str]
) -> None:
    before = scrape(client)
    status, _ = api.post("/api/v1/alter-client-quotas", quota_body(1.0), token=tokens["admin"])
    assert status == 200
    status, answer = api.post(ENVELOPE, envelope(quota_body(2.0)), token=tokens["broker"])
    assert status == 200 and answer["response_data"]["entries"][0]["error_code"] == 0
    status, _ = api.post(ENVELOPE, envelope(quota_body(3.0)), token=tokens["alice"])
    assert status == 403
    after = scrape(client)

    forwarded = (
        'kafka_server_forwarding_num_client_forwarding_to_controller_total{api="AlterClientQuotas"}'
    )
    assert delta(before, after, forwarded) == 2  # direct and redirected: both reach the controller
    redirected = "kafka_server_forwarding_num_messages_redirected_total"
    assert delta(before, after, redirected) == 1
    # /metrics answers without login: no label names who sent what (issue 34).
    assert "User:broker-a" not in client.get("/metrics").content.decode()
    failed = (
        "kafka_server_forwarding_request_forwarding_to_controller_authorization_fail_count_total"
    )
    assert delta(before, after, failed) == 1
    assert after["kafka_server_forwarding_num_client_forwarding_to_controller_count"] == 0
    for histogram in ("queue_time", "remote_time"):
        key = f'kafka_server_forwardingmanager_{histogram}_seconds_count{{api="AlterClientQuotas"}}'
        assert delta(before, after, key) == 2
