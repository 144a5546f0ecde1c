"""DescribeCluster (KIP-700, the README's example of adding an RPC): the live brokers with their
pods (KIP-1095), the controller, and the caller's operations on the cluster when asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from audit.models import AuditEvent

pytestmark = pytest.mark.django_db
PATH = "/api/v1/describe-cluster"
NOT_ASKED = -(2**31)


def bits(*codes: int) -> int:
    return sum(1 << code for code in codes)


def test_live_brokers_with_their_pods_and_the_controller(
    api: Any, tokens: dict[str, str], register: Callable[..., int], cluster_id: str
) -> None:
    register(1, unfence=True)
    register(2, unfence=True, pod="canary-broker", rack="r2")
    register(3)  # fenced: not alive
    status, answer = api.post(PATH, {}, token=tokens["alice"])
    assert status == 200, answer
    assert answer["error_code"] == 0 and answer["cluster_id"] == cluster_id
    assert answer["controller_id"] >= 0 and answer["endpoint_type"] == 1
    assert [(b["broker_id"], b["pod"]) for b in answer["brokers"]] == [
        (1, "broker"),
        (2, "canary-broker"),
    ]
    assert answer["brokers"][1] == {
        "broker_id": 2,
        "host": "b2.local",
        "port": 9092,
        "rack": "r2",
        "pod": "canary-broker",
    }
    assert answer["cluster_authorized_operations"] == NOT_ASKED


def test_authorized_operations_only_when_asked_and_described(
    api: Any, tokens: dict[str, str]
) -> None:
    asked = {"include_cluster_authorized_operations": True}
    status, admin = api.post(PATH, asked, token=tokens["admin"])
    # ALTER 7, ALTER_CONFIGS 11, CLUSTER_ACTION 9, CREATE 5, DESCRIBE 8, DESCRIBE_CONFIGS 10,
    # IDEMPOTENT_WRITE 12: everything Kafka's CLUSTER resource supports.
    assert status == 200 and admin["cluster_authorized_operations"] == bits(5, 7, 8, 9, 10, 11, 12)
    status, alice = api.post(PATH, asked, token=tokens["alice"])
    assert status == 200 and alice["cluster_authorized_operations"] == 0  # no DESCRIBE
    # DESCRIBE, and ALTER_CONFIGS (which implies DESCRIBE_CONFIGS), granted as ACLs.
    grants = [
        {
            "resource_type": "CLUSTER",
            "resource_name": "kafka-cluster",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": operation,
            "permission_type": "ALLOW",
        }
        for operation in ("DESCRIBE", "ALTER_CONFIGS")
    ]
    status, created = api.post("/api/v1/create-acls", {"creations": grants}, token=tokens["admin"])
    assert status == 200 and all(r["error_code"] == 0 for r in created["results"]), created
    status, alice = api.post(PATH, asked, token=tokens["alice"])
    assert status == 200 and alice["cluster_authorized_operations"] == bits(8, 10, 11)


def test_bad_input_is_invalid_request_and_every_call_is_audited(
    api: Any, tokens: dict[str, str]
) -> None:
    status, answer = api.post(
        PATH,
        {"include_cluster_authorized_operations": "yes"},
        token=tokens["alice"],
        headers={"X-Request-ID": "dc-bad"},
    )
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    assert "include_cluster_authorized_operations" in answer["error_message"]
    (event,) = AuditEvent.objects.filter(request_id="dc-bad")
    assert (event.api, event.outcome, event.error_code) == ("DescribeCluster", "FAILED", 42)
    assert event.resources == [
        {"resource_type": "CLUSTER", "resource_name": "kafka-cluster", "error_code": 42}
    ]
