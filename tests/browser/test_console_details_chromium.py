"""The console's smaller things an operator missed (issue 25), as a person sees them in Debian's
Chromium: who can read a topic by Kafka's MATCH (a prefixed ACL included), the replication
factor, a broker holding twice the others' replicas flagged, the partitions' topic field that
contains, a missing timeline event named, a favicon that loads (no 404 on any page), the API
docs link, and what a principal may not describe said rather than shown as an empty cluster."""

from __future__ import annotations

import pytest

from tests.browser.fixtures import LiveCluster, chromium_page, require_chromium

pytestmark = pytest.mark.browser


def test_the_smaller_things_an_operator_sees(live_cluster: LiveCluster) -> None:
    from playwright.sync_api import expect

    from controlplane.principals import principal_create

    executable = require_chromium()
    base = live_cluster.base
    alice_token = principal_create(name="alice")
    for broker_id in (1, 2, 3):
        live_cluster.brokers.register(broker_id)

    live_cluster.create_topics({"name": "orders.v2", "num_partitions": 2, "replication_factor": 3})
    live_cluster.create_topics({"name": "payments", "num_partitions": 1, "replication_factor": 1})
    # Broker 1 holds five replicas of "skewed", the others one each: twice their median.
    live_cluster.create_topics(
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
    live_cluster.create_acls(acl)
    missing: list[str] = []
    with chromium_page(executable, height=900) as page:
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
        live_cluster.login(page)

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
        live_cluster.create_acls(grant)
        live_cluster.login(page, name="alice", token=alice_token)
        page.goto(f"{base}/ui/topics/")
        expect(page.get_by_test_id("hidden-topics")).to_contain_text("3 topics hidden")
        expect(page.locator(".empty")).to_have_text("No topic you may describe.")
        page.goto(f"{base}/ui/")
        expect(page.get_by_test_id("hidden-topics")).to_be_visible()
    assert missing == []  # no favicon (or anything else) answered 404 along the way
