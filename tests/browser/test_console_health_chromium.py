"""The console on a real cluster through a bad day, in Debian's Chromium: an embedded gunicorn
(the controller), simulated brokers with two log dirs each, a failed log dir and a fenced broker.

- The health figures the pages show are exactly the API's (GET /api/v1/cluster, /partitions,
  /topics), and each leads to the list it counts.
- The timeline tells the log dir failure once, with each partition's previous and new leader,
  then its resolution when the dir is repaired; and the session expiry with what it moved.
- A refreshing page keeps the operator's focus, text selection and scroll through three
  refreshes (only what changed is replaced), and says its changes to screen readers.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from simulator import BrokerSimulator
from tests.browser.fixtures import chromium_page, login, require_chromium
from tests.integration.test_replicas_full_stack import SimThread
from tests.integration.test_simulator_embedded import EmbeddedServer, embedded_server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

T = TypeVar("T")
WAIT_S = 30.0
BROKERS = 5
HEALTH_KEYS = (
    "under_replicated_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
    "leaderless_partitions",
    "preferred_replica_imbalance",
    "offline_log_dirs",
)


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = WAIT_S) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


class Cluster:
    """The embedded server, its simulated brokers and an admin API client."""

    def __init__(
        self,
        server: EmbeddedServer,
        *,
        brokers: int = BROKERS,
        client_id: str = "console-health",
        **sim_options: Any,
    ) -> None:
        self.server = server
        self.api = httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {server.admin_token}"},
            timeout=30,
        )
        self.sim_thread = SimThread(
            lambda: BrokerSimulator(
                server.url,
                server.broker_token,
                internal_url=server.internal_url,
                brokers=brokers,
                racks=3,
                log_dirs=2,
                heartbeat_interval_ms=300,
                metadata_wait_ms=1000,
                connect_timeout_s=30,
                client_id=client_id,
                admin_token=server.admin_token,
                **sim_options,
            )
        )
        self.sim = self.sim_thread.sim

    def get(self, path: str) -> Any:
        response = self.api.get(path)
        assert response.status_code == 200, response.text
        return response.json()

    def health(self) -> dict[str, int]:
        return dict(self.get("/api/v1/cluster")["health"])

    def states(self) -> dict[int, str]:
        return {
            b["broker_id"]: b["state"] for b in self.get("/api/v1/brokers?page_size=100")["results"]
        }

    def partitions(self, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={v}" for k, v in {"page_size": "1000", **filters}.items())
        return list(self.get(f"/api/v1/partitions?{query}")["results"])

    def settled_health(self) -> dict[str, int]:
        """The health once it stops moving (the same figures twice, a second apart)."""

        def settled() -> dict[str, int] | None:
            first = self.health()
            time.sleep(1.0)
            return first if self.health() == first else None

        return wait_for(settled, "the health figures to settle")

    def close(self) -> None:
        self.sim_thread.close()
        self.api.close()


@contextlib.contextmanager
def running_cluster(
    tmp: Path,
    topics: tuple[tuple[str, int, int, dict[str, str]], ...],
    *,
    brokers: int = BROKERS,
    **options: Any,
) -> Iterator[Cluster]:
    """An embedded server whose `brokers` simulated brokers (`options`: the rest of Cluster's)
    are all unfenced, with `topics` (name, partitions, replication factor, configs) created."""
    with embedded_server(tmp) as server:
        built = Cluster(server, brokers=brokers, **options)
        try:
            built.sim_thread.run(built.sim.start())
            assert built.sim_thread.run(
                built.sim.wait_for(lambda s: s.status().unfenced == brokers, WAIT_S)
            ), built.sim_thread.call(built.sim.status)
            for name, partitions, factor, configs in topics:
                created = built.sim_thread.run(
                    built.sim.create_topic(name, partitions, factor, configs=configs)
                )
                assert created["error_code"] == 0, created
            yield built
        finally:
            built.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    orders = ("orders", 12, 3, {"min.insync.replicas": "2"})
    with running_cluster(
        tmp_path_factory.mktemp("console"), (orders, ("events", 6, 2, {}))
    ) as built:
        yield built


@contextlib.contextmanager
def chromium(server: EmbeddedServer, *, height: int = 900) -> Iterator[Any]:
    """A logged-in admin page in Debian's Chromium at 1440 px."""
    from playwright.sync_api import expect

    with chromium_page(require_chromium(), width=1440, height=height) as page:
        login(page, f"{server.url}/ui/login/", server.admin_token)
        expect(page).to_have_url(f"{server.url}/ui/")
        yield page


def screenshot(page: Any, name: str) -> None:
    """The README's screenshots, when CP_SCREENSHOTS_DIR says where (docs/screenshots)."""
    where = os.environ.get("CP_SCREENSHOTS_DIR")
    if where:
        page.wait_for_timeout(300)  # charts drawn
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=True)


