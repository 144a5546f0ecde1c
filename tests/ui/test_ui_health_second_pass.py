"""Health that agrees with itself (issue 25, point 9, and point 10's broker items), through
Django's test client on the real controller and database.

One model of a log dir's state (controlplane.controller.health): offline while the broker's
latest heartbeat names it, online again when a heartbeat no longer does, unknown while the broker
is fenced. A replica is offline when AlterReplicaState marked it or its broker is fenced. The
API (GET /api/v1/brokers, /api/v1/cluster, the partitions' `offline` filter), the overview, the
brokers' pages and /metrics say the same. One log dir failure is one incident, with its time;
a broker's software version is on its pages. The same in a real Chromium:
tests/browser/test_health_second_pass_chromium.py.
"""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import pytest
from django.test import Client

from replicas.services import replica_state_apply_pending
from tests.api.test_replication_api import Kafka

pytestmark = pytest.mark.django_db

DIRS = {b: [str(uuid.UUID(int=b * 10 + d + 1)) for d in range(2)] for b in range(3)}


@pytest.fixture
def kafka(api: Any, tokens: dict[str, str], register: Any) -> Kafka:
    built = Kafka(api, tokens, register)
    for broker_id in range(3):
        built.register(broker_id, log_dirs=DIRS[broker_id], software_version=f"3.9.{broker_id}")
    built.create_topic("orders", [[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    built.create_topic("logs", [[0, 1], [1, 2]])
    return built


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.content[:500]
    return str(response.content.decode())


def words(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def text_of(body: str, name: str) -> str:
    """The text of the first element with data-testid=name."""
    match = re.search(rf'<(\w+)[^>]*data-testid="{name}"[^>]*>(.*?)</\1>', body, re.S)
    assert match, name
    return words(match.group(2))


def row(body: str, broker_id: int) -> str:
    match = re.search(rf'<tr id="broker-{broker_id}".*?</tr>', body, re.S)
    assert match, broker_id
    return match.group(0)


def api_get(api: Any, tokens: dict[str, str], path: str) -> Any:
    status, body = api.get(path, token=tokens["admin"])
    assert status == 200, body
    return body


def metric(client: Client, name: str) -> int:
    text = client.get("/metrics").content.decode()
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match, name
    return int(float(match.group(1)))


def agreed_offline_log_dirs(api: Any, tokens: dict[str, str], client: Client) -> int:
    """The offline log dirs as the API (per broker and for the cluster), the overview, the
    brokers' list and pages and /metrics give them: all the same, or the test fails."""
    brokers = api_get(api, tokens, "/api/v1/brokers?page_size=100")["results"]
    per_broker = {b["broker_id"]: len(b["offline_log_dirs"]) for b in brokers}
    total = api_get(api, tokens, "/api/v1/cluster")["health"]["offline_log_dirs"]
    assert total == sum(per_broker.values())
    assert metric(client, "kafka_log_logmanager_offlinelogdirectorycount") == total
    overview = page(client, "/ui/")
    assert text_of(overview, "health-offline_log_dirs") == str(total)
    listed = page(client, "/ui/brokers/")
    for broker_id, count in per_broker.items():
        shown = row(listed, broker_id)
        detail = page(client, f"/ui/brokers/{broker_id}/")
        states = re.findall(r'data-log-dir="[^"]+" data-state="(\w+)"', detail)
        assert states.count("offline") == count
        if count:
            assert text_of(shown, "offline-log-dirs") == f"{count} of 2 offline"
            assert (
                text_of(detail, "log-dir-offline") == f"{count} log dir{'s' * (count > 1)} offline"
            )
        else:
            assert 'data-testid="offline-log-dirs"' not in shown
            assert 'data-testid="log-dir-offline"' not in detail
        assert "not named by a heartbeat" not in detail
    only = page(client, "/ui/brokers/?offline_log_dirs=true")
    assert sorted(int(b) for b in re.findall(r'<tr id="broker-(\d+)"', only)) == sorted(
        b for b, n in per_broker.items() if n
    )
    return int(total)


def agreed_offline_replicas(api: Any, tokens: dict[str, str], client: Client) -> int:
    """Offline replicas as the overview, the brokers' table and /metrics count them, and the
    partitions the API's and the page's `offline` filter list: each partition listed has an
    offline replica, and the replicas of the listed partitions are the figure."""
    brokers = {
        b["broker_id"]: b for b in api_get(api, tokens, "/api/v1/brokers?page_size=100")["results"]
    }
    listed = api_get(api, tokens, "/api/v1/partitions?offline=true&page_size=1000")["results"]
    expected = 0
    for p in listed:
        down = set(p["offline_replicas"]) | {r for r in p["replica_nodes"] if brokers[r]["fenced"]}
        assert down, p
        expected += len(down)
    everything = api_get(api, tokens, "/api/v1/partitions?page_size=1000")["results"]
    assert len(listed) == sum(
        bool(p["offline_replicas"]) or any(brokers[r]["fenced"] for r in p["replica_nodes"])
        for p in everything
    )
    overview = page(client, "/ui/")
    assert text_of(overview, "health-offline_replicas") == str(expected)
    assert metric(client, "kafka_controller_offline_replicas") == expected
    partitions = page(client, "/ui/partitions/?offline=true")
    assert text_of(partitions, "partition-count") == str(len(listed))
    table = page(client, "/ui/brokers/")
    by_broker = sum(int(text_of(row(table, b), "offline-replicas") or 0) for b in brokers)
    assert by_broker == expected
    return expected


def test_a_repaired_log_dir_is_online_everywhere(
    kafka: Kafka, api: Any, tokens: dict[str, str], admin_client: Client
) -> None:
    failed = DIRS[2][0]
    status, body = kafka.replicas_offline(2, {"orders": [0, 1, 2]})
    assert status == 200 and body["error_code"] == 0, body
    replica_state_apply_pending()
    kafka.heartbeat(2, offline_log_dirs=[failed])
    assert agreed_offline_log_dirs(api, tokens, admin_client) == 1
    assert agreed_offline_replicas(api, tokens, admin_client) == 3
    detail = page(admin_client, "/ui/brokers/2/")
    assert f'data-log-dir="{failed}" data-state="offline"' in detail
    assert f'data-log-dir="{DIRS[2][1]}" data-state="online"' in detail

    # One failure, told by AlterReplicaState and then by the heartbeat: one incident, with
    # when it happened.
    overview = page(admin_client, "/ui/")
    incidents = re.findall(r'<li data-testid="recent-incident">(.*?)</li>', overview, re.S)
    failures = [i for i in incidents if "offline" in words(i) and "log dir" in words(i).lower()]
    assert len(failures) == 1, incidents
    when = re.search(r'<time[^>]*datetime="([^"]+)"[^>]*>([^<]+)</time>', failures[0])
    assert when and when.group(1).startswith("20") and when.group(2).endswith("ago"), failures

    # Repaired: the heartbeat no longer names it. Its replicas stay offline until the leaders
    # take them back (none did yet), but the dir is online on every page, the API and /metrics.
    kafka.heartbeat(2, offline_log_dirs=[])
    assert agreed_offline_log_dirs(api, tokens, admin_client) == 0
    assert agreed_offline_replicas(api, tokens, admin_client) == 3
    detail = page(admin_client, "/ui/brokers/2/")
    assert re.findall(r'data-state="(\w+)"', detail) == ["online", "online"]


def test_a_fenced_broker_is_highlighted_and_its_replicas_offline(
    kafka: Kafka, api: Any, tokens: dict[str, str], admin_client: Client
) -> None:
    assert agreed_offline_replicas(api, tokens, admin_client) == 0
    overview = page(admin_client, "/ui/")
    assert text_of(overview, "health-fenced_brokers") == "0"
    kafka.fence(1)
    overview = page(admin_client, "/ui/")
    assert text_of(overview, "health-fenced_brokers") == "1"
    card = re.search(
        r'<a class="card health-figure([^"]*)" href="([^"]+)" data-health="fenced_brokers"',
        overview,
    )
    assert card and "health-danger" in card.group(1)
    fenced = page(admin_client, html.unescape(card.group(2)))
    assert re.findall(r'<tr id="broker-(\d+)"', fenced) == ["1"]

    listed = page(admin_client, "/ui/brokers/")
    shown = row(listed, 1)
    assert re.search(r'<tr id="broker-1"[^>]*class="[^"]*\bfenced\b', shown)
    assert text_of(shown, "unknown-log-dirs") == "2 unknown (fenced)"
    assert "online" not in text_of(shown, "log-dirs")
    assert "online" in text_of(row(listed, 0), "log-dirs")

    detail = page(admin_client, "/ui/brokers/1/")
    assert "Fenced:" in text_of(detail, "fenced-card")
    assert re.findall(r'data-state="(\w+)"', detail) == ["unknown", "unknown"]
    # Every replica it holds is offline: orders 0-2 and logs 0-1, five of them.
    assert agreed_offline_replicas(api, tokens, admin_client) == 5
    assert text_of(detail, "offline-replica-count") == "5"
    assert 'data-testid="no-offline"' not in detail
    # A replica both marked offline and on a fenced broker is counted once.
    status, body = kafka.replicas_offline(2, {"orders": [0]})
    assert status == 200 and body["error_code"] == 0, body
    replica_state_apply_pending()
    assert agreed_offline_replicas(api, tokens, admin_client) == 6
    # Back: it heartbeats again, its replicas are no longer offline for it.
    kafka.heartbeat(1)
    assert agreed_offline_replicas(api, tokens, admin_client) == 1
    assert 'data-testid="fenced-card"' not in page(admin_client, "/ui/brokers/1/")


def test_the_software_version_is_on_the_broker_pages(kafka: Kafka, admin_client: Client) -> None:
    listed = page(admin_client, "/ui/brokers/")
    assert "Version" in listed
    for broker_id in range(3):
        assert text_of(row(listed, broker_id), "software-version") == f"3.9.{broker_id}"
        detail = page(admin_client, f"/ui/brokers/{broker_id}/")
        assert text_of(detail, "software-version") == f"3.9.{broker_id}"
