"""The replicas UI in a real (Debian) Chromium: a partition going leaderless shows up without a
reload. The same pages through Django's test client: tests/ui."""

from __future__ import annotations

import re

import pytest

from tests.browser.fixtures import LiveCluster, logged_in

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_partition_goes_leaderless_without_reload(live_cluster: LiveCluster) -> None:
    from playwright.sync_api import expect

    base = live_cluster.base
    brokers = live_cluster.brokers
    try:
        brokers.register(1, host="b1.local", rack="rack-a")
        live_cluster.create_topics({"name": "orders", "num_partitions": 2, "replication_factor": 1})

        with logged_in(live_cluster, "/ui/topics/orders/") as page:
            row = page.locator("#partition-0")
            expect(row.get_by_test_id("leader")).to_have_text("1")
            expect(row).not_to_have_class(re.compile(r"\bleaderless\b"))
            page.evaluate("window.__notReloaded = true")

            brokers.fail_replicas(1, "orders", [0], reason="disk failed")
            expect(row).to_have_class(re.compile(r"\bleaderless\b"))
            expect(row.get_by_test_id("leader")).to_have_text("no leader")
            expect(row.get_by_test_id("offline")).to_have_text("1")
            expect(page.locator("#partition-1")).not_to_have_class(re.compile(r"\bleaderless\b"))
            expect(page.get_by_test_id("topic-leaderless")).to_have_text("1 leaderless")
            background = row.locator("td").first.evaluate(
                "cell => getComputedStyle(cell).backgroundColor"
            )
            assert background == "rgb(251, 228, 228)"  # --danger-bg
            assert page.evaluate("window.__notReloaded") is True
            page.screenshot(path="/tmp/ui-topic-leaderless.png", full_page=True)

            page.click("nav >> text=Timeline")
            expect(page).to_have_url(f"{base}/ui/timeline/")
            failure = page.locator("article[data-kind=LOG_DIR_FAILURE]").first
            expect(failure.get_by_test_id("new-leader").first).to_have_text("no leader")
            expect(failure.locator("tr[data-move]").first).to_contain_text("orders-0")
            page.screenshot(path="/tmp/ui-timeline.png", full_page=True)

            page.goto(f"{base}/ui/brokers/1/")
            offline = page.get_by_test_id("offline-table")
            expect(offline.locator("tr[data-offline-partition]")).to_have_count(1)
            expect(offline).to_contain_text("orders-0")
            replica = page.locator('tr[data-partition="orders-0"]')
            expect(replica.get_by_test_id("replica-state")).to_have_text("offline")
            expect(
                page.locator('tr[data-partition="orders-1"]').get_by_test_id("role")
            ).to_have_text("leader")
            page.screenshot(path="/tmp/ui-broker-replicas.png", full_page=True)

            # A filter being typed survives the refresh; submitting it applies it.
            page.click("nav >> text=Topics")
            expect(page.locator("tr[data-topic]")).to_have_count(1)
            page.fill("#topic-filter-q", "pay")
            live_cluster.create_topics({"name": "payments", "num_partitions": 1})
            page.wait_for_timeout(4500)  # two refresh periods
            expect(page.locator("#topic-filter-q")).to_have_value("pay")
            expect(page.locator("tr[data-topic]")).to_have_count(1)
            page.press("#topic-filter-q", "Enter")
            expect(page).to_have_url(f"{base}/ui/topics/?q=pay")
            expect(page.locator("tr[data-topic]")).to_have_attribute("data-topic", "payments")
            assert not page.locator("tr.leaderless").count()
    finally:
        expect.set_options(timeout=None)  # back to Playwright's default
