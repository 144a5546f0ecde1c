"""Health that agrees with itself (issue 25, point 9; point 10's broker items), in Debian's
Chromium on an embedded server with simulated brokers (two log dirs each, a software version).

A broker goes silent (fenced), then a log dir of another fails and is repaired while some of its
replicas cannot come back (their partitions lost every leader with the fenced broker). What a
person sees: the overview, the brokers' table and page, the API and /metrics agree that no log
dir is offline once the heartbeat stops naming it; the fenced broker has its red health card and
a red row, its dirs "unknown (fenced)", not "online"; "Offline replicas" counts its replicas, as
the partitions page's `offline` filter lists them; the failure is one incident, with its time;
each broker's version is on its pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.test_console_health_chromium import (
    Cluster,
    chromium,
    running_cluster,
    wait_for,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration]

BROKERS = 3
VERSION = "3.9.1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The console-health cluster, three brokers that register with a software version."""
    with running_cluster(
        tmp_path_factory.mktemp("health2"),
        (("pairs", 12, 2, {}),),
        brokers=BROKERS,
        client_id="health-second-pass",
        software_version=VERSION,
    ) as built:
        yield built


def metric(cluster: Cluster, name: str) -> int:
    text = cluster.api.get("/metrics").text
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match, name
    return int(float(match.group(1)))


def offline_replicas_by_api(cluster: Cluster) -> tuple[int, int]:
    """(partitions the API's `offline` filter lists, their offline replicas: marked, or on a
    fenced broker)."""
    fenced = {b for b, state in cluster.states().items() if state == "FENCED"}
    listed = cluster.partitions(offline="true")
    replicas = sum(
        len(set(p["offline_replicas"]) | {r for r in p["replica_nodes"] if r in fenced})
        for p in listed
    )
    return len(listed), replicas


