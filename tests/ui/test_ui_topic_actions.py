"""The topic actions' second pass (issue 25, points 4 and 6), through Django's test client: a
preferred election previewed before it runs and summarised after (grouped by outcome, reason
and broker, the details folded), and a create form that says what empty counts become, warns of
min.insync.replicas above the replication factor, names every bad config and previews the
placement and the effective configs."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from brokers.models import Broker
from replicas.models import Partition, Topic
from tests.conftest import Api
from tests.ui.test_ui_console import heartbeat

pytestmark = pytest.mark.django_db


def text(response: Any) -> str:
    return str(response.content.decode())


def shown(body: str, testid: str) -> list[str]:
    """The text of every element with this data-testid (tags stripped, spaces squeezed)."""
    found = re.findall(rf'data-testid="{testid}"[^>]*>(.*?)</', body, re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", "", f)).split()) for f in found]


def create(client: Client, **fields: str) -> Any:
    return client.post("/ui/topics/new/", {"create": "1", **fields})


def check(client: Client, **fields: str) -> Any:
    return client.post("/ui/topics/new/", {"check": "1", **fields})


def set_cluster_default(api: Api, tokens: dict[str, str], name: str, value: str) -> None:
    status, body = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [{"name": name, "config_operation": "SET", "value": value}],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200, body


def rejoin(api: Api, tokens: dict[str, str], epochs: dict[int, int], broker: int) -> None:
    """Each leader takes `broker` back into the ISR of its partitions that it replicates
    (AlterPartition, as a leader whose follower caught up)."""
    for p in Partition.objects.filter(topic__name="orders").order_by("partition_index"):
        if broker not in p.replicas or broker in p.isr:
            continue
        item = {
            "partition_index": p.partition_index,
            "leader_epoch": p.leader_epoch,
            "partition_epoch": p.partition_epoch,
            "new_isr": [*p.isr, broker],
        }
        status, body = api.post(
            "/internal/v1/alter-partition",
            {
                "broker_id": p.leader,
                "broker_epoch": epochs[p.leader],
                "topics": [{"topic_name": "orders", "partitions": [item]}],
            },
            token=tokens["broker"],
        )
        assert status == 200 and body["topics"][0]["partitions"][0]["error_code"] == 0, body


def elections_audited() -> list[str]:
    return list(AuditEvent.objects.filter(api="ElectLeaders").values_list("outcome", flat=True))


# --- point 4: the election's preview and its summary ------------------------------------------
def degraded(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int], n: int
) -> dict[int, int]:
    """Four brokers and topic `orders` of `n` partitions, RF 3, then: broker 4 bounced and back
    in every ISR (its partitions can move back), broker 1 bounced but out of every ISR (its
    cannot), broker 2 fenced (its cannot either)."""
    epochs = {b: register(b, unfence=True) for b in (1, 2, 3, 4)}
    made = create(admin_client, name="orders", num_partitions=str(n), replication_factor="3")
    assert made.status_code == 302
    heartbeat(api, tokens, 4, epochs[4], want_fence=True)
    heartbeat(api, tokens, 4, epochs[4])
    rejoin(api, tokens, epochs, 4)
    heartbeat(api, tokens, 1, epochs[1], want_fence=True)
    heartbeat(api, tokens, 1, epochs[1])
    heartbeat(api, tokens, 2, epochs[2], want_fence=True)
    return epochs


def expected_outcomes(topic: str) -> dict[str, set[int]]:
    """Each partition's outcome, by Kafka's rule stated plainly (not the code under test)."""
    fenced = set(Broker.objects.filter(fenced=True).values_list("broker_id", flat=True))
    found: dict[str, set[int]] = {"elected": set(), "not needed": set(), "fenced": set()}
    found["not in isr"] = set()
    for p in Partition.objects.filter(topic__name=topic):
        preferred = p.replicas[0]
        if p.leader == preferred:
            found["not needed"].add(p.partition_index)
        elif preferred in fenced:
            found["fenced"].add(p.partition_index)
        elif preferred not in p.isr:
            found["not in isr"].add(p.partition_index)
        else:
            found["elected"].add(p.partition_index)
    return found


def test_a_preferred_election_is_previewed_then_summarised(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    degraded(admin_client, api, tokens, register, 24)
    want = expected_outcomes("orders")
    assert all(want.values()), want  # every kind of outcome is present
    before = dict(Partition.objects.values_list("partition_index", "leader"))

    confirm = text(admin_client.get("/ui/topics/orders/elect/", {"type": "PREFERRED"}))
    assert 'data-testid="election-preview"' in confirm
    not_possible = len(want["fenced"]) + len(want["not in isr"])
    assert shown(confirm, "count-elected") == [f"{len(want['elected'])} would move"]
    assert shown(confirm, "count-not-needed") == [f"{len(want['not needed'])} not needed"]
    assert shown(confirm, "count-not-possible") == [f"{not_possible} not possible"]
    # Grouped by reason and broker: broker 2 fenced, broker 1 out of the ISR.
    assert "PREFERRED_LEADER_NOT_AVAILABLE</code>: its broker is fenced" in confirm
    assert "broker 2 (FENCED, rack rack-2)" in confirm
    assert "PREFERRED_LEADER_NOT_AVAILABLE</code>: not in the ISR (still catching up)" in confirm
    assert "broker 1 (UNFENCED, rack rack-1)" in confirm
    assert f"broker 4 ({len(want['elected'])})" in shown(confirm, "election-by-broker")[0]
    # The preview wrote nothing and asked the controller nothing.
    assert dict(Partition.objects.values_list("partition_index", "leader")) == before
    assert elections_audited() == []

    result = admin_client.post(
        "/ui/topics/orders/elect/?type=PREFERRED",
        {"election_type": "PREFERRED", "confirm": "yes"},
    )
    body = text(result)
    assert result.status_code == 200 and 'data-testid="election-result"' in body
    assert 'data-testid="kafka-error"' not in body  # no wall of red
    assert shown(body, "count-elected") == [f"{len(want['elected'])} elected"]
    assert shown(body, "count-not-possible") == [f"{not_possible} not possible"]
    assert shown(body, "count-not-needed") == [f"{len(want['not needed'])} not needed"]
    groups = body.count('data-testid="election-group"')
    assert groups == 4 and body.count('data-testid="election-details"') == groups
    assert "<details data-testid" in body and "<details open" not in body  # folded
    assert "its broker is fenced" in body and "not in the ISR" in body
    # The elected ones moved to their preferred leader; the others did not move.
    after = {p.partition_index: p for p in Partition.objects.all()}
    assert all(after[i].leader == after[i].replicas[0] for i in want["elected"])
    assert all(after[i].leader == before[i] for i in want["fenced"] | want["not in isr"])
    assert elections_audited() == ["PARTIAL"]


def test_an_election_that_moves_everything_says_where_in_one_line(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    degraded(admin_client, api, tokens, register, 12)
    one = min(expected_outcomes("orders")["elected"])
    confirm = text(
        admin_client.get("/ui/topics/orders/elect/", {"type": "PREFERRED", "partition": str(one)})
    )
    assert shown(confirm, "count-elected") == ["1 would move"]
    assert shown(confirm, "count-not-possible") == ["0 not possible"]
    done = admin_client.post(
        "/ui/topics/orders/elect/?type=PREFERRED",
        {"election_type": "PREFERRED", "partition": str(one), "confirm": "yes"},
    )
    assert done.status_code == 302
    page = text(admin_client.get("/ui/topics/orders/"))
    assert "Preferred election on orders: 1 partition(s) elected (to broker 4: 1)." in page


def test_an_unclean_election_is_previewed_too(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    degraded(admin_client, api, tokens, register, 6)
    confirm = text(admin_client.get("/ui/topics/orders/elect/", {"type": "UNCLEAN"}))
    assert shown(confirm, "count-not-needed") == ["6 not needed"]
    assert "has a leader (an unclean election only elects leaderless partitions)" in confirm


def test_the_preview_reads_in_a_bounded_number_of_queries(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    for b in (1, 2, 3):
        register(b, unfence=True)
    counts = []
    for name, partitions in (("small", "4"), ("large", "120")):
        assert create(admin_client, name=name, num_partitions=partitions).status_code == 302
        with CaptureQueriesContext(connection) as queries:
            page = admin_client.get(f"/ui/topics/{name}/elect/", {"type": "PREFERRED"})
        assert page.status_code == 200
        assert f"{partitions} not needed" in text(page)
        counts.append(len(queries))
    assert counts[0] == counts[1], counts  # no query per partition


# --- point 6: create topic warns, names and previews ------------------------------------------
def test_empty_counts_say_they_take_the_cluster_defaults(
    admin_client: Client, register: Callable[..., int], settings: Any
) -> None:
    for b in (1, 2, 3):
        register(b, unfence=True)
    form = text(admin_client.get("/ui/topics/new/"))
    assert "empty: the cluster&#x27;s num.partitions, 1 (STATIC_BROKER_CONFIG)" in form
    assert shown(form, "default-rf") == ["1"]

    settings.CP_STATIC_BROKER_CONFIGS = {
        **settings.CP_STATIC_BROKER_CONFIGS,
        "num.partitions": "5",
        "default.replication.factor": "2",
    }
    form = text(admin_client.get("/ui/topics/new/"))
    assert "num.partitions, 5 (STATIC_BROKER_CONFIG)" in form
    assert 'placeholder="5"' in form and 'placeholder="2"' in form
    checked = text(check(admin_client, name="orders"))
    assert shown(checked, "checked-partitions") == ["5"]
    assert shown(checked, "checked-rf") == ["2"]
    assert (
        'data-testid="partitions-defaulted">(empty: the cluster\'s <code>num.partitions</code>'
        ", STATIC_BROKER_CONFIG)" in checked
    )
    notes = shown(checked, "create-note")
    assert "Partitions left empty: the cluster's num.partitions, 5" in notes[0]
    assert "default.replication.factor, 2" in notes[1]
    explicit = text(check(admin_client, name="orders", num_partitions="3", replication_factor="3"))
    assert 'data-testid="partitions-defaulted"' not in explicit
    assert 'data-testid="create-note"' not in explicit


def test_min_insync_replicas_above_the_replication_factor_is_warned_and_held(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    for b in (1, 2, 3):
        register(b, unfence=True)
    fields = {"name": "orders", "replication_factor": "2", "configs": "min.insync.replicas=3"}
    checked = text(check(admin_client, **fields))
    (warning,) = shown(checked, "create-warning")
    assert "min.insync.replicas is 3 (given) but the replication factor is 2" in warning
    assert "producers with acks=all would be refused (NOT_ENOUGH_REPLICAS)" in warning
    assert 'data-testid="accept-warnings"' in checked

    held = create(admin_client, **fields)  # Create, without ticking "create it anyway"
    assert held.status_code == 200 and not Topic.objects.exists()
    assert "would be refused" in text(held) and 'data-testid="topic-check"' in text(held)
    made = create(admin_client, **fields, accept_warnings="1")
    assert made.status_code == 302 and Topic.objects.filter(name="orders").exists()
    assert "producers with acks=all would be refused" in text(admin_client.get(made["Location"]))

    # The cluster's own min.insync.replicas counts too, and says where it comes from.
    set_cluster_default(api, tokens, "min.insync.replicas", "2")
    cluster = text(check(admin_client, name="payments", replication_factor="1"))
    assert "min.insync.replicas is 2 (the cluster&#x27;s, DYNAMIC_DEFAULT_BROKER_CONFIG)" in cluster
    equal = text(check(admin_client, name="payments", replication_factor="2"))
    assert "equals the replication factor (2)" in equal and "accept-warnings" not in equal
    fine = text(check(admin_client, name="payments", replication_factor="3"))
    assert 'data-testid="create-warning"' not in fine


def test_every_bad_config_is_named(admin_client: Client, register: Callable[..., int]) -> None:
    register(1, unfence=True)
    bad = create(
        admin_client,
        name="orders",
        configs="no.such.config=1\nretention.ms=abc\ncleanup.policy=bogus\nmin.insync.replicas=2",
    )
    body = text(bad)
    errors = re.findall(r'<div class="field-error">(.*?)</div>', body, re.S)
    assert len(errors) == 3, errors
    assert "Unknown topic config name: no.such.config" in errors[0]
    assert "Invalid value abc for configuration retention.ms" in errors[1]
    assert "Invalid value bogus for configuration cleanup.policy" in errors[2]
    assert 'data-testid="kafka-error"' in body  # the controller's own answer stays
    assert not Topic.objects.exists()


def test_the_preview_shows_the_placement_the_controller_then_makes(
    admin_client: Client, register: Callable[..., int]
) -> None:
    for b in (1, 2, 3, 4, 5, 6):
        register(b, unfence=True)  # racks rack-1, rack-2, rack-0, rack-1, rack-2, rack-0
    for b in (11, 12):
        register(b, unfence=True, pod="canary-broker")
    fields = {
        "name": "orders",
        "num_partitions": "8",
        "replication_factor": "3",
        "configs": "percent.canary.partition=25\nretention.ms=3600000",
    }
    checked = text(check(admin_client, **fields))
    rows = re.findall(
        r'data-testid="placement-partition"><td class="num">(\d+)</td><td class="mono">([^<]*)</td>'
        r"<td>([^<]*)</td>",
        checked,
    )
    assert [int(r[0]) for r in rows] == list(range(8))
    previewed = {int(i): tuple(int(b) for b in reps.split(", ")) for i, reps, _ in rows}
    # Rack-aware: each regular partition's three replicas on three racks.
    assert all(len(set(racks.split(", "))) == 3 for i, _, racks in rows if int(i) % 4)
    assert checked.count('data-testid="placement-canary"') == 2  # partitions 0 and 4
    assert "8 partitions, 3 replicas each, over 8 brokers" in shown(checked, "placement-summary")[0]
    # Effective configs with their sources, the given ones first.
    given = dict(
        re.findall(
            r'data-testid="config-given"><td class="mono">([^<]*)</td><td class="mono">([^<]*)',
            checked,
        )
    )
    assert given == {"percent.canary.partition": "25", "retention.ms": "3600000"}
    assert re.search(
        r'data-name="min.insync.replicas"><td class="mono">min.insync.replicas</td>'
        r'<td class="mono">1</td><td>DEFAULT_CONFIG</td>',
        checked,
    )
    assert 'retention.ms</td><td class="mono">3600000</td><td>DYNAMIC_TOPIC_CONFIG' in checked

    assert create(admin_client, **fields).status_code == 302
    made = {
        p.partition_index: tuple(p.replicas) for p in Partition.objects.filter(topic__name="orders")
    }
    assert made == previewed  # the preview was the controller's placement


def test_placement_warns_of_replicas_on_fenced_brokers(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    epochs = {b: register(b, unfence=True) for b in (1, 2, 3)}
    heartbeat(api, tokens, 3, epochs[3], want_fence=True)
    checked = text(check(admin_client, name="orders", num_partitions="3", replication_factor="3"))
    assert "Only 2 broker(s) are unfenced for a replication factor of 3" in checked
    assert shown(checked, "placement-fenced") == ["3 would have a replica on a fenced broker"]
