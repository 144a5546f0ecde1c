"""The console's smaller things an operator missed (issue 25), as a person sees them in Debian's
Chromium: who can read a topic by Kafka's MATCH (a prefixed ACL included), the replication
factor, a broker holding twice the others' replicas flagged, the partitions' topic field that
contains, a missing timeline event named, a favicon that loads (no 404 on any page), the API
docs link, and what a principal may not describe said rather than shown as an empty cluster."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import TIMEOUT_MS, chromium_page, require_chromium
from tests.browser.test_console_actions_chromium import Brokers

pytestmark = pytest.mark.browser


def login(page: Any, base: str, name: str, token: str) -> None:
    page.goto(f"{base}/ui/")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")


def test_the_smaller_things_an_operator_sees(live_server: Any, internal_server: str) -> None:
    import httpx
    from playwright.sync_api import expect

    from controlplane.principals import principal_create
    from controlplane.runtime.controller import reset_runtime
    from controlplane.runtime.lease import cluster_get_or_create

    reset_runtime()
    executable = require_chromium()
    base = live_server.url
    admin_token = principal_create(name="admin", super_user=True)
    alice_token = principal_create(name="alice")
    broker_token = principal_create(name="broker-a", broker=True)
    internal = httpx.Client(
        base_url=internal_server, headers={"Authorization": f"Bearer {broker_token}"}, timeout=30
    )
    api = httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {admin_token}"}, timeout=30
    )
    brokers = Brokers(internal, cluster_get_or_create().cluster_id)
    for broker_id in (1, 2, 3):
        brokers.register(broker_id)

    def created(topic: dict[str, Any]) -> None:
        answer = api.post("/api/v1/create-topics", json={"topics": [topic]}).json()
        assert answer["topics"][0]["error_code"] == 0, answer

    created({"name": "orders.v2", "num_partitions": 2, "replication_factor": 3})
    created({"name": "payments", "num_partitions": 1, "replication_factor": 1})
    # Broker 1 holds five replicas of "skewed", the others one each: twice their median.
    created(
        {
            "name": "skewed",
            "assignments": [
                {"partition_index": i, "broker_ids": ids}
                for i, ids in enumerate([[1], [1], [1], [1], [1], [2], [3]])
            ],
        }
    )
    acl = {
        "resource_type": "TOPIC",
        "resource_name": "orders.",
        "pattern_type": "PREFIXED",
        "principal": "User:bob",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    answer = api.post("/api/v1/create-acls", json={"creations": [acl]}).json()
    assert answer["results"][0]["error_code"] == 0, answer
    expect.set_options(timeout=TIMEOUT_MS)
    missing: list[str] = []
    try:
        with chromium_page(executable, height=900) as page:
            page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
            login(page, base, "admin", admin_token)

            # The favicon loads and the API docs are one click away, on every page.
            icon = page.locator("link[rel=icon]").get_attribute("href")
            assert icon and page.request.get(f"{base}{icon}").status == 200
            expect(page.get_by_test_id("api-docs")).to_be_visible()
            expect(page.get_by_test_id("api-docs")).to_have_attribute("href", "/api/docs/")

            # The replication factor, on the list and the page.
            page.goto(f"{base}/ui/topics/")
            row = page.locator("tr[data-topic='orders.v2']")
            expect(row.get_by_test_id("replication-factor")).to_have_text("3")
            page.goto(f"{base}/ui/topics/orders.v2/")
            expect(page.get_by_test_id("replication-factor")).to_have_text("3")

            # "Who can read this topic?": the prefixed ACL that applies is there.
            page.get_by_role("link", name="ACLs").last.click()
            expect(page.get_by_test_id("acl-match")).to_be_visible()
            expect(page.locator("[data-acl-group='TOPIC:orders. (PREFIXED)']")).to_be_visible()

            # The broker holding twice the others' median is flagged; the others are not.
            page.goto(f"{base}/ui/brokers/")
            expect(page.locator("#broker-1").get_by_test_id("overloaded")).to_be_visible()
            expect(page.locator("#broker-2").get_by_test_id("overloaded")).to_have_count(0)

            # The partitions' topic field contains, as the topics' one does.
            page.goto(f"{base}/ui/partitions/")
            page.fill("#partition-filter-topic", "orders")
            page.keyboard.press("Enter")
            expect(page.get_by_test_id("partition-count")).to_have_text("2")

            # A missing timeline event is named as one.
            page.goto(f"{base}/ui/timeline/999999/")
            expect(page.locator("h1")).to_have_text("Timeline event not found")
            missing.remove(f"{base}/ui/timeline/999999/")  # the page's own 404, as it should

            # What alice may not describe is said, on the lists and the overview.
            page.context.clear_cookies()
            grant = {
                **acl,
                "resource_type": "CLUSTER",
                "resource_name": "kafka-cluster",
                "pattern_type": "LITERAL",
                "principal": "User:alice",
                "operation": "DESCRIBE",
            }
            answer = api.post("/api/v1/create-acls", json={"creations": [grant]}).json()
            assert answer["results"][0]["error_code"] == 0, answer
            login(page, base, "alice", alice_token)
            page.goto(f"{base}/ui/topics/")
            expect(page.get_by_test_id("hidden-topics")).to_contain_text("3 topics hidden")
            expect(page.locator(".empty")).to_have_text("No topic you may describe.")
            page.goto(f"{base}/ui/")
            expect(page.get_by_test_id("hidden-topics")).to_be_visible()
    finally:
        internal.close()
        api.close()
    assert missing == []  # no favicon (or anything else) answered 404 along the way
