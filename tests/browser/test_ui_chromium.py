"""The UI in a real (Debian) Chromium: log in, watch brokers appear and change without reloads."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.browser.fixtures import LiveCluster, chromium_page, require_chromium, submit_login

pytestmark = pytest.mark.browser

SCREENSHOT = "/tmp/ui-brokers.png"
DETAIL_SCREENSHOT = "/tmp/ui-broker-detail.png"


def test_brokers_appear_and_change_without_reload(
    live_cluster: LiveCluster, transactional_db: None
) -> None:
    executable = require_chromium()  # in the test body: a missing browser fails, not errors
    with chromium_page(executable) as page:
        check_ui(live_cluster, page)


def check_ui(cluster: LiveCluster, page: Any) -> None:
    # Each listener serves its own paths: no UI on the internal port, no brokers' API on the
    # public one.
    assert cluster.internal.get("/ui/").status_code == 404
    wrong_door = httpx.get(f"{cluster.base}/internal/v1/metadata", timeout=30)
    assert wrong_door.status_code == 404 and wrong_door.json()["error_code"] == 42
    check_pages(cluster, page)


def check_pages(cluster: LiveCluster, page: Any) -> None:
    from playwright.sync_api import expect

    base, brokers = cluster.base, cluster.brokers
    # Log in through the form; the overview comes next.
    page.goto(f"{base}/ui/")
    expect(page).to_have_url(re.compile(r"/ui/login/\?next=/ui/$"))
    page.screenshot(path="/tmp/ui-login.png")
    submit_login(page, "wrong-token")
    expect(page.locator(".alert-danger")).to_have_text("Invalid principal name or token.")
    submit_login(page, cluster.admin_token)
    expect(page).to_have_url(f"{base}/ui/")
    expect(page.locator("h1")).to_have_text("Cluster overview")
    expect(page.get_by_test_id("cluster-id")).to_have_text(cluster.cluster_id)
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

    epoch = brokers.register(1, heartbeat=False, host="b1.local", rack="rack-a")

    state = page.locator("#broker-1 [data-testid=state]")
    expect(state).to_have_text("FENCED")
    expect(state).to_have_class(re.compile(r"\bbadge-danger\b"))
    # Registered but fenced: no heartbeat has said how its dir is (issue 25: not "online").
    expect(page.locator("#broker-1 [data-testid=log-dirs]")).to_have_text("1 unknown (fenced)")

    answer = brokers.heartbeat(1, want_fence=False, want_shut_down=False)
    assert answer["is_fenced"] is False, answer
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
