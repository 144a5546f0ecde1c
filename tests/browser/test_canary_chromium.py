"""The canary page (KIP-1095) in a real (Debian) Chromium: a topic whose canary partitions could
not be isolated stands out with why, the rollout verdict is shown, and a new canary broker's
arrival shows up without a reload. The same page through Django's test client: tests/ui."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser.fixtures import LiveCluster, logged_in

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_the_canary_page_in_chromium(live_cluster: LiveCluster, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    base = live_cluster.base

    def register(broker_id: int, pod: str, version: str) -> None:
        live_cluster.brokers.register(
            broker_id, host="b", pod=pod, log_dirs=[], software_version=version
        )

    for broker_id in range(3):
        register(broker_id, "broker", "1.0")
    register(100, "canary-broker", "1.1")
    (answer,) = live_cluster.create_topics(
        {
            "name": "orders",
            "num_partitions": 4,
            "replication_factor": 2,
            "configs": [{"name": "percent.canary.partition", "value": "50"}],
        }
    )
    assert answer["canary_isolated"] is False, answer

    with logged_in(live_cluster, "/ui/canary/", height=1100) as page:
        row = page.locator('tr[data-topic="orders"]')
        expect(row).to_have_class("not-isolated")
        expect(row.locator('li[data-partition="0"]')).to_contain_text("not canary brokers")
        expect(page.get_by_test_id("isolation-reason")).to_contain_text(
            "Only 1 unfenced canary broker(s)"
        )
        expect(page.get_by_test_id("rollout-verdict")).to_have_text("HOLD")
        expect(page.get_by_test_id("rollout-explanation")).to_contain_text("still baking")
        # A second canary broker arrives: the page refreshes itself and says so.
        register(101, "canary-broker", "1.1")
        expect(page.get_by_test_id("canary-brokers")).to_contain_text("2 unfenced")
        expect(page.locator('[data-pod="canary-broker"] [data-version="1.1"]')).to_have_text(
            "1.1: 2"
        )
        page.screenshot(path=str(tmp_path / "canary.png"), full_page=True)
        if os.environ.get("CP_SCREENSHOTS_DIR"):
            page.screenshot(
                path=os.path.join(os.environ["CP_SCREENSHOTS_DIR"], "canary.png"),
                full_page=True,
            )
        # The topic page marks the canary partitions that are not isolated.
        page.goto(f"{base}/ui/topics/orders/")
        expect(page.locator("#partition-0").get_by_test_id("canary")).to_contain_text(
            "not isolated"
        )
