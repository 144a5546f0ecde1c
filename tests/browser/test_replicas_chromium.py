"""The replicas UI in a real (Debian) Chromium: a partition going leaderless shows up without a
reload. The same pages through Django's test client: tests/ui."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.browser.conftest import TIMEOUT_MS, chromium_page, require_chromium

pytestmark = pytest.mark.browser

ARS = "/internal/v1/alter-replica-state"


@pytest.mark.django_db(transaction=True)
def test_partition_goes_leaderless_without_reload(live_server: Any, internal_server: str) -> None:
    import httpx
    from playwright.sync_api import expect

    from controlplane.principals import principal_create
    from controlplane.runtime.controller import reset_runtime
    from controlplane.runtime.lease import cluster_get_or_create

    reset_runtime()
    executable = require_chromium()
    base = live_server.url
    admin_token = principal_create(name="admin", super_user=True)
    broker_token = principal_create(name="broker-a", broker=True)
    cluster_id = cluster_get_or_create().cluster_id
    internal = httpx.Client(
        base_url=internal_server, headers={"Authorization": f"Bearer {broker_token}"}, timeout=30
    )
    admin = httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {admin_token}"}, timeout=30
    )
    try:
        registration = {
            "broker_id": 1,
            "cluster_id": cluster_id,
            "incarnation_id": str(uuid.uuid4()),
            "listeners": [
                {
                    "name": "PLAINTEXT",
                    "host": "b1.local",
                    "port": 9092,
                    "security_protocol": "PLAINTEXT",
                }
            ],
            "rack": "rack-a",
            "pod": "broker",
            "log_dirs": [str(uuid.uuid4())],
        }
        response = internal.post("/internal/v1/broker-registration", json=registration)
        assert response.status_code == 200 and response.json()["error_code"] == 0, response.text
        epoch = response.json()["broker_epoch"]
        beat = internal.post(
            "/internal/v1/broker-heartbeat",
            json={"broker_id": 1, "broker_epoch": epoch, "current_metadata_offset": epoch},
        )
        assert beat.json()["is_fenced"] is False, beat.text
        created = admin.post(
            "/api/v1/create-topics",
            json={"topics": [{"name": "orders", "num_partitions": 2, "replication_factor": 1}]},
        )
        assert created.json()["topics"][0]["error_code"] == 0, created.text

        expect.set_options(timeout=TIMEOUT_MS)  # a loaded machine may need more than 5 s
        with chromium_page(executable) as page:
            page.goto(f"{base}/ui/topics/orders/")
            page.fill("input[name=name]", "admin")
            page.fill("input[name=token]", admin_token)
            page.click("button[type=submit]")
            expect(page).to_have_url(f"{base}/ui/topics/orders/")
            row = page.locator("#partition-0")
            expect(row.get_by_test_id("leader")).to_have_text("1")
            expect(row).not_to_have_class(re.compile(r"\bleaderless\b"))
            page.evaluate("window.__notReloaded = true")

            response = internal.post(
                ARS,
                json={
                    "broker_id": 1,
                    "broker_epoch": epoch,
                    "new_state": 1,
                    "reason": "disk failed",
                    "topics": [{"name": "orders", "partitions": [0]}],
                },
            )
            assert response.status_code == 200 and response.json()["error_code"] == 0, response.text
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
            created = admin.post(
                "/api/v1/create-topics",
                json={"topics": [{"name": "payments", "num_partitions": 1}]},
            )
            assert created.json()["topics"][0]["error_code"] == 0, created.text
            page.wait_for_timeout(4500)  # two refresh periods
            expect(page.locator("#topic-filter-q")).to_have_value("pay")
            expect(page.locator("tr[data-topic]")).to_have_count(1)
            page.press("#topic-filter-q", "Enter")
            expect(page).to_have_url(f"{base}/ui/topics/?q=pay")
            expect(page.locator("tr[data-topic]")).to_have_attribute("data-topic", "payments")
            assert not page.locator("tr.leaderless").count()
    finally:
        expect.set_options(timeout=None)  # back to Playwright's default
        internal.close()
        admin.close()
