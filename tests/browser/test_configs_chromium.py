"""The admin pages in a real (Debian) Chromium: a topic config changed through the review diff,
then seen in the audit trail. The same pages through Django's test client: tests/ui."""

from __future__ import annotations

import pytest

from controlplane.models import ConfigEntry
from tests.browser.fixtures import LiveCluster, logged_in

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_change_a_topic_config_through_the_diff_and_see_it_audited(
    live_cluster: LiveCluster,
) -> None:
    from playwright.sync_api import expect

    base = live_cluster.base
    live_cluster.brokers.register(1)
    live_cluster.create_topics({"name": "orders", "num_partitions": 1, "replication_factor": 1})

    with logged_in(live_cluster, "/ui/configs/", height=900) as page:
        page.click("a[href='/ui/configs/topics/orders/']")
        row = page.locator("tr[data-config='retention.ms']")
        expect(row.get_by_test_id("config-source")).to_have_text("DEFAULT_CONFIG")

        page.get_by_test_id("edit-configs").click()
        expect(page).to_have_url(f"{base}/ui/configs/topics/orders/edit/")
        page.fill("input[name='value__retention.ms']", "3600000")
        page.get_by_test_id("review-changes").click()
        diff = page.locator("tr[data-diff='retention.ms']")
        expect(diff.get_by_test_id("diff-old")).to_have_text("7 d (default)")
        # In units people read; the raw milliseconds on hover.
        expect(diff.get_by_test_id("diff-new")).to_have_text("1 h")
        expect(diff.locator("[data-testid=diff-new] .unit")).to_have_attribute(
            "title", "3600000 ms"
        )
        page.screenshot(path="/tmp/ui-config-diff.png", full_page=True)
        assert not ConfigEntry.objects.filter(name="retention.ms").exists()

        page.get_by_test_id("apply-changes").click()
        expect(page).to_have_url(f"{base}/ui/configs/topics/orders/")
        expect(page.get_by_test_id("messages")).to_contain_text("Changed 1 config of topic orders.")
        expect(row.get_by_test_id("config-value")).to_have_text("1 h")
        expect(row.get_by_test_id("config-source")).to_have_text("DYNAMIC_TOPIC_CONFIG")
        assert ConfigEntry.objects.get(name="retention.ms").value == "3600000"

        page.click("nav >> text=Audit")
        expect(page).to_have_url(f"{base}/ui/audit/")
        latest = page.locator("tr[data-audit-id]").first
        expect(latest.get_by_test_id("audit-api")).to_have_text("IncrementalAlterConfigs")
        expect(latest.get_by_test_id("audit-principal")).to_have_text("User:admin")
        expect(latest.get_by_test_id("audit-outcome")).to_have_text("SUCCESS")
        expect(latest.get_by_test_id("audit-resources")).to_have_text("TOPIC orders")
        expect(latest.get_by_test_id("audit-client")).to_contain_text("ui")
        page.screenshot(path="/tmp/ui-audit.png", full_page=True)
