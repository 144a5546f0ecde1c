"""The console fits the window, in Debian's Chromium at 1280 and 1920 px, light and dark.

What an operator sees on the topics and brokers lists of a cluster with long topic names and
pod names: no sideways scroll (of the page or of a table), a topic's name on one line or broken
only after a `-`, `.` or `_` (never "paymen/ts-/events"), a pod's name never letter by letter,
the rightmost columns ("Last heartbeat", "Metadata offset", `min.insync.replicas`) inside the
window, and the wide pages using the window's width at 1920 px. In the dark scheme the page is
dark with light text, and the charts draw their grid and ticks in the scheme's colours.

Screenshots for the README go to CP_SCREENSHOTS_DIR when it is set.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.browser.fixtures import (
    LiveCluster,
    chromium_browser,
    login,
    new_page,
    require_chromium,
)

pytestmark = pytest.mark.browser

WIDTHS = (1280, 1920)
SCHEMES: tuple[Literal["light", "dark"], ...] = ("light", "dark")
TOPICS = (
    "payments-events-eu-west-1.v2",
    "com.example.orders.ledger-entries.v3",
    "inventory_snapshots_compacted_eu_central_1",
    "clickstream-enriched-sessions-by-user-agent-2024",
    "orders",
)
# No `-`, `.` or `_` to break at, longer than any column: it alone may break inside a word (the
# last resort), and must not widen the table past the window.
UNBREAKABLE = "auditlogcompacted" + "0123456789" * 9
# KIP-1095's pods: the kinds a broker runs as (`canary-broker` was drawn letter by letter).
PODS = {1: "broker", 2: "broker", 3: "broker", 4: "canary-broker", 5: "canary-broker"}
# Where a name may wrap: after these, as a person reads a dotted or dashed name.
BREAKS = "-._"

# The lines a cell's text is drawn on, as (character, line top) per character: a line break
# between two characters shows as the next one's top moving down.
CHARACTER_TOPS = """
element => {
  const out = [];
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getBoundingClientRect();
      if (rect.width > 0) out.push([node.data[i], Math.round(rect.top)]);
    }
  }
  return out;
}
"""

# What fits: the page and each table against its box; every header cell's box on screen.
FIT = """
() => {
  const tables = [...document.querySelectorAll('main table.table')].map(t => {
    const wrap = t.closest('.table-wrap') || t.parentElement;
    return {
      testid: t.dataset.testid || '',
      scroll: t.scrollWidth, client: t.clientWidth,
      wrapScroll: wrap.scrollWidth, wrapClient: wrap.clientWidth,
    };
  });
  // A header is in view inside the window and inside its table's card (not scrolled away).
  const headers = [...document.querySelectorAll('main table.table thead th')].map(th => {
    const r = th.getBoundingClientRect();
    const wrap = (th.closest('.table-wrap') || th.closest('table')).getBoundingClientRect();
    return {
      text: th.textContent.trim(), left: r.left, right: r.right,
      shownLeft: Math.max(0, wrap.left), shownRight: Math.min(innerWidth, wrap.right),
    };
  });
  return {
    pageScroll: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    mainWidth: document.querySelector('main').getBoundingClientRect().width,
    tables, headers,
  };
}
"""

# A colour's relative luminance (WCAG), from the computed `rgb(...)`.
LUMINANCE = """
css => {
  const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
"""


def wrong_breaks(tops: list[list[Any]]) -> list[str]:
    """Where the text breaks to a new line other than after a `-`, `.` or `_`."""
    text = "".join(c for c, _ in tops)
    return [
        f"{text[:i]}|{text[i:]}"
        for i in range(1, len(tops))
        if tops[i][1] > tops[i - 1][1] and tops[i - 1][0] not in BREAKS
    ]


def build_cluster(cluster: LiveCluster) -> None:
    """Five brokers in two pods (one fenced, one with a failed log dir) and topics with
    long names, so every figure column has something to show."""
    brokers = cluster.brokers
    dirs: dict[int, list[str]] = {}
    for broker_id, pod in PODS.items():
        dirs[broker_id] = [str(uuid.uuid4()), str(uuid.uuid4())]
        brokers.register(
            broker_id,
            heartbeat=False,
            host=f"kafka-{broker_id}.kafka-headless.kafka.svc.cluster.local",
            rack=f"eu-west-1{'abc'[broker_id % 3]}",
            pod=pod,
            log_dirs=dirs[broker_id],
        )
    for broker_id in PODS:
        brokers.heartbeat(broker_id)
    cluster.create_topics(
        *(
            {
                "name": name,
                "num_partitions": 12,
                "replication_factor": 3,
                "configs": [{"name": "min.insync.replicas", "value": "2"}],
            }
            for name in (*TOPICS, UNBREAKABLE)
        )
    )
    # Trouble in every figure column: a failed log dir, a fenced broker.
    brokers.fail_replicas(2, TOPICS[0], [0, 1, 2, 3])
    brokers.heartbeat(2, offline_log_dirs=[dirs[2][0]])
    brokers.heartbeat(3, want_fence=True)


@pytest.fixture
def console(live_cluster: LiveCluster) -> tuple[str, str]:
    """The live server's URL and an admin's token, on the cluster above."""
    build_cluster(live_cluster)
    return live_cluster.base, live_cluster.admin_token


def screenshot(page: Any, name: str) -> str | None:
    """The README's screenshots, when CP_SCREENSHOTS_DIR says where (docs/screenshots)."""
    where = os.environ.get("CP_SCREENSHOTS_DIR")
    if not where:
        return None
    path = Path(where) / f"{name}.png"
    page.wait_for_timeout(300)  # charts drawn
    page.screenshot(path=str(path), full_page=True)
    return str(path)


def check_fit(page: Any, where: str, width: int, found: list[str]) -> None:
    fit = page.evaluate(FIT)
    if fit["pageScroll"] > fit["innerWidth"]:
        found.append(f"{where}: the page is {fit['pageScroll']} px wide in {fit['innerWidth']}")
    for table in fit["tables"]:
        if table["scroll"] > table["client"] or table["wrapScroll"] > table["wrapClient"]:
            found.append(f"{where}: table {table['testid']!r} scrolls sideways: {table}")
    for th in fit["headers"]:
        if th["left"] < th["shownLeft"] - 1 or th["right"] > th["shownRight"] + 1:
            found.append(f"{where}: column {th['text']!r} is out of view: {th}")
    if width >= 1920 and fit["mainWidth"] <= 1600:
        found.append(f"{where}: the content is {fit['mainWidth']} px wide, not the window's")


def check_names(page: Any, selector: str, where: str, found: list[str]) -> int:
    """Each name drawn on one line or broken after `-`, `.` or `_` only; answers how many."""
    cells = page.locator(selector)
    count = int(cells.count())
    for i in range(count):
        tops = cells.nth(i).evaluate(CHARACTER_TOPS)
        found.extend(f"{where}: {selector} breaks mid-word: {w}" for w in wrong_breaks(tops))
    return count


def check_visible(page: Any, label: str, where: str, found: list[str]) -> None:
    header = page.locator("main table.table thead th").filter(has_text=label)
    if header.count() != 1:
        found.append(f"{where}: no single column {label!r}")
        return
    box = header.bounding_box()
    width = page.evaluate("innerWidth")
    if box is None or box["x"] < 0 or box["x"] + box["width"] > width:
        found.append(f"{where}: column {label!r} is out of view: {box}")


def check_scheme(page: Any, scheme: str, where: str, found: list[str]) -> None:
    body = page.evaluate(
        "() => { const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]; }"
    )
    background, text = (page.evaluate(LUMINANCE, c) for c in body)
    if scheme == "dark" and not (background < 0.05 and text > 0.6):
        found.append(f"{where}: not dark: background {body[0]}, text {body[1]}")
    if scheme == "light" and not (background > 0.8 and text < 0.05):
        found.append(f"{where}: not light: background {body[0]}, text {body[1]}")


def check_chart_colours(page: Any, scheme: str, where: str, found: list[str]) -> None:
    """The brokers' bar chart draws its ticks in the scheme's colour: light on dark."""
    page.wait_for_function("() => window.Chart && Chart.getChart('broker-bars')")
    # Chart.js keeps the colour as given; the browser says it as rgb() once applied to a box.
    ticks = page.evaluate(
        "() => { const e = document.createElement('span');"
        " e.style.color = Chart.getChart('broker-bars').options.scales.x.ticks.color;"
        " document.body.append(e); const c = getComputedStyle(e).color; e.remove();"
        " return c; }"
    )
    luminance = page.evaluate(LUMINANCE, ticks)
    if (scheme == "dark") != (luminance > 0.3):
        found.append(f"{where}: the chart's ticks are {ticks} in the {scheme} scheme")


@pytest.mark.django_db(transaction=True)
def test_topics_and_brokers_fit_at_1280_and_1920_light_and_dark(
    console: tuple[str, str],
) -> None:
    base, admin_token = console
    executable = require_chromium()
    found: list[str] = []
    shots: list[str] = []
    with chromium_browser(executable) as browser:
        for scheme in SCHEMES:
            for width in WIDTHS:
                page = new_page(browser, width=width, height=1000, color_scheme=scheme)
                login(page, f"{base}/ui/login/", admin_token)
                page.wait_for_url(f"{base}/ui/")
                suffix = "" if scheme == "light" else "-dark"
                where = f"{scheme} {width} px"
                check_scheme(page, scheme, f"/ui/ {where}", found)
                if width == 1920 and scheme == "dark":
                    shots.append(screenshot(page, "overview-1920-dark") or "")

                page.goto(f"{base}/ui/topics/")
                check_fit(page, f"/ui/topics/ {where}", width, found)
                named = check_names(
                    page,
                    f"tr.topic:not([data-topic={UNBREAKABLE}]) td:first-child a",
                    f"/ui/topics/ {where}",
                    found,
                )
                assert named == len(TOPICS)
                check_visible(page, "min.insync.replicas", f"/ui/topics/ {where}", found)
                check_scheme(page, scheme, f"/ui/topics/ {where}", found)
                if width == 1920:
                    shots.append(screenshot(page, f"topics-1920{suffix}") or "")

                page.goto(f"{base}/ui/brokers/")
                check_fit(page, f"/ui/brokers/ {where}", width, found)
                # Pods and racks: on one line or broken after a `-` ("canary-/broker").
                headers = page.locator("[data-testid=broker-table] thead th").evaluate_all(
                    "ths => ths.map(th => th.textContent.trim())"
                )
                for label in ("Pod", "Rack"):
                    column = headers.index(label) + 1
                    cells = f"[data-testid=broker-table] tbody td:nth-child({column})"
                    named = check_names(page, cells, f"/ui/brokers/ {where}", found)
                    assert named == len(PODS), label
                for label in ("Last heartbeat", "Metadata offset"):
                    check_visible(page, label, f"/ui/brokers/ {where}", found)
                check_chart_colours(page, scheme, f"/ui/brokers/ {where}", found)
                page.context.close()
    assert not found, "\n".join(found)
    print("screenshots:", [s for s in shots if s])


def test_wrong_breaks_names_a_break_inside_a_word() -> None:
    def drawn(*lines: str) -> list[list[Any]]:
        return [[c, top] for top, line in enumerate(lines) for c in line]

    assert wrong_breaks(drawn("payments-events-eu-west-1.v2")) == []
    assert wrong_breaks(drawn("payments-", "events-eu-west-1.", "v2")) == []
    assert wrong_breaks(drawn("paymen", "ts-", "events")) == ["paymen|ts-events"]
