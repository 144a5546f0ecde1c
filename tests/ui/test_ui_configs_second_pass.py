"""The config diff's second pass (issue 25, point 7) through Django's test client: each change
shows the effective value before (the resource's own value, else the cluster default's, the
static broker config's or the default, with its source) and after, and what it does: shortened
retention deletes data, a raised min.insync.replicas refuses acks=all producers on the
partitions counted, a cleanup policy change, unclean leader election. A concurrent edit still
gets a fresh diff, with effective values."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEvent
from controlplane.models import Cluster, ConfigEntry
from replicas.models import Partition
from tests.conftest import Api

pytestmark = pytest.mark.django_db

TOPIC_EDIT = "/ui/configs/topics/orders/edit/"
DEFAULT_EDIT = "/ui/configs/brokers/default/edit/"
BROKER_EDIT = "/ui/configs/brokers/1/edit/"


def text(response: Any) -> str:
    return str(response.content.decode())


def plain(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def diff_cells(body: str, key: str) -> list[str]:
    row = re.search(rf'<tr[^>]*data-diff="{re.escape(key)}"[^>]*>(.*?)</tr>', body, re.S)
    assert row is not None, f"no diff row {key}"
    return [plain(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def consequences(body: str) -> list[tuple[str, str, str]]:
    """(key, severity, text) of each consequence shown."""
    return [
        (key, severity, plain(inner))
        for key, severity, inner in re.findall(
            r'<li[^>]*data-testid="consequence" data-config="([^"]+)" '
            r'data-severity="([^"]+)"[^>]*>(.*?)</li>',
            body,
            re.S,
        )
    ]


def hidden_fields(body: str, form_testid: str) -> dict[str, str]:
    form = re.search(rf'<form[^>]*data-testid="{form_testid}".*?</form>', body, re.S)
    assert form is not None, body[:2000]
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(0)
        )
        if name != "csrfmiddlewaretoken"
    }


def alter(api: Api, token: str, rtype: str, name: str, **configs: str | None) -> None:
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [
                    {"name": k, "config_operation": "DELETE" if v is None else "SET", "value": v}
                    for k, v in configs.items()
                ],
            }
        ],
        "validate_only": False,
    }
    status, answer = api.post("/api/v1/incremental-alter-configs", body, token=token)
    assert status == 200 and answer["responses"][0]["error_code"] == 0, answer


def create_topic(api: Api, token: str, name: str, partitions: int, rf: int) -> None:
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": rf}]},
        token=token,
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body


@pytest.fixture
def epochs(register: Callable[..., int], api: Api, tokens: dict[str, str]) -> dict[int, int]:
    """Brokers 1-3 and the topic "orders" (2 partitions, RF 2)."""
    found = {broker_id: register(broker_id, unfence=True) for broker_id in (1, 2, 3)}
    create_topic(api, tokens["admin"], "orders", 2, 2)
    return found


def fence(api: Api, tokens: dict[str, str], broker_id: int, epoch: int) -> None:
    """The broker asks to be fenced: the controller takes it out of every ISR."""
    offset = Cluster.objects.get(pk=1).last_offset
    status, body = api.post(
        "/internal/v1/broker-heartbeat",
        {
            "broker_id": broker_id,
            "broker_epoch": epoch,
            "current_metadata_offset": offset,
            "want_fence": True,
        },
        token=tokens["broker"],
    )
    assert status == 200 and body["error_code"] == 0, body


# --- effective values ------------------------------------------------------------------------
def test_the_diff_shows_effective_values_with_their_sources(
    admin_client: Client, epochs: dict[int, int]
) -> None:
    body = text(
        admin_client.post(
            TOPIC_EDIT, {"value__retention.ms": "86400000", "value__compression.type": "zstd"}
        )
    )
    assert diff_cells(body, "retention.ms") == ["retention.ms", "SET", "7 d (default)", "→", "1 d"]
    assert diff_cells(body, "compression.type")[2] == "producer (default)"
    assert "Effective now" in body and "Effective after" in body


def test_the_diff_names_the_cluster_default_and_what_a_reset_falls_back_to(
    admin_client: Client, api: Api, tokens: dict[str, str], epochs: dict[int, int]
) -> None:
    alter(api, tokens["admin"], "BROKER", "", **{"log.retention.ms": "259200000"})
    alter(api, tokens["admin"], "TOPIC", "orders", **{"segment.ms": "60000"})
    body = text(
        admin_client.post(
            TOPIC_EDIT,
            {
                "value__retention.ms": "3600000",
                "value__segment.ms": "60000",
                "delete__segment.ms": "on",
            },
        )
    )
    assert diff_cells(body, "retention.ms")[2:] == ["3 d (cluster default)", "→", "1 h"]
    assert diff_cells(body, "segment.ms")[1:] == [
        "DELETE",
        "1 min (topic)",
        "→",
        "(deleted) falls back to 7 d (default)",
    ]
    # The broker's page: its effective value comes from the cluster default too.
    broker = text(admin_client.post(BROKER_EDIT, {"value__log.retention.ms": "432000000"}))
    assert diff_cells(broker, "log.retention.ms")[2:] == ["3 d (cluster default)", "→", "5 d"]
    assert consequences(broker) == []  # longer retention deletes nothing


# --- consequences ----------------------------------------------------------------------------
def test_shortening_retention_says_data_is_deleted(
    admin_client: Client, epochs: dict[int, int]
) -> None:
    body = text(
        admin_client.post(
            TOPIC_EDIT,
            {"value__retention.ms": "86400000", "value__retention.bytes": "1073741824"},
        )
    )
    found = dict(((key, severity), said) for key, severity, said in consequences(body))
    assert found[("retention.ms", "danger")] == (
        "Data loss: Shortening retention.ms from 7 d to 1 d permanently deletes data older than "
        "1 d in every partition of topic orders, at the next retention check. It cannot be "
        "undone."
    )
    assert (
        "from unlimited to 1 GiB permanently deletes the oldest data beyond 1 GiB"
        in (found[("retention.bytes", "danger")])
    )
    assert 'role="alert"' in body
    # The cluster default's scope: the topics without their own value.
    default = text(admin_client.post(DEFAULT_EDIT, {"value__log.retention.ms": "3600000"}))
    ((key, severity, said),) = consequences(default)
    assert (key, severity) == ("log.retention.ms", "danger")
    assert "older than 1 h in every topic without its own retention.ms" in said
    # Lengthening, or leaving retention unlimited, says nothing of deletion.
    longer = text(admin_client.post(TOPIC_EDIT, {"value__retention.ms": "1209600000"}))
    assert consequences(longer) == []
    assert 'data-testid="config-consequences"' not in longer


def test_raising_min_insync_counts_the_partitions_whose_producers_are_refused(
    admin_client: Client, api: Api, tokens: dict[str, str], epochs: dict[int, int]
) -> None:
    create_topic(api, tokens["admin"], "payments", 3, 3)
    fence(api, tokens, 3, epochs[3])
    shrunk = Partition.objects.filter(topic__name="payments", isr_count=2).count()
    assert shrunk == 3  # every partition of payments has a replica on broker 3
    # min.insync.replicas 2 on payments: every ISR has 2 replicas, nobody is refused yet.
    payments = "/ui/configs/topics/payments/edit/"
    two = text(admin_client.post(payments, {"value__min.insync.replicas": "2"}))
    ((key, severity, said),) = consequences(two)
    assert (key, severity) == ("min.insync.replicas", "info")
    assert "has at least 2 in-sync replicas now" in said

    three = text(admin_client.post(payments, {"value__min.insync.replicas": "3"}))
    ((_, severity, said),) = consequences(three)
    assert severity == "warn"
    assert said == (
        "Warning: Raising min.insync.replicas from 1 to 3: 3 partitions of topic payments have"
        " fewer than 3 in-sync replicas now. Producers with acks=all are "
        "refused there (NOT_ENOUGH_REPLICAS)."
    )
    four = text(admin_client.post(payments, {"value__min.insync.replicas": "4"}))
    ((_, _, said),) = consequences(four)
    assert "3 have fewer than 4 replicas at all (replication factor), so never will" in said

    # The cluster default governs the topics without their own value: orders (RF 2, both
    # partitions below 3) and payments (3 partitions, ISR 2)...
    default = text(admin_client.post(DEFAULT_EDIT, {"value__min.insync.replicas": "3"}))
    ((_, _, said),) = consequences(default)
    assert "5 partitions of the topics without their own min.insync.replicas have fewer" in said
    assert "2 have fewer than 3 replicas at all" in said
    # ...until payments sets its own.
    alter(api, tokens["admin"], "TOPIC", "payments", **{"min.insync.replicas": "1"})
    default = text(admin_client.post(DEFAULT_EDIT, {"value__min.insync.replicas": "3"}))
    ((_, _, said),) = consequences(default)
    assert "2 partitions of the topics without their own min.insync.replicas" in said
    # Lowering it refuses nobody.
    alter(api, tokens["admin"], "TOPIC", "payments", **{"min.insync.replicas": "3"})
    lower = text(admin_client.post(payments, {"value__min.insync.replicas": "2"}))
    assert consequences(lower) == []


def test_cleanup_policy_and_unclean_election_say_what_they_do(
    admin_client: Client, epochs: dict[int, int]
) -> None:
    body = text(
        admin_client.post(
            TOPIC_EDIT,
            {
                "value__cleanup.policy": "compact",
                "value__unclean.leader.election.enable": "true",
            },
        )
    )
    found = {key: (severity, said) for key, severity, said in consequences(body)}
    severity, said = found["cleanup.policy"]
    assert severity == "warn"
    assert said.startswith("Warning: cleanup.policy changes from delete to compact:")
    assert "keeps only the latest record of each key" in said
    assert "records without a key are refused" in said
    assert "retention.ms and retention.bytes no longer delete anything" in said
    severity, said = found["unclean.leader.election.enable"]
    assert severity == "danger"
    assert "a replica outside the ISR may become leader" in said
    assert "the acknowledged records it lacks are lost" in said


# --- the concurrent edit ----------------------------------------------------------------------
def test_a_concurrent_edit_gets_a_fresh_effective_diff(
    admin_client: Client, api: Api, tokens: dict[str, str], epochs: dict[int, int]
) -> None:
    preview = text(admin_client.post(TOPIC_EDIT, {"value__retention.ms": "86400000"}))
    assert diff_cells(preview, "retention.ms")[2] == "7 d (default)"
    alter(api, tokens["admin"], "TOPIC", "orders", **{"retention.ms": "172800000"})
    audited = AuditEvent.objects.filter(api="IncrementalAlterConfigs").count()
    stale = admin_client.post(
        "/ui/configs/topics/orders/apply/", hidden_fields(preview, "config-apply-form")
    )
    assert stale.status_code == 409
    body = text(stale)
    assert "The configs changed since this diff was made" in body
    assert diff_cells(body, "retention.ms")[2:] == ["2 d (topic)", "→", "1 d"]
    assert "from 2 d to 1 d permanently deletes" in consequences(body)[0][2]
    assert AuditEvent.objects.filter(api="IncrementalAlterConfigs").count() == audited
    applied = admin_client.post(
        "/ui/configs/topics/orders/apply/", hidden_fields(body, "config-apply-form")
    )
    assert applied.status_code == 302
    assert ConfigEntry.objects.get(resource_name="orders", name="retention.ms").value == (
        "86400000"
    )
