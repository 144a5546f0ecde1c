"""The operator's console through Django's test client: the topic and broker actions (each the
API's own request as the logged-in principal, audited, behind the one confirmation pattern),
health figures that link to the partitions they count, the timeline (a deleted topic by name),
sorting, search, and the ACL helper's bare `User:`. The same in a real Chromium: tests/browser."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEvent
from controlplane.authz import acl_cache
from controlplane.models import Acl
from replicas.models import Partition, Topic
from tests.conftest import Api
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db


def text(response: Any) -> str:
    return str(response.content.decode())


def kafka_errors(body: str) -> list[str]:
    return [
        " ".join(html.unescape(re.sub(r"<[^>]+>", "", item)).split())
        for item in re.findall(r'<li data-testid="kafka-error">(.*?)</li>', body, re.S)
    ]


def confirm_fields(body: str) -> dict[str, str]:
    form = re.search(r'<form[^>]*data-testid="confirm-form".*?</form>', body, re.S)
    assert form is not None, body[:3000]
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(0)
        )
        if name != "csrfmiddlewaretoken"
    }


def audited(api: str) -> list[tuple[str, str, str]]:
    return [
        (e.principal, e.client_id, e.outcome)
        for e in AuditEvent.objects.filter(api=api).order_by("id")
    ]


def leaders(topic: str) -> dict[int, int]:
    return dict(
        Partition.objects.filter(topic__name=topic).values_list("partition_index", "leader")
    )


@pytest.fixture
def brokers(register: Callable[..., int]) -> dict[int, int]:
    return {broker_id: register(broker_id, unfence=True) for broker_id in (1, 2, 3)}


def create(client: Client, **fields: str) -> Any:
    return client.post("/ui/topics/new/", {"create": "1", **fields})


# --- create ----------------------------------------------------------------------------------
def test_create_a_topic_after_checking_it(admin_client: Client, brokers: dict[int, int]) -> None:
    form = text(admin_client.get("/ui/topics/new/"))
    assert 'data-testid="topic-create-form"' in form and "data-refresh" not in form

    checked = admin_client.post(
        "/ui/topics/new/",
        {
            "check": "1",
            "name": "orders",
            "num_partitions": "6",
            "replication_factor": "3",
            "configs": "min.insync.replicas=2\n# a comment\nretention.ms = 3600000\n",
        },
    )
    body = text(checked)
    assert checked.status_code == 200 and 'data-testid="topic-check"' in body
    assert 'data-testid="checked-partitions">6<' in body and 'data-testid="checked-rf">3<' in body
    assert not Topic.objects.exists()  # validate_only: nothing created
    assert audited("CreateTopics") == [("User:admin", "ui", "SUCCESS")]

    made = create(
        admin_client,
        name="orders",
        num_partitions="6",
        replication_factor="3",
        configs="min.insync.replicas=2",
    )
    assert made.status_code == 302 and made["Location"] == "/ui/topics/orders/"
    assert Topic.objects.get(name="orders").partition_count == 6
    page = text(admin_client.get("/ui/topics/orders/"))
    assert "Created topic orders: 6 partitions, replication factor 3." in page
    assert 'data-testid="min-isr">2<' in page
    assert audited("CreateTopics")[-1] == ("User:admin", "ui", "SUCCESS")

    again = create(admin_client, name="orders")
    assert again.status_code == 200
    assert kafka_errors(text(again))[0].startswith("TOPIC_ALREADY_EXISTS (36) TOPIC orders")
    bad = create(admin_client, name="x", configs="no equals sign")
    assert "Line 1: expected key=value" in text(bad)
    unknown = create(admin_client, name="y", configs="no.such.config=1")
    assert kafka_errors(text(unknown))[0].startswith("INVALID_CONFIG (40)")
    assert set(Topic.objects.values_list("name", flat=True)) == {"orders"}


# --- delete (type the name) ----------------------------------------------------------------------
def test_delete_a_topic_by_typing_its_name(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    assert create(admin_client, name="orders", num_partitions="3").status_code == 302
    topic_page = text(admin_client.get("/ui/topics/orders/"))
    assert 'href="/ui/topics/orders/delete/"' in topic_page

    confirm = text(admin_client.get("/ui/topics/orders/delete/"))
    assert "Delete topic orders?" in confirm and "data-refresh" not in confirm
    assert 'data-confirm-expected="orders"' in confirm
    assert "Its 3 partitions and every message in them are deleted" in confirm
    assert confirm_fields(confirm) == {}  # the name is typed, never carried

    one_click = admin_client.post("/ui/topics/orders/delete/", {})
    assert one_click.status_code == 200 and "Delete topic orders?" in text(one_click)
    mistyped = admin_client.post("/ui/topics/orders/delete/", {"confirm": "order"})
    assert "That is not" in text(mistyped)
    assert Topic.objects.filter(name="orders").exists()
    assert audited("DeleteTopics") == []  # nothing reached the API

    deleted = admin_client.post("/ui/topics/orders/delete/", {"confirm": "orders"})
    assert deleted.status_code == 302 and deleted["Location"] == "/ui/topics/"
    assert not Topic.objects.exists()
    assert audited("DeleteTopics") == [("User:admin", "ui", "SUCCESS")]

    # The timeline keeps the deleted topic by its name.
    timeline = text(admin_client.get("/ui/timeline/", {"topic": "orders"}))
    assert "Topic orders deleted (3 partitions)" in timeline
    assert "Topic orders created: 3 partitions" in timeline
    gone = admin_client.post("/ui/topics/orders/delete/", {"confirm": "orders"})
    assert kafka_errors(text(gone))[0].startswith("UNKNOWN_TOPIC_OR_PARTITION (3)")


# --- add partitions -------------------------------------------------------------------------
def test_add_partitions_after_the_confirmation(
    admin_client: Client, brokers: dict[int, int]
) -> None:
    assert create(admin_client, name="orders", num_partitions="2").status_code == 302
    confirm = text(admin_client.get("/ui/topics/orders/partitions/"))
    assert "Add partitions to orders?" in confirm and "Partitions are never removed" in confirm
    assert 'name="count"' in confirm and 'value="3"' in confirm
    asked = admin_client.post("/ui/topics/orders/partitions/", {"count": "5"})
    assert asked.status_code == 200 and Topic.objects.get().partition_count == 2
    added = admin_client.post("/ui/topics/orders/partitions/", {"count": "5", "confirm": "yes"})
    assert added.status_code == 302 and Topic.objects.get().partition_count == 5
    assert "orders now has 5 partitions." in text(admin_client.get("/ui/topics/orders/"))
    fewer = admin_client.post("/ui/topics/orders/partitions/", {"count": "1", "confirm": "yes"})
    assert kafka_errors(text(fewer))[0].startswith("INVALID_PARTITIONS (37)")
    assert audited("CreatePartitions") == [
        ("User:admin", "ui", "SUCCESS"),
        ("User:admin", "ui", "FAILED"),
    ]


# --- elections ------------------------------------------------------------------------------
def heartbeat(api: Api, tokens: dict[str, str], broker_id: int, epoch: int, **flags: Any) -> None:
    from controlplane.models import Cluster

    offset = Cluster.objects.get(pk=1).last_offset
    status, body = api.post(
        "/internal/v1/broker-heartbeat",
        {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": offset, **flags},
        token=tokens["broker"],
    )
    assert status == 200 and body["error_code"] == 0, body


def rejoin(
    api: Api, tokens: dict[str, str], epochs: dict[int, int], topic: str, broker: int
) -> None:
    """Each leader takes `broker` back into its partition's ISR (AlterPartition)."""
    for p in Partition.objects.filter(topic__name=topic).order_by("partition_index"):
        if broker in p.isr:
            continue
        status, body = api.post(
            "/internal/v1/alter-partition",
            {
                "broker_id": p.leader,
                "broker_epoch": epochs[p.leader],
                "topics": [
                    {
                        "topic_name": topic,
                        "partitions": [
                            {
                                "partition_index": p.partition_index,
                                "leader_epoch": p.leader_epoch,
                                "partition_epoch": p.partition_epoch,
                                "new_isr": [*p.isr, broker],
                            }
                        ],
                    }
                ],
            },
            token=tokens["broker"],
        )
        assert status == 200 and body["topics"][0]["partitions"][0]["error_code"] == 0, body


