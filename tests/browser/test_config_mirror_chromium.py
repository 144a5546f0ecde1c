"""Issue 25, points 7 and 10, in a real (Debian) Chromium, as a person sees them: a config diff
with the effective value before ("7 d (default)"), a red data-loss warning in view; the
MirrorMaker configuration edited in a text area, its errors, its diff, stored; and the
heartbeats-only flow drawn grey and labelled disabled, not as a red "down" arrow."""

from __future__ import annotations

import pytest

from tests.browser.fixtures import (
    ControlPlane,
    LiveCluster,
    chromium_page,
    logged_in,
    require_chromium,
)

pytestmark = pytest.mark.browser

TEXT = """clusters = A, B
A.bootstrap.servers = http://127.0.0.1:18001
B.bootstrap.servers = http://127.0.0.1:18002
A->B.enabled = true
A->B.topics = orders.*
"""
RED = "rgb(161, 39, 39)"  # the "down" arrow's colour
GREY = "rgb(138, 148, 160)"  # a disabled flow's


@pytest.mark.django_db(transaction=True)
def test_the_config_diff_shows_the_effective_value_and_the_data_loss(
    live_cluster: LiveCluster,
) -> None:
    from playwright.sync_api import expect

    live_cluster.brokers.register(1)
    live_cluster.create_topics({"name": "orders", "num_partitions": 1, "replication_factor": 1})

    with logged_in(live_cluster, "/ui/configs/topics/orders/edit/", height=900) as page:
        page.fill("input[name='value__retention.ms']", "86400000")
        page.get_by_test_id("review-changes").click()
        diff = page.locator("tr[data-diff='retention.ms']")
        expect(diff.get_by_test_id("diff-old")).to_have_text("7 d (default)")
        expect(diff.get_by_test_id("diff-new")).to_have_text("1 d")
        warning = page.locator("[data-testid=consequence][data-config='retention.ms']")
        expect(warning).to_be_visible()
        expect(warning).to_contain_text("Data loss:")
        expect(warning).to_contain_text("permanently deletes data older than 1 d")
        # Loud: on a red background, above the diff, in the first screen without scrolling.
        colours = warning.evaluate(
            "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]"
        )
        red_bg = [int(x) for x in colours[0][4:-1].split(",")[:3]]
        assert red_bg[0] > red_bg[1] and red_bg[0] > red_bg[2], colours
        box = warning.bounding_box()
        table = page.get_by_test_id("config-diff").bounding_box()
        assert box is not None and table is not None
        assert box["y"] < table["y"] and box["y"] + box["height"] <= 900
        page.screenshot(path="/tmp/ui-config-effective-diff.png", full_page=True)


@pytest.mark.django_db(transaction=True)
def test_edit_the_mirror_configuration_and_see_the_disabled_flow(
    control_plane: ControlPlane,
) -> None:
    from playwright.sync_api import expect

    from mirror.members import local_members
    from mirror.selectors import mirror_config_get

    local_members().clear()
    executable = require_chromium()
    base = control_plane.base
    control_plane.store_mirror_config(TEXT)

    with chromium_page(executable, height=1000) as page:
        control_plane.login(page, "/ui/mirror/")
        # B->A only emits heartbeats: grey, dotted, labelled disabled; A->B (nobody runs it)
        # stays red and down.
        disabled = page.locator('[data-testid=flow-arrow][data-flow="B->A"]')
        expect(disabled.locator("text")).to_have_text("B->A · disabled (heartbeats only)")
        expect(disabled.locator("text")).to_be_visible()
        stroke = disabled.locator("path[marker-end]").evaluate("e => getComputedStyle(e).stroke")
        assert stroke == GREY, stroke
        down = page.locator('[data-testid=flow-arrow][data-flow="A->B"] path[marker-end]')
        assert down.evaluate("e => getComputedStyle(e).stroke") == RED
        label_fill = disabled.locator("text").evaluate("e => getComputedStyle(e).fill")
        assert label_fill == GREY, label_fill
        expect(page.locator("#flow-B-A [data-testid=health]")).to_have_text(
            "disabled (heartbeats only)"
        )
        page.screenshot(path="/tmp/ui-mirror-disabled-flow.png", full_page=True)

        page.get_by_test_id("edit-mirror-config").click()
        expect(page).to_have_url(f"{base}/ui/mirror/config/")
        area = page.locator("textarea[name=text]")
        expect(area).to_be_visible()
        assert area.input_value().strip() == TEXT.strip()
        width = area.evaluate("e => e.getBoundingClientRect().width")
        assert width > 600, width  # a text area to edit properties in, not a one-line box

        area.fill(TEXT + "C->A.enabled = true\nA->B.tasks.max = many\n")
        page.get_by_test_id("review-config").click()
        errors = page.get_by_test_id("kafka-error")
        expect(errors).to_have_count(2)
        expect(errors.nth(0)).to_contain_text("INVALID_CONFIG")
        expect(page.get_by_test_id("kafka-errors")).to_contain_text("C->A.enabled")
        expect(page.get_by_test_id("kafka-errors")).to_contain_text("A->B.tasks.max")

        new_text = TEXT.replace("orders.*", "orders.*, payments.*") + "B->A.enabled = true\n"
        page.locator("textarea[name=text]").fill(new_text)
        page.get_by_test_id("review-config").click()
        changed = page.locator('tr[data-key="A->B.topics"]')
        expect(changed.get_by_test_id("key-change")).to_have_text("changed")
        expect(changed.get_by_test_id("key-new")).to_have_text("orders.*, payments.*")
        expect(
            page.locator('tr[data-key="B->A.enabled"]').get_by_test_id("key-change")
        ).to_have_text("added")
        added_line = page.locator("[data-testid=mirror-line-diff] .diff-add").first
        expect(added_line).to_be_visible()
        green = added_line.evaluate("e => getComputedStyle(e).backgroundColor")
        rgb = [int(x) for x in green[4:-1].split(",")[:3]]
        assert rgb[1] > rgb[0] and rgb[1] > rgb[2], green  # an added line reads green
        page.screenshot(path="/tmp/ui-mirror-config-diff.png", full_page=True)
        assert mirror_config_get()[0] == TEXT  # type: ignore[index]

        page.get_by_test_id("store-config").click()
        expect(page).to_have_url(f"{base}/ui/mirror/")
        expect(page.get_by_test_id("messages")).to_contain_text(
            "Stored the MirrorMaker configuration."
        )
        assert mirror_config_get()[0] == new_text  # type: ignore[index]
        # B->A is enabled now: no longer drawn disabled.
        expect(page.locator('[data-testid=flow-arrow][data-flow="B->A"]')).not_to_have_attribute(
            "data-health", "disabled"
        )
