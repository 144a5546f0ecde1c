"""The UI's main list pages, filtered and seen by a principal who is not a super user (so
topics are hidden and tokens checked one by one), read in a number of queries that does not
grow with the rows: every read goes through a selector that pages in SQL."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from controlplane.authz import acl_cache
from tests.conftest import Api
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

PAGES = [
    "/ui/",
    "/ui/brokers/",
    "/ui/brokers/1/",
    "/ui/topics/",
    "/ui/topics/?q=t",
    "/ui/timeline/",
    "/ui/partitions/?under_replicated=true",
    "/ui/partitions/?reassigning=true",
    "/ui/balance/",
    "/ui/charts/",
    "/ui/search/?q=t0",
    "/ui/configs/",
    "/ui/configs/?q=t",
    "/ui/acls/",
    "/ui/acls/?resource_type=TOPIC&group=resource",
    "/ui/quotas/",
    "/ui/quotas/?entity_type=user",
    "/ui/tokens/",
    "/ui/audit/",
    "/ui/audit/?api=CreateTopics",
]
# What alice may see: the cluster, its configs, the topics named t..., every token.
GRANTS = [
    ("CLUSTER", "kafka-cluster", "LITERAL", "DESCRIBE"),
    ("CLUSTER", "kafka-cluster", "LITERAL", "DESCRIBE_CONFIGS"),
    ("TOPIC", "t", "PREFIXED", "DESCRIBE"),
    ("DELEGATION_TOKEN", "*", "LITERAL", "DESCRIBE"),
]


def text(response: Any) -> str:
    return str(response.content.decode())


def count_queries(client: Client, path: str) -> int:
    acl_cache.clear()  # every measurement includes the ACL load
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, text(response)[:500]
    return len(queries.captured_queries)


def acl(resource_type: str, name: str, pattern: str, operation: str, principal: str) -> Any:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": "ALLOW",
    }


def test_list_pages_of_a_non_super_principal_read_a_fixed_number_of_queries(
    client: Client,
    api: Api,
    tokens: dict[str, str],
    register: Callable[..., int],
    token_secret_key: str,
) -> None:
    admin = tokens["admin"]

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, answer = api.post(path, body, token=admin)
        assert status == 200, answer
        return dict(answer)

    def add_rows(start: int, count: int) -> None:
        numbers = range(start, start + count)
        # Visible topics (t...) and hidden ones (x...), two partitions each.
        topics = [
            {"name": f"{prefix}{i:03d}", "num_partitions": 2, "replication_factor": 2}
            for i in numbers
            for prefix in ("t", "x")
        ]
        answer = post("/api/v1/create-topics", {"topics": topics})
        assert [t["error_code"] for t in answer["topics"]] == [0] * len(topics), answer
        answer = post(
            "/api/v1/create-acls",
            {
                "creations": [
                    acl("TOPIC", f"t{i:03d}", "LITERAL", "READ", "User:bob") for i in numbers
                ]
            },
        )
        assert [r["error_code"] for r in answer["results"]] == [0] * count, answer
        entries = [
            {
                "entity": [{"entity_type": kind, "entity_name": f"u{i:03d}"}],
                "ops": [{"key": "producer_byte_rate", "value": 1024.0}],
            }
            for i in numbers
            for kind in ("user", "client-id")
        ]
        answer = post("/api/v1/alter-client-quotas", {"entries": entries})
        assert [e["error_code"] for e in answer["entries"]] == [0] * len(entries), answer
        for _ in numbers:
            assert post("/api/v1/create-delegation-token", {})["error_code"] == 0

    for broker_id in (1, 2, 3):
        register(broker_id, unfence=True)
    grants = [acl(*grant, principal="User:alice") for grant in GRANTS]
    answer = post("/api/v1/create-acls", {"creations": grants})
    assert [r["error_code"] for r in answer["results"]] == [0] * len(grants), answer
    ui_login(client, "alice", tokens["alice"])

    add_rows(0, 2)
    before = {page: count_queries(client, page) for page in PAGES}
    add_rows(2, 12)
    after = {page: count_queries(client, page) for page in PAGES}

    # The pages show the rows that grew, and only those alice may see.
    topics = re.findall(r'data-topic="([^"]+)"', text(client.get("/ui/topics/")))
    assert topics == [f"t{i:03d}" for i in range(14)]
    configs = text(client.get("/ui/configs/?q=t"))
    assert "t013" in configs and "x000" not in configs
    assert text(client.get("/ui/acls/")).count("data-acl-id=") == 14 + len(GRANTS)
    assert text(client.get("/ui/quotas/?entity_type=user")).count("data-entity=") == 14
    assert text(client.get("/ui/tokens/")).count("data-token-id=") == 14
    assert after == before
