"""The replicas UI through Django's test client (topics, partitions, a broker's replicas, the
timeline's incidents). A partition going leaderless in a real Chromium: tests/browser."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from controlplane.authz import acl_cache
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from tests.conftest import Api
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

PAGES = ["/ui/topics/", "/ui/topics/orders/", "/ui/timeline/", "/ui/partitions/"]
ARS = "/internal/v1/alter-replica-state"


def text(response: Any) -> str:
    return str(response.content.decode())


def create_topics(
    api: Api, token: str, names: list[str], *, partitions: int = 3, replication: int = 2
) -> None:
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {"name": name, "num_partitions": partitions, "replication_factor": replication}
                for name in names
            ]
        },
        token=token,
    )
    assert status == 200, body
    assert [t["error_code"] for t in body["topics"]] == [0] * len(names), body


def replicas_of(topic: str, index: int) -> list[int]:
    from replicas.models import Partition

    partition = Partition.objects.get(topic__name=topic, partition_index=index)
    return [int(b) for b in partition.replicas]


def mark_offline(
    api: Api,
    token: str,
    broker_id: int,
    epoch: int,
    topic: str,
    partitions: list[int],
    *,
    request_id: str | None = None,
) -> None:
    status, body = api.post(
        ARS,
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "new_state": 1,
            "reason": "log dir failed",
            "topics": [{"name": topic, "partitions": partitions}],
        },
        token=token,
        headers={"X-Request-ID": request_id} if request_id else None,
    )
    assert status == 200 and body["error_code"] == 0, body
    codes = [p["error_code"] for t in body["topics"] for p in t["partitions"]]
    assert codes == [0] * len(partitions), body


def rows_by_id(body: str, prefix: str) -> dict[str, str]:
    """`<tr id="{prefix}{key}" ...>...</tr>` -> {key: the row's opening tag and cells}."""
    return {
        match.group(1): match.group(0)
        for match in re.finditer(rf'<tr id="{prefix}([^"]+)".*?</tr>', body, re.S)
    }


def cells(row: str) -> list[str]:
    return [
        " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


@pytest.fixture
def cluster(register: Callable[..., int]) -> dict[int, int]:
    """Three unfenced brokers; their epochs by id."""
    return {broker_id: register(broker_id, unfence=True) for broker_id in (1, 2, 3)}


# --- login ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PAGES)
def test_pages_require_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/ui/login/?next={path}"
    partial = client.get(path, {"partial": "1"})
    assert partial.status_code == 401 and "X-UI-Fragment" not in partial


@pytest.mark.parametrize("path", PAGES)
def test_principal_without_cluster_describe_gets_403(
    client: Client, tokens: dict[str, str], path: str
) -> None:
    acl_cache.clear()
    ui_login(client, "alice", tokens["alice"])
    response = client.get(path)
    assert response.status_code == 403
    assert "Not authorized" in text(response) and "User:alice" in text(response)


# --- pages ------------------------------------------------------------------------------------
def test_navigation_links_to_topics_and_the_timeline(admin_client: Client) -> None:
    body = text(admin_client.get("/ui/"))
    assert 'href="/ui/topics/"' in body and ">Topics</a>" in body
    assert 'href="/ui/timeline/"' in body and ">Timeline</a>" in body
    topics = text(admin_client.get("/ui/topics/"))
    assert re.search(r'<a href="/ui/topics/" aria-current="page">Topics</a>', topics)
    timeline = text(admin_client.get("/ui/timeline/"))
    assert re.search(r'<a href="/ui/timeline/" aria-current="page">Timeline</a>', timeline)
    # The old incidents page is the timeline's incidents now.
    old = admin_client.get("/ui/incidents/", {"broker": "2"})
    assert old.status_code == 302 and old["Location"] == "/ui/timeline/?incidents=1&broker=2"


def test_empty_pages_render(admin_client: Client) -> None:
    topics = admin_client.get("/ui/topics/")
    assert topics.status_code == 200 and "No topics yet." in text(topics)
    timeline = admin_client.get("/ui/timeline/")
    assert timeline.status_code == 200
    assert "Nothing has happened yet." in text(timeline)
    overview = text(admin_client.get("/ui/"))
    assert 'data-testid="topic-total">0<' in overview
    assert 'data-testid="leaderless-total">0<' in overview


@pytest.mark.parametrize("partial", [False, True])
def test_unknown_topic_is_404(admin_client: Client, partial: bool) -> None:
    response = admin_client.get("/ui/topics/nope/", {"partial": "1"} if partial else {})
    assert response.status_code == 404
    body = text(response)
    assert "Topic not found" in body and "<strong>nope</strong>" in body
    assert ("<html" in body) is not partial


def test_topic_list_shows_counts_and_filters_by_name(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    create_topics(api, tokens["admin"], ["orders", "payments"], partitions=3)
    create_topics(api, tokens["admin"], ["audit"], partitions=5, replication=1)
    body = text(admin_client.get("/ui/topics/"))
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r'<tr class="topic[^"]*" data-topic="([^"]+)">.*?</tr>', body, re.S)
    }
    assert list(rows) == ["audit", "orders", "payments"]  # by name
    # Name, partitions, replication factor, under-replicated, under min ISR, at min ISR,
    # leaderless, off preferred leader, offline replicas, min.insync.replicas.
    assert cells(rows["audit"]) == ["audit", "5", "1", "0", "0", "5", "0", "0", "0", "1"]
    assert cells(rows["orders"]) == ["orders", "3", "2", "0", "0", "0", "0", "0", "0", "1"]
    assert 'href="/ui/topics/orders/"' in body
    assert all(row.startswith('<tr class="topic" ') for row in rows.values())
    assert 'data-testid="topic-count">3<' in body

    filtered = text(admin_client.get("/ui/topics/", {"q": "PAY"}))
    assert re.findall(r'data-topic="([^"]+)"', filtered) == ["payments"]
    assert 'value="PAY"' in filtered and 'data-testid="topic-count">1<' in filtered
    none = text(admin_client.get("/ui/topics/", {"q": "zzz"}))
    assert "No topic name contains “zzz”." in none


def test_leaderless_partition_stands_out_after_alter_replica_state(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    create_topics(api, tokens["admin"], ["orders"], partitions=3, replication=2)
    before = text(admin_client.get("/ui/topics/orders/"))
    partitions = rows_by_id(before, "partition-")
    assert sorted(partitions) == ["0", "1", "2"]
    assert "leaderless" not in before.split('data-testid="partition-table"')[1]
    assert "no leader" not in before

    first, second = replicas_of("orders", 0)
    mark_offline(api, tokens["broker"], first, cluster[first], "orders", [0])
    mark_offline(api, tokens["broker"], second, cluster[second], "orders", [0])

    for partial in (False, True):
        response = admin_client.get("/ui/topics/orders/", {"partial": "1"} if partial else {})
        assert response.status_code == 200
        body = text(response)
        rows = rows_by_id(body, "partition-")
        assert re.match(r'<tr id="partition-0" class="partition leaderless has-offline"', rows["0"])
        assert 'data-leader="-1"' in rows["0"]
        assert (
            '<span class="badge badge-danger no-leader" data-testid="leader">no leader</span>'
            in (rows["0"])
        )
        # Partition, leader, leader epoch, partition epoch, replicas, ISR, offline, canary.
        row = cells(rows["0"])
        assert row[0] == "0" and row[1] == "no leader"
        assert row[2] == "2" and row[3] == "2"  # a new leader, then none: two changes each
        assert row[5] == str(second)  # the last ISR member stays (Kafka never empties the ISR)
        assert row[6] == ", ".join(str(b) for b in sorted((first, second)))
        assert row[7] == "no"
        for broker in (first, second):
            assert re.search(
                rf'class="replica replica-offline" title="broker {broker}: offline"', rows["0"]
            )
        for index in ("1", "2"):
            assert "leaderless" not in rows[index] and "no leader" not in rows[index]
            assert "replica-leader" in rows[index] and "replica-offline" not in rows[index]
        assert 'data-testid="topic-leaderless">1 leaderless<' in body
        assert 'data-testid="topic-offline">2 offline replicas<' in body
        assert ("<html" in body) is not partial

    listing = text(admin_client.get("/ui/topics/"))
    assert re.search(r'<tr class="topic leaderless" data-topic="orders">', listing)
    listed = re.search(r'data-topic="orders">.*?</tr>', listing, re.S)
    assert listed is not None
    assert cells(listed.group(0)) == [
        "orders leaderless",
        "3",
        "2",
        "1",
        "0",
        "1",
        "1",
        "1",
        "2",
        "1",
    ]

    overview = text(admin_client.get("/ui/"))
    assert 'data-testid="topic-total">1<' in overview
    assert 'data-testid="partition-total">3<' in overview
    assert re.search(
        r'data-testid="leaderless-total"><span class="badge badge-danger">1<', overview
    )
    assert 'data-testid="offline-partitions">1<' in overview
    assert re.search(r'data-testid="offline-replicas"><span class="badge badge-warn">2<', overview)

    only = text(admin_client.get("/ui/topics/orders/", {"leaderless": "true"}))
    assert sorted(rows_by_id(only, "partition-")) == ["0"]
    assert '<option value="true" selected>yes</option>' in only
    others = text(admin_client.get("/ui/topics/orders/", {"leaderless": "false"}))
    assert sorted(rows_by_id(others, "partition-")) == ["1", "2"]
    offline = text(admin_client.get("/ui/topics/orders/", {"offline": "true"}))
    assert sorted(rows_by_id(offline, "partition-")) == ["0"]
    bad = admin_client.get("/ui/topics/orders/", {"broker": "x"})
    assert bad.status_code == 200 and "field-error" in text(bad)


def test_fencing_a_sole_replica_makes_its_partitions_leaderless(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    create_topics(api, tokens["admin"], ["solo"], partitions=3, replication=1)
    led_by_1 = [i for i in range(3) if replicas_of("solo", i) == [1]]
    assert led_by_1  # round-robin placement over three brokers
    status, beat = api.post(
        "/internal/v1/broker-heartbeat",
        {
            "broker_id": 1,
            "broker_epoch": cluster[1],
            "current_metadata_offset": cluster[1],
            "want_fence": True,
        },
        token=tokens["broker"],
    )
    assert status == 200 and beat["is_fenced"] is True, beat
    rows = rows_by_id(text(admin_client.get("/ui/topics/solo/")), "partition-")
    for index, row in rows.items():
        leaderless = int(index) in led_by_1
        assert ('class="partition leaderless"' in row) is leaderless, row
        assert ("no leader" in row) is leaderless
        assert "has-offline" not in row  # fenced, not reported offline
    listing = text(admin_client.get("/ui/topics/"))
    assert 'class="topic leaderless" data-topic="solo"' in listing
    # A fence is not a log dir failure: the timeline tells it as a fencing, with what it moved.
    failures = text(admin_client.get("/ui/timeline/", {"kind": "LOG_DIR_FAILURE"}))
    assert "No event matches these filters." in failures
    fencings = text(admin_client.get("/ui/timeline/", {"kind": "FENCED"}))
    assert "Broker 1 fenced at its own request" in fencings
    assert f"{len(led_by_1)} partition" in fencings and "left without a leader" in fencings


def test_broker_page_lists_its_replicas_and_offline_ones(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    create_topics(api, tokens["admin"], ["orders"], partitions=3, replication=2)
    on_2 = [i for i in range(3) if 2 in replicas_of("orders", i)]
    led = [i for i in on_2 if replicas_of("orders", i)[0] == 2]
    assert on_2 and led

    body = text(admin_client.get("/ui/brokers/2/"))
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(
            r'<tr class="replica-row[^"]*" data-partition="([^"]+)">.*?</tr>', body, re.S
        )
    }
    assert sorted(rows) == [f"orders-{i}" for i in on_2]
    for index in on_2:
        row = cells(rows[f"orders-{index}"])
        # Partition, role, in ISR, state, leader, leader epoch, replicas.
        assert row[0] == f"orders-{index}"
        assert row[1] == ("leader" if index in led else "follower")
        assert row[2:4] == ["yes", "online"]
    assert re.search(
        rf'data-testid="replica-summary">{len(on_2)} replicas?, leader of {len(led)}<', body
    )
    assert "No offline replicas on this broker." in body
    assert 'href="/ui/topics/orders/"' in body

    index = led[0]
    mark_offline(api, tokens["broker"], 2, cluster[2], "orders", [index])
    body = text(admin_client.get("/ui/brokers/2/"))
    found = re.search(
        rf'<tr class="replica-row offline" data-partition="orders-{index}">.*?</tr>', body, re.S
    )
    assert found is not None, body
    role, in_isr, state, leader = cells(found.group(0))[1:5]
    other = next(b for b in replicas_of("orders", index) if b != 2)
    assert (role, in_isr, state, leader) == ("follower", "no", "offline", str(other))
    offline = re.findall(r'data-offline-partition="([^"]+)"', body)
    assert offline == [f"orders-{index}"]
    assert "1 offline" in body
    assert 'href="/ui/timeline/?broker=2&amp;incidents=1"' in body
    # The other replica's broker lists no offline replica of its own.
    assert "No offline replicas on this broker." in text(admin_client.get(f"/ui/brokers/{other}/"))


def events_of(body: str) -> list[str]:
    return re.findall(r'<article class="card event.*?</article>', body, re.S)


def test_the_timeline_tells_each_log_dir_failure_with_previous_and_new_leaders(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    create_topics(api, tokens["admin"], ["orders"], partitions=3, replication=2)
    first, second = replicas_of("orders", 0)
    mark_offline(api, tokens["broker"], first, cluster[first], "orders", [0], request_id="req-one")
    mark_offline(
        api, tokens["broker"], second, cluster[second], "orders", [0], request_id="req-two"
    )
    body = text(admin_client.get("/ui/timeline/", {"kind": "LOG_DIR_FAILURE"}))
    newest, oldest = events_of(body)
    assert 'data-testid="event-count">2<' in body
    assert "req-one" in oldest and "req-two" in newest and "User:broker-a" in oldest
    assert f"Log dir failure reported by broker {first}: 1 replica offline" in oldest
    assert "1 leader moved" in oldest
    # Each partition: its previous and new leader, its ISR before and after, still open.
    move = re.search(r'<tr class="move[^"]*" data-move="orders-0">.*?</tr>', oldest, re.S)
    assert move is not None
    assert cells(move.group(0)) == [
        "orders-0",
        f"{first} → {second}",
        f"{first},{second} → {second}",
        str(first),
        "open",
    ]
    move = re.search(r'<tr class="move leaderless" data-move="orders-0">.*?</tr>', newest, re.S)
    assert move is not None and cells(move.group(0))[1] == f"{second} → no leader"
    assert "severity-critical" in newest  # a partition left without a leader
    assert "severity-warning" in oldest

    by_first = text(admin_client.get("/ui/timeline/", {"broker": str(first), "incidents": "on"}))
    assert len(events_of(by_first)) == 1 and "req-one" in by_first
    third = ({1, 2, 3} - {first, second}).pop()
    by_third = text(admin_client.get("/ui/timeline/", {"broker": str(third), "incidents": "on"}))
    assert "No event matches these filters." in by_third and f'value="{third}"' in by_third
    bad = admin_client.get("/ui/timeline/", {"broker": "-3"})
    assert bad.status_code == 200 and "field-error" in text(bad)


def test_pagination_links_keep_filters_and_drop_partial(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    names = [f"t{i:03d}" for i in range(55)]
    create_topics(api, tokens["admin"], names, partitions=1, replication=1)
    first = text(admin_client.get("/ui/topics/", {"q": "t0", "partial": "1"}))
    assert len(re.findall(r'data-topic="', first)) == 50
    assert 'data-testid="page-position">page 1 of 2<' in first
    assert 'href="?q=t0&amp;page=2" rel="next"' in first and "partial" not in first
    second = text(admin_client.get("/ui/topics/", {"q": "t0", "page": "2"}))
    assert re.findall(r'data-topic="([^"]+)"', second) == names[50:]
    assert text(admin_client.get("/ui/topics/", {"page": "99"})).count('data-topic="') == 5


def test_topics_follow_topic_describe_acls(
    client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    create_topics(api, tokens["admin"], ["orders", "secret"], partitions=1, replication=2)
    for name in ("orders", "secret"):
        broker = replicas_of(name, 0)[0]
        mark_offline(api, tokens["broker"], broker, cluster[broker], name, [0])

    def grant(resource_type: str, name: str) -> None:
        creation = {
            "resource_type": resource_type,
            "resource_name": name,
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "DESCRIBE",
            "permission_type": "ALLOW",
        }
        answer = (
            get_runtime()
            .handle(
                ControllerEvent(
                    "CreateAcls", {"creations": [creation]}, RequestContext(principal="User:admin")
                )
            )
            .response
        )
        assert answer["results"] == [{"error_code": 0, "error_message": None}], answer

    grant("CLUSTER", "kafka-cluster")
    acl_cache.clear()
    ui_login(client, "alice", tokens["alice"])
    assert "No topic you may describe." in text(client.get("/ui/topics/"))  # and says why
    assert client.get("/ui/topics/orders/").status_code == 403
    assert client.get("/ui/topics/missing/").status_code == 403  # existence is not revealed
    assert "secret" not in text(client.get("/ui/timeline/"))

    grant("TOPIC", "orders")
    acl_cache.clear()
    assert re.findall(r'data-topic="([^"]+)"', text(client.get("/ui/topics/"))) == ["orders"]
    assert client.get("/ui/topics/orders/").status_code == 200
    assert client.get("/ui/topics/secret/").status_code == 403
    incidents = text(client.get("/ui/timeline/", {"incidents": "on"}))
    assert "orders-0" in incidents and "secret" not in incidents
    broker_pages = "".join(text(client.get(f"/ui/brokers/{b}/")) for b in (1, 2, 3))
    assert "orders-0" in broker_pages and "secret" not in broker_pages


# --- query counts -----------------------------------------------------------------------------
def count_queries(client: Client, path: str, params: dict[str, str] | None = None) -> int:
    acl_cache.clear()  # every measurement includes the ACL load
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path, params or {})
    assert response.status_code == 200, text(response)[:500]
    return len(queries.captured_queries)


def test_query_counts_do_not_grow_with_topics_and_partitions(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: dict[int, int]
) -> None:
    pages = [
        "/ui/",
        "/ui/topics/",
        "/ui/topics/t000/",
        "/ui/brokers/2/",
        "/ui/timeline/",
        "/ui/partitions/?offline=true",
    ]

    def offline_everything(names: list[str], partitions: int) -> None:
        for name in names:
            for index in range(partitions):
                broker = replicas_of(name, index)[-1]
                mark_offline(api, tokens["broker"], broker, cluster[broker], name, [index])

    small = [f"t{i:03d}" for i in range(2)]
    create_topics(api, tokens["admin"], small, partitions=2, replication=2)
    offline_everything(small, 2)
    before = {page: count_queries(admin_client, page) for page in pages}

    large = [f"t{i:03d}" for i in range(2, 20)]
    create_topics(api, tokens["admin"], large, partitions=2, replication=2)
    offline_everything(large, 2)
    # t000 grows from 2 to 20 partitions.
    status, body = api.post(
        "/api/v1/create-partitions",
        {"topics": [{"name": "t000", "count": 20}]},
        token=tokens["admin"],
    )
    assert status == 200 and body["results"][0]["error_code"] == 0, body
    after = {page: count_queries(admin_client, page) for page in pages}

    assert text(admin_client.get("/ui/topics/")).count('data-topic="') == 20
    assert len(rows_by_id(text(admin_client.get("/ui/topics/t000/")), "partition-")) == 20
    failures = text(admin_client.get("/ui/timeline/", {"kind": "LOG_DIR_FAILURE"}))
    assert 'data-testid="event-count">40<' in failures
    assert after == before
    assert max(after.values()) <= 12, after  # the overview: cluster, health, trends, incidents