def test_preferred_and_unclean_elections(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    assert (
        create(admin_client, name="orders", num_partitions="3", replication_factor="3").status_code
        == 302
    )
    preferred = {
        i: p.preferred_leader for i, p in enumerate(Partition.objects.order_by("partition_index"))
    }
    # Broker 1 is fenced and comes back: what it led moved, and stays moved.
    heartbeat(api, tokens, 1, brokers[1], want_fence=True)
    heartbeat(api, tokens, 1, brokers[1])
    rejoin(api, tokens, brokers, "orders", 1)  # back in every ISR, leading nothing
    moved = [i for i, leader in leaders("orders").items() if leader != preferred[i]]
    assert moved
    topic = text(admin_client.get("/ui/topics/orders/"))
    link = '<a href="/ui/topics/orders/?preferred_leader=false">'
    assert f'data-testid="imbalanced-count">{link}{len(moved)}<' in topic

    confirm = text(admin_client.get("/ui/topics/orders/elect/", {"type": "PREFERRED"}))
    assert (
        "Preferred leader election on orders?" in confirm and "data-confirm-expected" not in confirm
    )
    asked = admin_client.post(
        "/ui/topics/orders/elect/?type=PREFERRED", {"election_type": "PREFERRED"}
    )
    assert asked.status_code == 200 and leaders("orders") != preferred
    elected = admin_client.post(
        "/ui/topics/orders/elect/?type=PREFERRED",
        {"election_type": "PREFERRED", "confirm": "yes"},
    )
    assert elected.status_code == 302, kafka_errors(text(elected))
    assert leaders("orders") == preferred
    page = text(admin_client.get("/ui/topics/orders/"))
    assert f"Preferred election on orders: {len(moved)} partition(s) elected" in page
    # Audited as the API audits it: partitions already on their preferred leader answer
    # ELECTION_NOT_NEEDED, which makes the request PARTIAL.
    expected = "SUCCESS" if len(moved) == 3 else "PARTIAL"
    assert audited("ElectLeaders") == [("User:admin", "ui", expected)]
    timeline = text(admin_client.get("/ui/timeline/", {"kind": "ELECTION"}))
    assert f"Leader election: {len(moved)} leader" in timeline

    # One partition, unclean: typing the topic's name is asked for, loudly.
    unclean = text(
        admin_client.get("/ui/topics/orders/elect/", {"type": "UNCLEAN", "partition": "1"})
    )
    assert "UNCLEAN leader election on orders?" in unclean
    assert 'data-confirm-expected="orders"' in unclean and "confirm-loud" in unclean
    refused = admin_client.post(
        "/ui/topics/orders/elect/?type=UNCLEAN",
        {"election_type": "UNCLEAN", "partition": "1", "confirm": "yes"},
    )
    assert refused.status_code == 200 and len(audited("ElectLeaders")) == 1
    done = admin_client.post(
        "/ui/topics/orders/elect/?type=UNCLEAN",
        {"election_type": "UNCLEAN", "partition": "1", "confirm": "orders"},
    )
    assert done.status_code == 302  # led by its preferred leader already: nothing needed
    assert "1 needed no election" in text(admin_client.get("/ui/topics/orders/"))
    assert audited("ElectLeaders")[-1][:2] == ("User:admin", "ui")


# --- unregister a broker --------------------------------------------------------------------
def test_unregister_a_broker(admin_client: Client, brokers: dict[int, int]) -> None:
    detail = text(admin_client.get("/ui/brokers/3/"))
    assert 'href="/ui/brokers/3/unregister/"' in detail
    confirm = text(admin_client.get("/ui/brokers/3/unregister/"))
    assert "Unregister broker 3?" in confirm
    # A live broker: said loudly, with what it leads, and its id to type (issue 25).
    assert "Broker 3 is alive: it heartbeats and leads 0 partitions" in confirm
    assert "Leads" in confirm and "Replicas" in confirm
    assert 'name="confirm"' in confirm and 'value="yes"' not in confirm
    asked = admin_client.post("/ui/brokers/3/unregister/", {})
    assert asked.status_code == 200 and "Unregister broker 3?" in text(asked)
    one_click = admin_client.post("/ui/brokers/3/unregister/", {"confirm": "yes"})
    assert one_click.status_code == 200  # "yes" is not its id: nothing happened
    assert 'id="broker-3"' in text(admin_client.get("/ui/brokers/"))
    done = admin_client.post("/ui/brokers/3/unregister/", {"confirm": "3"})
    assert done.status_code == 302 and done["Location"] == "/ui/brokers/"
    listing = text(admin_client.get("/ui/brokers/"))
    assert "Unregistered broker 3." in listing and 'id="broker-3"' not in listing
    assert audited("UnregisterBroker") == [("User:admin", "ui", "SUCCESS")]
    assert "Broker 3 unregistered" in text(admin_client.get("/ui/timeline/", {"broker": "3"}))
    again = admin_client.post("/ui/brokers/3/unregister/", {"confirm": "3"})
    assert kafka_errors(text(again))[0].startswith("BROKER_ID_NOT_REGISTERED (102)")


# --- a principal without ACLs: the API refuses, and audits -----------------------------------
def test_actions_of_a_principal_without_acls_are_refused_and_audited(
    client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    _, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 1, "replication_factor": 1}]},
        token=tokens["admin"],
    )
    assert body["topics"][0]["error_code"] == 0
    acl_cache.clear()
    ui_login(client, "alice", tokens["alice"])
    made = client.post("/ui/topics/new/", {"create": "1", "name": "mine"})
    assert made.status_code == 403
    assert kafka_errors(text(made))[0].startswith("TOPIC_AUTHORIZATION_FAILED (29)")
    deleted = client.post("/ui/topics/orders/delete/", {"confirm": "orders"})
    assert deleted.status_code == 403
    unregistered = client.post("/ui/brokers/1/unregister/", {"confirm": "1"})
    assert unregistered.status_code == 403
    assert Topic.objects.filter(name="orders").exists()
    denied = AuditEvent.objects.filter(principal="User:alice").order_by("id")
    assert [(e.api, e.outcome, e.client_id) for e in denied] == [
        ("CreateTopics", "DENIED", "ui"),
        ("DeleteTopics", "DENIED", "ui"),
        ("UnregisterBroker", "DENIED", "ui"),
    ]