def shown_health(page: Any) -> dict[str, int]:
    return {key: int(page.get_by_test_id(f"health-{key}").inner_text()) for key in HEALTH_KEYS}


def test_health_after_a_failed_log_dir_and_a_fenced_broker_is_the_apis(
    cluster: Cluster, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    sim, run, call = cluster.sim, cluster.sim_thread.run, cluster.sim_thread.call
    before = {p["topic"] + f"-{p['partition_index']}": p for p in cluster.partitions()}
    # The (broker, dir) leading the most partitions fails; another broker goes silent.
    failing_broker, failing_dir = max(
        ((b, d) for b in range(BROKERS) for d in range(2)),
        key=lambda bd: sum(v.leader == bd[0] for v in call(lambda: sim.replicas_in_log_dir(*bd))),
    )
    failed = run(sim.fail_log_dir(failing_broker, failing_dir, timeout_s=60))
    assert failed.ok and failed.applied, failed
    failed_dir = call(lambda: sim.broker(failing_broker).log_dirs[failing_dir])
    wait_for(
        lambda: (
            cluster.get(f"/api/v1/brokers/{failing_broker}")["offline_log_dirs"] == [failed_dir]
        ),
        "the heartbeats to name the failed dir",
    )
    silent = next(b for b in range(BROKERS) if b != failing_broker)
    sim.stop_heartbeats(silent)
    wait_for(lambda: cluster.states()[silent] == "FENCED", "the silent broker to be fenced")
    health = cluster.settled_health()
    assert health["offline_log_dirs"] == 1
    assert health["under_replicated_partitions"] > 0

    with chromium(cluster.server) as page:
        # The overview: each figure exactly the API's, each a link to what it counts.
        for key, value in health.items():
            expect(page.get_by_test_id(f"health-{key}")).to_have_text(str(value))
        assert shown_health(page) == health
        expect(page.get_by_test_id("health")).to_have_attribute("aria-live", "polite")
        page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
        screenshot(page, "overview")
        page.click("a[data-health=under_replicated_partitions]")
        expect(page).to_have_url(re.compile(r"/ui/partitions/\?under_replicated=true$"))
        urp = cluster.partitions(under_replicated="true")
        assert len(urp) == health["under_replicated_partitions"]
        expect(page.get_by_test_id("partition-count")).to_have_text(str(len(urp)))
        page.goto(f"{cluster.server.url}/ui/partitions/?under_min_isr=true")
        expect(page.get_by_test_id("partition-count")).to_have_text(
            str(health["under_min_isr_partitions"])
        )

        # The brokers: the fenced one, the failed dir (not a green UNFENCED with bare UUIDs).
        page.goto(f"{cluster.server.url}/ui/brokers/")
        fenced_row = page.locator(f"#broker-{silent}")
        expect(fenced_row.get_by_test_id("state")).to_have_text("FENCED")
        expect(fenced_row.get_by_test_id("leaders")).to_have_text("0")
        failing_row = page.locator(f"#broker-{failing_broker}")
        expect(failing_row.get_by_test_id("offline-log-dirs")).to_have_text("1 of 2 offline")
        page.goto(f"{cluster.server.url}/ui/brokers/{failing_broker}/")
        expect(page.get_by_test_id("log-dir-offline")).to_have_text("1 log dir offline")
        expect(page.get_by_test_id("log-dirs")).to_contain_text(f"{failed_dir} offline")

        # The topics: each topic's figures are the API's.
        page.goto(f"{cluster.server.url}/ui/topics/")
        for topic in cluster.get("/api/v1/topics")["results"]:
            row = page.locator(f"tr[data-topic={topic['name']}]")
            for testid, field in (
                ("under-replicated-count", "under_replicated_partitions"),
                ("under-min-isr-count", "under_min_isr_partitions"),
                ("at-min-isr-count", "at_min_isr_partitions"),
                ("leaderless-count", "leaderless_partitions"),
                ("imbalanced-count", "preferred_replica_imbalance"),
                ("offline-count", "offline_replicas"),
            ):
                expect(row.get_by_test_id(testid)).to_have_text(str(topic[field]))

        # The timeline: one entry for the failure, every partition's previous and new leader
        # as the metadata log has them; the session expiry with what it moved.
        page.goto(f"{cluster.server.url}/ui/timeline/?kind=LOG_DIR_FAILURE")
        failure = page.locator("article[data-kind=LOG_DIR_FAILURE]").filter(
            has_text=f"Log dir failure reported by broker {failing_broker}"
        )
        expect(failure).to_have_count(1)
        failing = {f"{t}-{p}" for t, p in failed.done}
        moves = failure.locator("tr[data-move]")
        expect(moves).to_have_count(min(len(failing), 10))
        for i in range(moves.count()):
            move = moves.nth(i)
            name = move.get_attribute("data-move")
            assert name in failing
            previous = before[name]["leader_id"]
            expect(move.get_by_test_id("previous-leader")).to_have_text(str(previous))
            expect(move.get_by_test_id("failed-replica")).to_have_text(str(failing_broker))
            expect(move.get_by_test_id("resolution")).to_have_text("open")
        page.goto(f"{cluster.server.url}/ui/timeline/?kind=SESSION_EXPIRED&broker={silent}")
        expiry = page.locator("article[data-kind=SESSION_EXPIRED]").first
        expect(expiry.get_by_test_id("event-title")).to_contain_text(
            f"Session expired: broker {silent} fenced"
        )
        page.screenshot(path=str(tmp_path / "timeline.png"), full_page=True)
        page.goto(f"{cluster.server.url}/ui/timeline/?incidents=on")
        screenshot(page, "timeline")
        page.goto(f"{cluster.server.url}/ui/topics/orders/")
        expect(page.get_by_test_id("heatmap")).to_be_visible()
        screenshot(page, "topic")
        page.goto(f"{cluster.server.url}/ui/charts/")
        screenshot(page, "charts")

        # Repair: the dir comes back, the leaders take the replicas back, the broker returns.
        sim.resume(silent)
        repaired = run(sim.repair_log_dir(failing_broker, failing_dir, timeout_s=60))
        assert repaired.ok, repaired
        wait_for(lambda: cluster.states()[silent] == "UNFENCED", "the silent broker to return")
        wait_for(lambda: cluster.health()["offline_log_dirs"] == 0, "the dir back online")
        page.goto(f"{cluster.server.url}/ui/timeline/?kind=LOG_DIR_FAILURE")
        failure = page.locator("article[data-kind=LOG_DIR_FAILURE]").filter(
            has_text=f"Log dir failure reported by broker {failing_broker}"
        )
        expect(failure.get_by_test_id("event-resolution")).to_contain_text(
            f"every offline replica came back ({len(failing)} of {len(failing)})"
        )
        resolutions = failure.get_by_test_id("resolution")
        for i in range(resolutions.count()):
            expect(resolutions.nth(i)).to_contain_text("resolved")
            expect(resolutions.nth(i)).to_contain_text("back in the ISR")
        page.goto(f"{cluster.server.url}/ui/timeline/?kind=LOG_DIR_RECOVERY")
        expect(page.locator("article[data-kind=LOG_DIR_RECOVERY]").first).to_contain_text(
            f"{failed_dir} back online"
        )

        healed = cluster.settled_health()
        page.goto(f"{cluster.server.url}/ui/")
        for key, value in healed.items():
            expect(page.get_by_test_id(f"health-{key}")).to_have_text(str(value))
        # The dir is back, and the returned broker rejoined its ISRs once unfenced.
        assert healed["offline_log_dirs"] == 0 and healed["leaderless_partitions"] == 0


SELECTION_JS = """
() => {
  const node = document.querySelector('[data-testid=incarnation]').firstChild;
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  return selection.toString();
}
"""


def test_focus_selection_and_scroll_survive_three_refreshes(cluster: Cluster) -> None:
    from playwright.sync_api import expect

    broker_id = BROKERS - 1
    with chromium(cluster.server, height=500) as page:
        page.goto(f"{cluster.server.url}/ui/brokers/{broker_id}/")
        incarnation = cluster.get(f"/api/v1/brokers/{broker_id}")["incarnation_id"]
        expect(page.get_by_test_id("incarnation")).to_have_text(incarnation)
        page.evaluate("window.__notReloaded = true")
        link = page.locator("a", has_text="Its timeline")
        link.focus()
        page.evaluate("window.__actions = document.querySelector('p.actions')")
        assert page.evaluate(SELECTION_JS) == incarnation
        scrolled = page.evaluate("() => { window.scrollBy(0, 200); return window.scrollY; }")
        assert scrolled > 0
        heartbeat = page.get_by_test_id("last-heartbeat")
        for refresh in range(3):
            stamp = page.locator("#ui-updated").get_attribute("datetime")
            shown = heartbeat.inner_text()
            # A refresh that changed the page: the heartbeat's age is a new text.
            expect(page.locator("#ui-updated")).not_to_have_attribute("datetime", stamp or "")
            page.wait_for_function(
                "text => document.querySelector('[data-testid=last-heartbeat]').innerText !== text",
                arg=shown,
            )
            assert page.evaluate("document.activeElement.innerText") == "Its timeline", refresh
            assert page.evaluate("window.getSelection().toString()") == incarnation, refresh
            assert page.evaluate("window.scrollY") == scrolled, refresh
            # Updated in place, not rebuilt: the same nodes are in the page.
            assert page.evaluate("document.contains(window.__actions)"), refresh
        assert page.evaluate("window.__notReloaded") is True
        expect(page.locator("section[aria-live=polite]").first).to_be_attached()

        # Charts update with the page without flicker: the same canvas and the same Chart.js
        # chart, its data replaced in place.
        page.goto(f"{cluster.server.url}/ui/")
        page.wait_for_function("() => !!Chart.getChart('spark-under_replicated_partitions')")
        page.evaluate(
            """() => {
              window.__canvas = document.getElementById('spark-under_replicated_partitions');
              window.__chart = Chart.getChart(window.__canvas);
              window.__bitmap = [window.__canvas.width, window.__canvas.height];
            }"""
        )
        drawn = page.evaluate("window.__bitmap")
        assert drawn != [300, 150]  # Chart.js sized the bitmap to the page's layout
        for _ in range(2):
            stamp = page.locator("#ui-updated").get_attribute("datetime")
            expect(page.locator("#ui-updated")).not_to_have_attribute("datetime", stamp or "")
        assert page.evaluate(
            """() => window.__canvas ===
                document.getElementById('spark-under_replicated_partitions')
              && Chart.getChart(window.__canvas) === window.__chart
              && window.__chart.options.animation === false"""
        )
        # Still drawn at its size: a refresh once reset the bitmap to the canvas default,
        # 300 x 150, and the chart blurred and lost its bars (issue 25).
        assert page.evaluate("[window.__canvas.width, window.__canvas.height]") == drawn

        # A filter holding unsubmitted text holds the refresh back, and the page says so.
        page.goto(f"{cluster.server.url}/ui/partitions/")
        box = page.locator("#partition-filter-topic")
        box.fill("typed-but-not-submitted")
        expect(page.locator("#ui-updated")).to_have_class(re.compile(r"\bpaused\b"))
        expect(page.locator("#ui-updated")).to_contain_text("paused while a filter")
        box.fill("")
        expect(page.locator("#ui-updated")).not_to_have_class(re.compile(r"\bpaused\b"))
        expect(page.locator("#ui-updated")).to_contain_text("updated")
        # "/" goes to the search box from anywhere but a field.
        page.locator("h1").first.click()
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "global-search"
