"""Issue 25, point 10 (smaller), as a person sees it in a real (Debian) Chromium: the canary
page's version choices and the fleet's version COMPLETE, the bake time as a duration; the
effective-quota lookup; a new token's HMAC copied by its button and not shown again on reload;
an audit report's progress before the report arrives, then back to the list; state colours by
meaning. The same pages through Django's test client: tests/ui/test_ui_small_second_pass.py."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.browser.fixtures import LiveCluster, chromium_page, require_chromium
from tests.browser.test_accessibility_chromium import describe, violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def register(cluster: LiveCluster, broker_id: int, pod: str, version: str | None) -> None:
    cluster.brokers.register(broker_id, host="b", pod=pod, log_dirs=[], software_version=version)


def login(cluster: LiveCluster, page: Any, path: str) -> None:
    """Log in as the admin at `path`, and see it (its query string aside)."""
    from playwright.sync_api import expect

    cluster.login(page, path)
    expect(page).to_have_url(re.compile(re.escape(f"{cluster.base}{path.split('?')[0]}")))


def screenshot(page: Any, name: str) -> None:
    """For the README, when CP_SCREENSHOTS_DIR names where (as the other browser tests do);
    and the page as it stands has no serious or critical axe-core violation."""
    found = violations(page)
    assert not found, describe(found)
    folder = os.environ.get("CP_SCREENSHOTS_DIR")
    if folder:
        page.screenshot(path=os.path.join(folder, name), full_page=True)


def rgb(css: str) -> tuple[int, int, int]:
    found = re.findall(r"\d+", css)
    return int(found[0]), int(found[1]), int(found[2])


def test_canary_versions_the_fleets_version_and_the_effective_quota(
    live_cluster: LiveCluster,
) -> None:
    from playwright.sync_api import expect

    executable = require_chromium()
    for broker_id in range(3):
        register(live_cluster, broker_id, "broker", "3.9.0")
    register(live_cluster, 100, "canary-broker", "3.9.1")
    quota = live_cluster.api.post(
        "/api/v1/alter-client-quotas",
        json={
            "entries": [
                {
                    "entity": [{"entity_type": "user", "entity_name": None}],
                    "ops": [{"key": "consumer_byte_rate", "value": 2097152, "remove": False}],
                }
            ]
        },
    )
    assert quota.json()["entries"][0]["error_code"] == 0, quota.text
    with chromium_page(executable, height=1100) as page:
        login(live_cluster, page, "/ui/canary/")
        # The canary's version is checked by default: baking, its bake time a duration.
        expect(page.get_by_test_id("rollout-verdict")).to_have_text("HOLD")
        expect(page.get_by_test_id("bake-time")).to_contain_text(
            re.compile(r"Baking for \d+ (ms|s) of the 1 h 0 min bake time")
        )
        expect(page.get_by_test_id("rollout-evidence").locator("caption")).to_be_visible()
        # The versions the brokers report are offered; the fleet's is not a rollout.
        choices = page.get_by_test_id("version-choices")
        expect(choices).to_be_visible()
        expect(choices).to_contain_text("3.9.0 (3 brokers)")
        expect(choices).to_contain_text("3.9.1 (1 broker, 1 canary)")
        choices.locator('[data-version-choice="3.9.0"]').click()
        expect(page.get_by_test_id("rollout-verdict")).to_have_text("COMPLETE")
        expect(page.get_by_test_id("rollout-explanation")).to_contain_text(
            "the fleet's current version"
        )
        screenshot(page, "canary-fleet-version.png")
        verdict = page.get_by_test_id("rollout-verdict")
        green = rgb(verdict.evaluate("e => getComputedStyle(e).color"))
        assert green[1] > green[0] and green[1] > green[2], green
        # Free text still works, with the known versions as suggestions.
        options = page.locator("#known-versions option")
        expect(options).to_have_count(2)
        page.fill("#rollout-version", "9.9.9")
        page.click("form.filters button[type=submit]")
        expect(page.get_by_test_id("rollout-verdict")).to_have_text("NOT_STARTED")

        # Which quota applies to (alice, app)? The default user's, said so.
        page.goto(f"{live_cluster.base}/ui/quotas/")
        lookup = page.get_by_test_id("effective-quota")
        lookup.get_by_label("User").fill("alice")
        lookup.get_by_label("Client id").fill("app")
        lookup.get_by_role("button", name="Look up").click()
        row = page.locator('[data-testid="effective-table"] tr[data-quota="consumer_byte_rate"]')
        expect(row.get_by_test_id("effective-entity")).to_have_text("user=<default>")
        expect(row.get_by_test_id("effective-value")).to_have_text("2 MiB/s")
        expect(lookup.get_by_label("User")).to_have_value("alice")
        screenshot(page, "quota-effective.png")


def test_a_new_tokens_hmac_is_copied_by_its_button_and_a_reload_creates_nothing(
    live_cluster: LiveCluster, token_secret_key: str
) -> None:
    from playwright.sync_api import expect

    from security.models import DelegationToken

    executable = require_chromium()
    with chromium_page(executable) as page:
        page.context.grant_permissions(
            ["clipboard-read", "clipboard-write"], origin=live_cluster.base
        )
        login(live_cluster, page, "/ui/tokens/new/")
        page.locator("form.admin-form button[type=submit]").click()
        expect(page).to_have_url(f"{live_cluster.base}/ui/tokens/created/")
        hmac = page.get_by_test_id("token-hmac").inner_text().strip()
        assert len(hmac) > 40
        button = page.get_by_test_id("copy-hmac")
        expect(button).to_be_visible()
        button.click()
        expect(button).to_have_attribute("data-copied", "1")
        expect(button).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == hmac
        screenshot(page, "token-created.png")
        page.get_by_test_id("copy-token-id").click()
        token_id = page.get_by_test_id("token-id").inner_text().strip()
        assert page.evaluate("navigator.clipboard.readText()") == token_id
        # Reloading the result page neither submits again nor shows the HMAC again.
        page.reload()
        expect(page.get_by_test_id("token-gone")).to_be_visible()
        expect(page.get_by_test_id("token-hmac")).to_have_count(0)
        assert hmac not in page.content()
        assert DelegationToken.objects.count() == 1


def test_a_report_shows_progress_then_itself_and_states_have_their_colours(
    live_cluster: LiveCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    from audit.models import AuditExport
    from audit.reports import ReportError
    from controlplane.runtime.lease import now_ms
    from frontend.views import audit as audit_views

    executable = require_chromium()
    # Spark is not what is tested here: the report is made when the test lets it be, so the
    # page is seen while it waits (no sleep: an event).
    release = threading.Event()
    made = tmp_path / "report.html"
    made.write_text("<!DOCTYPE html><title>r</title><h1 id=done>Admin activity report</h1>")

    def slow_report(wanted: Any, *, fmt: str = "json") -> Path:
        if wanted.name == "forwarding":
            raise ReportError("The forwarding report could not be made: the export is gone")
        assert release.wait(60), "the test never let the report be made"
        return made

    monkeypatch.setattr(audit_views, "audit_report", slow_report)
    monkeypatch.setattr(
        audit_views,
        "latest_export",
        lambda: {"commit": 3, "committed_ms": now_ms(), "offset": 10, "datasets": {}},
    )
    for state in ("SUCCEEDED", "FAILED", "RUNNING"):
        AuditExport.objects.create(
            path=str(tmp_path / "audit"),
            requested_by="User:admin",
            state=state,
            created_ms=now_ms(),
            message="disk full" if state == "FAILED" else "",
        )
    with chromium_page(executable) as page:
        login(live_cluster, page, "/ui/audit/reports/")
        form = page.get_by_test_id("report-admin-activity")
        form.get_by_role("button", name="Open report").click()
        progress = page.get_by_test_id("report-progress")
        expect(progress).to_be_visible()  # at once, while the report is being made
        expect(page.get_by_test_id("report-progress-bar")).to_be_visible()
        expect(progress.locator("[data-report-elapsed]")).to_have_text(re.compile(r"[1-9]\d* s"))
        expect(page.get_by_test_id("report-back")).to_be_visible()
        screenshot(page, "audit-report-progress.png")
        assert "progress=1" in page.url
        release.set()
        expect(page.locator("#done")).to_have_text("Admin activity report")
        assert "progress" not in page.url and "format=html" in page.url
        page.go_back()  # the progress page was replaced: back is the reports list
        expect(page).to_have_url(f"{live_cluster.base}/ui/audit/reports/")
        # A report that cannot be made says why, in place of the progress.
        page.get_by_test_id("report-forwarding").get_by_role("button", name="Open report").click()
        problem = page.get_by_test_id("report-progress").get_by_test_id("report-problem")
        expect(problem).to_have_text("The forwarding report could not be made: the export is gone")
        expect(page.get_by_test_id("report-progress-bar")).to_be_hidden()

        # Export states by meaning: green, red, and blue (never orange) while under way.
        page.goto(f"{live_cluster.base}/ui/audit/exports/")
        colours = {}
        for state in ("SUCCEEDED", "FAILED", "RUNNING"):
            badge = page.locator(f'tr[data-state="{state}"] [data-testid="export-state"]')
            colours[state] = rgb(badge.evaluate("e => getComputedStyle(e).backgroundColor"))
        r, g, b = colours["SUCCEEDED"]
        assert g > r and g > b, colours
        r, g, b = colours["FAILED"]
        assert r > g and r > b, colours
        r, g, b = colours["RUNNING"]
        assert b > r and b > g, colours
        screenshot(page, "audit-exports.png")
        # Outcomes on the audit trail: SUCCESS green, FAILED red.
        live_cluster.alter_cluster_config("canary.bake.time.ms", "60000")
        refused = live_cluster.set_cluster_config("canary.bake.time.ms", "soon")
        assert refused["error_code"] != 0, refused
        page.goto(f"{live_cluster.base}/ui/audit/")
        for outcome, channel in (("SUCCESS", 1), ("FAILED", 0)):
            shown = page.locator(f'tr[data-outcome="{outcome}"] [data-testid="audit-outcome"]')
            colour = rgb(shown.first.evaluate("e => getComputedStyle(e).color"))
            assert colour[channel] == max(colour) and colour[2] < colour[channel], (outcome, colour)