# --- health figures link to the partitions they count ---------------------------------------
def test_health_figures_link_to_the_partitions_they_count(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    create(
        admin_client,
        name="orders",
        num_partitions="6",
        replication_factor="3",
        configs="min.insync.replicas=3",
    )
    heartbeat(api, tokens, 2, brokers[2], want_fence=True)
    _, cluster = api.get("/api/v1/cluster", token=tokens["admin"])
    health = cluster["health"]
    assert health["under_replicated_partitions"] == 6 and health["under_min_isr_partitions"] == 6
    overview = text(admin_client.get("/ui/"))
    for key, filters in [
        ("under_replicated_partitions", "under_replicated=true"),
        ("under_min_isr_partitions", "under_min_isr=true"),
        ("at_min_isr_partitions", "at_min_isr=true"),
        ("leaderless_partitions", "leaderless=true"),
        ("preferred_replica_imbalance", "preferred_leader=false"),
    ]:
        figure = re.search(
            rf'<a class="card health-figure[^"]*" href="([^"]+)" data-health="{key}">', overview
        )
        assert figure is not None and html.unescape(figure.group(1)) == f"/ui/partitions/?{filters}"
        assert f'data-testid="health-{key}">{health[key]}<' in overview
        listed = text(admin_client.get(html.unescape(figure.group(1))))
        assert f'data-testid="partition-count">{health[key]}<' in listed, key
    brokers_page = text(admin_client.get("/ui/brokers/"))
    row = re.search(r'<tr id="broker-2".*?</tr>', brokers_page, re.S)
    assert (
        row is not None
        and 'data-testid="leaders"><a href="/ui/partitions/?leader=2">0<' in row.group(0)
    )
    topics = text(admin_client.get("/ui/topics/"))
    assert (
        'href="/ui/topics/orders/?under_min_isr=true"><span class="badge badge-danger">6<' in topics
    )
    assert re.search(r'id="broker-bars-data" type="application/json">', brokers_page)
    # A partition under min ISR does not look like any other.
    topic = text(admin_client.get("/ui/topics/orders/"))
    assert topic.count(">under min ISR</span>") == 6
    listed = text(admin_client.get("/ui/partitions/", {"under_min_isr": "true"}))
    assert listed.count(">under min ISR</span>") == 6


# --- sorting, search, the ACL helper ----------------------------------------------------------
def test_columns_sort_and_say_how(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    for name, partitions in (("a", "1"), ("b", "3"), ("c", "2")):
        create(admin_client, name=name, num_partitions=partitions)
    order = re.findall(r'data-topic="([^"]+)"', text(admin_client.get("/ui/topics/")))
    assert order == ["a", "b", "c"]
    by_size = text(admin_client.get("/ui/topics/", {"sort": "-partitions"}))
    assert re.findall(r'data-topic="([^"]+)"', by_size) == ["b", "c", "a"]
    assert re.search(r'aria-sort="descending"><a class="sort" href="\?sort=partitions"', by_size)
    assert 'aria-sort="none"><a class="sort" href="?sort=name"' in by_size
    brokers_desc = text(admin_client.get("/ui/brokers/", {"sort": "-id"}))
    assert re.findall(r'<tr id="broker-(\d+)"', brokers_desc) == ["3", "2", "1"]
    odd = admin_client.get("/ui/topics/", {"sort": "-nonsense"})
    assert odd.status_code == 200 and re.findall(r'data-topic="([^"]+)"', text(odd)) == [
        "a",
        "b",
        "c",
    ]


def test_global_search_finds_topics_brokers_and_principals(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    create(admin_client, name="payments-eu", num_partitions="1")
    _, body = api.post(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "payments-eu",
                    "pattern_type": "LITERAL",
                    "principal": "User:payments-app",
                    "host": "*",
                    "operation": "READ",
                    "permission_type": "ALLOW",
                }
            ]
        },
        token=tokens["admin"],
    )
    assert body["results"][0]["error_code"] == 0
    found = text(admin_client.get("/ui/search/", {"q": "payments"}))
    assert 'href="/ui/topics/payments-eu/"' in found
    assert "User:payments-app" in found and "/ui/acls/?principal=User%3Apayments-app" in found
    by_id = text(admin_client.get("/ui/search/", {"q": "2"}))
    assert 'href="/ui/brokers/2/"' in by_id
    assert 'role="search"' in text(admin_client.get("/ui/"))  # on every page


