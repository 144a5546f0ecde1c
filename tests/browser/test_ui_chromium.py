"""The UI in a real (Debian) Chromium: log in, watch brokers appear and change without reloads."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from tests.browser.conftest import chromium_page, require_chromium

pytestmark = pytest.mark.browser

SCREENSHOT = "/tmp/ui-brokers.png"
DETAIL_SCREENSHOT = "/tmp/ui-broker-detail.png"


def test_brokers_appear_and_change_without_reload(
    live_server: Any, internal_server: str, transactional_db: None
) -> None:
    from controlplane.runtime.controller import reset_runtime

    reset_runtime()
    executable = require_chromium()  # in the test body: a missing browser fails, not errors
    with chromium_page(executable) as page:
        check_ui(live_server.url, internal_server, page)


def check_ui(base: str, internal_base: str, page: Any) -> None:
    from controlplane.principals import principal_create
    from controlplane.runtime.lease import cluster_get_or_create

    admin_token = principal_create(name="admin", super_user=True)
    broker_token = principal_create(name="broker-a", broker=True)
    cluster_id = cluster_get_or_create().cluster_id
    internal = httpx.Client(
        base_url=internal_base, headers={"Authorization": f"Bearer {broker_token}"}, timeout=30
    )
    try:
        # Each listener serves its own paths: no UI on the internal port, no brokers' API on
        # the public one.
        assert internal.get("/ui/").status_code == 404
        wrong_door = httpx.get(f"{base}/internal/v1/metadata", timeout=30)
        assert wrong_door.status_code == 404 and wrong_door.json()["error_code"] == 42
        check_pages(base, page, internal, admin_token=admin_token, cluster_id=cluster_id)
    finally:
        internal.close()


def check_pages(
    base: str, page: Any, internal: httpx.Client, *, admin_token: str, cluster_id: str
) -> None:
    from playwright.sync_api import expect

    # Log in through the form; the overview comes next.
    page.goto(f"{base}/ui/")
    expect(page).to_have_url(re.compile(r"/ui/login/\?next=/ui/$"))
    page.screenshot(path="/tmp/ui-login.png")
    page.fill("input[name=name]", "admin")
    page.fill("input[name=token]", "wrong-token")
    page.click("button[type=submit]")
    expect(page.locator(".alert-danger")).to_have_text("Invalid principal name or token.")
    page.fill("input[name=token]", admin_token)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/ui/")
    expect(page.locator("h1")).to_have_text("Cluster overview")
    expect(page.get_by_test_id("cluster-id")).to_have_text(cluster_id)
    expect(page.get_by_test_id("broker-total")).to_have_text("0")
    page.screenshot(path="/tmp/ui-overview.png", full_page=True)
    expect(page.locator("link[rel=stylesheet]")).to_have_attribute(
        "href", "/static/frontend/ui.css"
    )

    # The brokers page, empty; mark the window to prove later changes arrive without a reload.
    page.click("nav >> text=Brokers")
    expect(page).to_have_url(f"{base}/ui/brokers/")
    expect(page.locator("#ui-fragment")).to_contain_text("No brokers have registered yet.")
    page.evaluate("window.__notReloaded = true")
    loads: list[str] = []
    page.on("load", lambda: loads.append(page.url))

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

    state = page.locator("#broker-1 [data-testid=state]")
    expect(state).to_have_text("FENCED")
    expect(state).to_have_class(re.compile(r"\bbadge-danger\b"))
    # Registered but fenced: no heartbeat has said how its dir is (issue 25: not "online").
    expect(page.locator("#broker-1 [data-testid=log-dirs]")).to_have_text("1 unknown (fenced)")

    response = internal.post(
        "/internal/v1/broker-heartbeat",
        json={
            "broker_id": 1,
            "broker_epoch": epoch,
            "current_metadata_offset": epoch,
            "want_fence": False,
            "want_shut_down": False,
        },
    )
    assert response.status_code == 200 and response.json()["is_fenced"] is False, response.text
    expect(state).to_have_text("UNFENCED")
    expect(state).to_have_class(re.compile(r"\bbadge-ok\b"))
    expect(page.locator("#broker-1 [data-testid=log-dirs]")).to_have_text("1 online")
    expect(page.locator("#broker-1")).to_contain_text(re.compile(r"\d+ s ago"))
    # One time zone on every page, said: the refresh clock is UTC like the tables.
    expect(page.locator("#ui-updated")).to_have_text(re.compile(r"^updated \d\d:\d\d:\d\d UTC$"))
    assert page.evaluate("window.__notReloaded") is True
    assert loads == []
    page.screenshot(path=SCREENSHOT, full_page=True)

    # The detail page lists the broker's records, most recent first.
    page.click("#broker-1 a")
    expect(page).to_have_url(f"{base}/ui/brokers/1/")
    expect(page.locator("h1")).to_contain_text("Broker 1")
    types = page.get_by_test_id("record-type")
    expect(types.first).to_have_text("BrokerRegistrationChangeRecord")
    expect(types.last).to_have_text("RegisterBrokerRecord")
    expect(page.get_by_test_id("epoch")).to_have_text(str(epoch))
    page.screenshot(path=DETAIL_SCREENSHOT, full_page=True)