def test_a_repaired_dir_and_a_fenced_broker_as_a_person_sees_them(
    cluster: Cluster, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    sim, run, call = cluster.sim, cluster.sim_thread.run, cluster.sim_thread.call
    url = cluster.server.url
    silent, failing = 1, 0
    sim.stop_heartbeats(silent)
    wait_for(lambda: cluster.states()[silent] == "FENCED", "the silent broker to be fenced")
    failed = run(sim.fail_log_dir(failing, 0, timeout_s=60))
    assert failed.ok and failed.done, failed
    failed_dir = call(lambda: sim.broker(failing).log_dirs[0])
    wait_for(
        lambda: cluster.get(f"/api/v1/brokers/{failing}")["offline_log_dirs"] == [failed_dir],
        "the heartbeats to name the failed dir",
    )
    assert cluster.settled_health()["offline_log_dirs"] == 1

    with chromium(cluster.server) as page:
        # One failure (AlterReplicaState, then the heartbeat naming the dir): one incident,
        # and when it happened.
        page.goto(f"{url}/ui/")
        incidents = page.get_by_test_id("recent-incident")
        failures = incidents.filter(has_text=re.compile(r"log dir", re.I)).filter(
            has_text=f"broker {failing}"
        )
        expect(failures).to_have_count(1)
        expect(failures.first.get_by_test_id("incident-time")).to_be_visible()
        expect(failures.first.get_by_test_id("incident-time")).to_have_text(re.compile(r"ago$"))

        # Repaired: the leaders take back what they can; the partitions the fenced broker
        # left leaderless cannot take their replica back, so some stay offline.
        run(sim.repair_log_dir(failing, 0, timeout_s=5))
        wait_for(
            lambda: cluster.get(f"/api/v1/brokers/{failing}")["offline_log_dirs"] == [],
            "the heartbeats to name the dir online again",
        )
        health = cluster.settled_health()
        assert health["offline_log_dirs"] == 0
        brokers = cluster.get("/api/v1/brokers?page_size=100")["results"]
        assert all(b["offline_log_dirs"] == [] for b in brokers)
        assert metric(cluster, "kafka_log_logmanager_offlinelogdirectorycount") == 0
        listed, offline = offline_replicas_by_api(cluster)
        assert offline > 0
        assert metric(cluster, "kafka_controller_offline_replicas") == offline

        page.goto(f"{url}/ui/")
        expect(page.get_by_test_id("health-offline_log_dirs")).to_have_text("0")
        expect(page.get_by_test_id("health-offline_replicas")).to_have_text(str(offline))
        expect(page.get_by_test_id("health-fenced_brokers")).to_have_text("1")
        card = page.locator("a[data-health=fenced_brokers]")
        danger = page.evaluate(
            "getComputedStyle(document.documentElement).getPropertyValue('--danger-fg').trim()"
        )
        assert danger
        red = card.evaluate("e => getComputedStyle(e).borderLeftColor")
        assert red == page.evaluate(
            "c => { const e = document.createElement('i'); e.style.color = c;"
            " document.body.append(e); const v = getComputedStyle(e).color; e.remove();"
            " return v; }",
            danger,
        )
        assert card.evaluate("e => parseFloat(getComputedStyle(e).borderLeftWidth)") >= 4
        expect(card).to_contain_text("their replicas are offline")
        offline_card = page.locator("a[data-health=offline_replicas]")
        expect(offline_card).to_contain_text("fenced broker")
        page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)

        # The same count on the partitions page, through its `offline` filter.
        offline_card.click()
        expect(page).to_have_url(re.compile(r"/ui/partitions/\?offline=true$"))
        expect(page.get_by_test_id("partition-count")).to_have_text(str(listed))

        # The brokers: the failing one all online, the fenced one red with unknown dirs.
        page.goto(f"{url}/ui/brokers/")
        healed_row = page.locator(f"#broker-{failing}")
        expect(healed_row.get_by_test_id("log-dirs")).to_have_text("2 online")
        fenced_row = page.locator(f"#broker-{silent}")
        expect(fenced_row.get_by_test_id("log-dirs")).to_have_text("2 unknown (fenced)")
        background = (
            fenced_row.locator("td").nth(1).evaluate("e => getComputedStyle(e).backgroundColor")
        )
        assert background != healed_row.locator("td").nth(1).evaluate(
            "e => getComputedStyle(e).backgroundColor"
        )
        for broker_id in range(BROKERS):
            expect(
                page.locator(f"#broker-{broker_id}").get_by_test_id("software-version")
            ).to_have_text(VERSION)
        expect(page.get_by_role("columnheader", name="Version")).to_be_visible()
        shown = sum(
            int(page.locator(f"#broker-{b}").get_by_test_id("offline-replicas").inner_text())
            for b in range(BROKERS)
        )
        assert shown == offline

        page.goto(f"{url}/ui/brokers/{failing}/")
        expect(page.get_by_test_id("log-dir-offline")).to_have_count(0)
        expect(page.get_by_test_id("log-dirs")).not_to_contain_text("offline")
        expect(page.get_by_test_id("log-dirs")).not_to_contain_text("not named by a heartbeat")
        expect(page.get_by_test_id("software-version")).to_have_text(VERSION)

        page.goto(f"{url}/ui/brokers/{silent}/")
        expect(page.get_by_test_id("fenced-card")).to_be_visible()
        expect(page.get_by_test_id("fenced-card")).to_contain_text("not heartbeating")
        expect(page.get_by_test_id("log-dirs")).to_contain_text("unknown (fenced)")
        expect(page.get_by_test_id("log-dirs")).not_to_contain_text("online")
        page.screenshot(path=str(tmp_path / "fenced.png"), full_page=True)

        # It comes back: no fenced card, its replicas no longer offline for it.
        sim.resume(silent)
        wait_for(lambda: cluster.states()[silent] == "UNFENCED", "the silent broker to return")
        healed = cluster.settled_health()
        page.goto(f"{url}/ui/")
        expect(page.get_by_test_id("health-fenced_brokers")).to_have_text("0")
        expect(page.get_by_test_id("health-offline_log_dirs")).to_have_text(
            str(healed["offline_log_dirs"])
        )
        _, after = offline_replicas_by_api(cluster)
        expect(page.get_by_test_id("health-offline_replicas")).to_have_text(str(after))