def test_the_acl_helper_refuses_a_principal_without_a_name(admin_client: Client) -> None:
    for principal in ("User:", "User:  "):
        response = admin_client.post(
            "/ui/acls/new-client/",
            {
                "role": "producer",
                "principal": principal,
                "host": "*",
                "topic": "orders",
                "pattern_type": "LITERAL",
            },
        )
        assert response.status_code == 200
        assert "names nobody" in text(response)
    assert not Acl.objects.exists()
    assert not AuditEvent.objects.filter(api="CreateAcls").exists()


def test_checking_a_topic_previews_its_canary_partitions(
    admin_client: Client, register: Callable[..., int]
) -> None:
    """KIP-1095 in the create form: which partitions would be canary, and whether they would be
    isolated (three canary brokers for RF 3: yes; RF 3 with two: placed like any, and said)."""
    for broker_id in (1, 2, 3):
        register(broker_id, unfence=True)
    for broker_id in (11, 12):
        register(broker_id, unfence=True, pod="canary-broker")

    def check(rf: str, percent: str) -> str:
        answer = admin_client.post(
            "/ui/topics/new/",
            {
                "check": "1",
                "name": "orders",
                "num_partitions": "8",
                "replication_factor": rf,
                "configs": f"percent.canary.partition={percent}",
            },
        )
        assert answer.status_code == 200
        return text(answer)

    isolated = check("2", "25")
    assert "2 of its 8 partitions would be canary" in isolated and ">0, 4<" in isolated
    assert 'data-testid="canary-not-isolated"' not in isolated
    too_few = check("3", "25")
    assert 'data-testid="canary-not-isolated"' in too_few
    assert (
        "Fewer unfenced <code>canary-broker</code> brokers than the replication factor (3)"
        in too_few
    )
    assert 'data-testid="canary-preview"' not in check("2", "0")
    assert not Topic.objects.exists()  # every check was validate_only


