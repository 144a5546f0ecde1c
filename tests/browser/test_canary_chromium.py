"""The canary page (KIP-1095) in a real (Debian) Chromium: a topic whose canary partitions could
not be isolated stands out with why, the rollout verdict is shown, and a new canary broker's
arrival shows up without a reload. The same page through Django's test client: tests/ui."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from tests.browser.conftest import TIMEOUT_MS, chromium_page, require_chromium

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_the_canary_page_in_chromium(live_server: Any, internal_server: str, tmp_path) -> None:
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

    def register(broker_id: int, pod: str, version: str) -> None:
        response = internal.post(
            "/internal/v1/broker-registration",
            json={
                "broker_id": broker_id,
                "cluster_id": cluster_id,
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": "b",
                        "port": 9092,
                        "security_protocol": "PLAINTEXT",
                    }
                ],
                "rack": None,
                "pod": pod,
                "log_dirs": [],
                "software_version": version,
            },
        )
        assert response.json()["error_code"] == 0, response.text
        epoch = response.json()["broker_epoch"]
        beat = internal.post(
            "/internal/v1/broker-heartbeat",
            json={"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": epoch},
        )
        assert beat.json()["is_fenced"] is False, beat.text

    try:
        for broker_id in range(3):
            register(broker_id, "broker", "1.0")
        register(100, "canary-broker", "1.1")
        created = admin.post(
            "/api/v1/create-topics",
            json={
                "topics": [
                    {
                        "name": "orders",
                        "num_partitions": 4,
                        "replication_factor": 2,
                        "configs": [{"name": "percent.canary.partition", "value": "50"}],
                    }
                ]
            },
        )
        answer = created.json()["topics"][0]
        assert answer["error_code"] == 0 and answer["canary_isolated"] is False, created.text

        expect.set_options(timeout=TIMEOUT_MS)
        with chromium_page(executable, height=1100) as page:
            page.goto(f"{base}/ui/canary/")
            page.fill("input[name=name]", "admin")
            page.fill("input[name=token]", admin_token)
            page.click("button[type=submit]")
            expect(page).to_have_url(f"{base}/ui/canary/")
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
            if os.environ.get("CP_SCREENSHOT_DIR"):
                page.screenshot(
                    path=os.path.join(os.environ["CP_SCREENSHOT_DIR"], "canary.png"),
                    full_page=True,
                )
            # The topic page marks the canary partitions that are not isolated.
            page.goto(f"{base}/ui/topics/orders/")
            expect(page.locator("#partition-0").get_by_test_id("canary")).to_contain_text(
                "not isolated"
            )
    finally:
        internal.close()
        admin.close()
