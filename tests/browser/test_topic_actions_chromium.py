"""Issue 25, points 4 and 6, as a person sees them in Debian's Chromium: a preferred election on
a 320-partition topic with two degraded brokers previews and summarises in a page of modest
height (the per-partition details folded, opened on a click), and the create form shows the
cluster's defaults, names every bad config, warns in red of min.insync.replicas above the
replication factor (holding the create until ticked) and shows the placement."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.fixtures import Brokers, LiveCluster, chromium_page, require_chromium

pytestmark = pytest.mark.browser

PARTITIONS = 320
MODEST_PX = 2200  # the page with every group folded; 320 error lines were ~7,000 px


def rejoin_some(brokers: Brokers, topic: str, broker_id: int, limit: int) -> int:
    """The leaders take `broker_id` back into the ISR of `limit` of its preferred partitions."""
    from replicas.models import Partition

    done = 0
    for p in Partition.objects.filter(topic__name=topic).order_by("partition_index"):
        if done == limit or p.replicas[0] != broker_id or broker_id in p.isr:
            continue
        brokers.take_back(topic, p, broker_id)
        done += 1
    return done


def page_height(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollHeight"))


@pytest.fixture
def console(live_cluster: LiveCluster) -> Any:
    executable = require_chromium()
    with chromium_page(executable, height=900) as page:
        live_cluster.login(page, "/ui/topics/")
        yield live_cluster.base, page, live_cluster.brokers, live_cluster.api


@pytest.mark.django_db(transaction=True)
def test_a_preferred_election_on_a_degraded_topic_fits_on_a_page(console: Any) -> None:
    from playwright.sync_api import expect

    from replicas.models import Partition

    base, page, brokers, api = console
    for broker_id in (1, 2, 3, 4):
        brokers.register(broker_id)
    made = api.post(
        "/api/v1/create-topics",
        json={
            "topics": [
                {
                    "name": "payments",
                    "num_partitions": PARTITIONS,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "validate_only": False,
        },
    )
    assert made.status_code == 200 and made.json()["topics"][0]["error_code"] == 0, made.text
    # Broker 1 bounces and is back in the ISR of 10 of its partitions only; broker 2 is fenced.
    brokers.heartbeat(1, want_fence=True)
    brokers.heartbeat(1)
    assert rejoin_some(brokers, "payments", 1, 10) == 10
    brokers.heartbeat(2, want_fence=True)
    # Where broker 2 led, broker 1 took its preferred partitions back already (in the ISR).
    rows = list(Partition.objects.filter(topic__name="payments"))
    elected = sum(1 for p in rows if p.preferred_leader == 1 and 1 in p.isr and p.leader != 1)
    not_possible = sum(
        1 for p in rows if p.preferred_leader == 2 or (p.preferred_leader == 1 and 1 not in p.isr)
    )
    not_needed = PARTITIONS - elected - not_possible
    assert elected and not_possible > 100

    page.goto(f"{base}/ui/topics/payments/elect/?type=PREFERRED")
    preview = page.get_by_test_id("election-preview")
    expect(preview.get_by_test_id("count-elected")).to_have_text(f"{elected} would move")
    expect(preview.get_by_test_id("count-not-possible")).to_have_text(
        f"{not_possible} not possible"
    )
    expect(preview).to_contain_text("its broker is fenced")
    expect(preview).to_contain_text("not in the ISR (still catching up)")
    assert page_height(page) < MODEST_PX, page_height(page)

    page.get_by_test_id("confirm").click()
    result = page.get_by_test_id("election-outcome")
    expect(result).to_be_visible()
    expect(page.get_by_test_id("election-headline")).to_contain_text(
        f"{elected} partition{'s' if elected > 1 else ''} elected, {not_needed} needed no "
        "election, "
        f"{not_possible} could not be elected"
    )
    expect(page.get_by_test_id("kafka-error")).to_have_count(0)
    folded = page_height(page)
    assert folded < MODEST_PX, folded
    # The summary and its red count are what a person sees first, above the fold.
    count = result.get_by_test_id("count-not-possible")
    expect(count).to_be_in_viewport()
    red = count.evaluate("e => getComputedStyle(e).backgroundColor")
    plain = result.get_by_test_id("count-not-needed").evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert red != plain, (red, plain)

    # The fenced broker's group opens on a click, listing its partitions one a line.
    fenced = result.locator("tr[data-outcome='not possible']", has_text="its broker is fenced")
    details = result.get_by_test_id("election-details").nth(0)
    expect(fenced).to_have_count(1)
    expect(details.locator("li").first).not_to_be_visible()
    details.locator("summary").click()
    expect(details.locator("li").first).to_be_visible()
    assert page_height(page) > folded
    led = {p.partition_index: p for p in Partition.objects.filter(topic__name="payments")}
    assert sum(1 for p in led.values() if p.preferred_leader == 1 and p.leader == 1) == 10


@pytest.mark.django_db(transaction=True)
def test_create_topic_warns_names_and_previews(console: Any) -> None:
    from playwright.sync_api import expect

    base, page, brokers, api = console
    for broker_id in (1, 2, 3):
        brokers.register(broker_id)
    page.goto(f"{base}/ui/topics/new/")
    # Empty counts say what they become.
    expect(page.locator("#id_num_partitions")).to_have_attribute("placeholder", "1")
    expect(page.get_by_test_id("topic-create-form")).to_contain_text(
        "empty: the cluster's num.partitions, 1"
    )

    page.fill("#id_name", "orders")
    page.fill("#id_replication_factor", "2")
    page.fill("#id_configs", "min.insync.replicas=3\nno.such.config=1\nretention.ms=abc")
    page.get_by_test_id("check-topic").click()
    errors = page.locator(".field-error")
    expect(errors).to_have_count(2)
    expect(errors.nth(0)).to_contain_text("Unknown topic config name: no.such.config")
    expect(errors.nth(1)).to_contain_text("Invalid value abc for configuration retention.ms")

    page.fill("#id_configs", "min.insync.replicas=3")
    page.get_by_test_id("check-topic").click()
    warning = page.get_by_test_id("create-warning")
    expect(warning).to_contain_text("producers with acks=all would be refused")
    box = page.get_by_test_id("create-warnings")
    expect(box).to_be_visible()
    colour = box.evaluate("e => getComputedStyle(e).backgroundColor")
    body = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert colour != body, colour
    expect(page.get_by_test_id("partitions-defaulted")).to_be_visible()
    expect(page.get_by_test_id("placement-summary")).to_contain_text(
        "1 partition, 2 replicas each, over 3 brokers"
    )
    expect(page.get_by_test_id("placement-broker")).to_have_count(3)
    expect(page.locator("[data-testid=config-given]")).to_contain_text("min.insync.replicas")

    # "Create" is held by the warning until "create it anyway" is ticked.
    page.get_by_test_id("create-topic").click()
    expect(page.get_by_test_id("create-warning")).to_be_visible()
    assert api.get("/api/v1/topics/orders").status_code == 404
    page.get_by_test_id("accept-warnings").check()
    page.get_by_test_id("create-topic").click()
    expect(page).to_have_url(f"{base}/ui/topics/orders/")
    expect(page.get_by_test_id("messages")).to_contain_text("would be refused")
    assert api.get("/api/v1/topics/orders").status_code == 200