# --- the console's second pass (issue 25): small things an operator missed ------------------
def test_a_missing_timeline_event_is_named_as_one(admin_client: Client) -> None:
    missing = admin_client.get("/ui/timeline/999999/")
    assert missing.status_code == 404
    page = text(missing)
    assert "Timeline event not found" in page and "Broker not found" not in page
    assert 'href="/ui/timeline/"' in page


def test_every_page_has_a_favicon_and_the_api_docs(admin_client: Client) -> None:
    from django.contrib.staticfiles import finders

    page = text(admin_client.get("/ui/"))
    icon = re.search(r'<link rel="icon" type="image/svg\+xml" href="([^"]+)"', page)
    assert icon is not None and icon.group(1).endswith("frontend/favicon.svg")
    found = finders.find("frontend/favicon.svg")
    assert found and Path(found).read_text().startswith("<svg")
    assert 'data-testid="api-docs"' in page and 'href="/api/docs/"' in page
    assert 'aria-keyshortcuts="/"' in page  # "/" focuses the search box


def test_the_replication_factor_is_on_the_topics_list_and_page(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    for name, factor in (("rf-three", 3), ("rf-one", 1)):
        status, body = api.post(
            "/api/v1/create-topics",
            {"topics": [{"name": name, "num_partitions": 4, "replication_factor": factor}]},
            token=tokens["admin"],
        )
        assert status == 200 and body["topics"][0]["error_code"] == 0, body
    listing = text(admin_client.get("/ui/topics/"))
    factors = re.findall(r'data-testid="replication-factor"[^>]*>(\d+)<', listing)
    assert factors == ["1", "3"]  # rf-one, rf-three, by name
    page = text(admin_client.get("/ui/topics/rf-three/"))
    assert re.search(r'data-testid="replication-factor">3<', page)


def _luminance(hex_colour: str) -> float:
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def test_every_chart_series_reads_on_both_colour_schemes() -> None:
    """WCAG 2.1's 3:1 for graphics, against the light card and the dark one (ui.css)."""
    from frontend.tables.charts import COLORS

    css = Path("frontend/static/frontend/ui.css").read_text()
    light = re.search(r"--surface:\s*(#[0-9a-fA-F]{6})", css)
    dark_block = css[css.index("prefers-color-scheme: dark") :]
    dark = re.search(r"--surface:\s*(#[0-9a-fA-F]{6})", dark_block)
    assert light and dark
    for name, colour in COLORS.items():
        for card in (light.group(1), dark.group(1)):
            high, low = sorted((_luminance(colour), _luminance(card)), reverse=True)
            assert (high + 0.05) / (low + 0.05) >= 3, (name, colour, card)


def test_a_broker_holding_twice_the_others_is_flagged(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    assignments = [[1], [1], [1], [1], [2], [3]]
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": "skewed",
                    "assignments": [
                        {"partition_index": i, "broker_ids": ids}
                        for i, ids in enumerate(assignments)
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    listing = text(admin_client.get("/ui/brokers/"))
    rows = dict(re.findall(r'<tr[^>]*id="broker-(\d)"[^>]*>(.*?)</tr>', listing, re.S))
    assert 'data-testid="overloaded"' in rows["1"]  # 4 replicas, the others' median 1
    assert 'data-testid="overloaded"' not in rows["2"] + rows["3"]


def test_the_partitions_topic_filter_contains_as_the_topics_one_does(
    admin_client: Client, api: Api, tokens: dict[str, str], brokers: dict[int, int]
) -> None:
    for name in ("orders", "orders.v2", "payments"):
        status, body = api.post(
            "/api/v1/create-topics",
            {"topics": [{"name": name, "num_partitions": 2, "replication_factor": 1}]},
            token=tokens["admin"],
        )
        assert status == 200 and body["topics"][0]["error_code"] == 0, body
    contains = text(admin_client.get("/ui/partitions/", {"topic_contains": "orders"}))
    assert 'data-testid="partition-count">4<' in contains  # orders and orders.v2
    assert 'placeholder="contains…"' in contains
    topics = text(admin_client.get("/ui/topics/", {"q": "orders"}))
    assert 'data-testid="topic-count">2<' in topics  # the same "contains", on both pages
    exact = text(admin_client.get("/ui/partitions/", {"topic": "orders"}))  # a topic's link
    assert 'data-testid="partition-count">2<' in exact and 'data-testid="exact-topic"' in exact
