"""The admin pages (configs, ACLs, client quotas, delegation tokens, the audit trail) through
Django's test client (a config change in a real Chromium: tests/browser).

Every write goes through the public API's own view as the logged-in principal: each test checks
the projection changed (or did not) and the audit event the API wrote for it."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from configs.models import ClientQuota
from controlplane.authz import acl_cache
from controlplane.models import Acl, Cluster, ConfigEntry
from security.models import DelegationToken
from tests.conftest import Api, with_token_secret_key
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

SECRET = "the-token-secret-0123456789"
TOPIC_CONFIG = "/ui/configs/topics/orders/"
DEFAULT_CONFIG = "/ui/configs/brokers/default/"
BROKER_CONFIG = "/ui/configs/brokers/1/"
LIST_PAGES = ["/ui/configs/", "/ui/acls/", "/ui/quotas/", "/ui/tokens/", "/ui/audit/"]
FORM_PAGES = [
    f"{TOPIC_CONFIG}edit/",
    f"{DEFAULT_CONFIG}edit/",
    f"{BROKER_CONFIG}edit/",
    "/ui/acls/new/",
    "/ui/acls/new-client/",
    "/ui/quotas/set/",
    "/ui/tokens/new/",
    "/ui/tokens/renew/",
    "/ui/tokens/expire/",
]
PAGES = [*LIST_PAGES, TOPIC_CONFIG, DEFAULT_CONFIG, BROKER_CONFIG, *FORM_PAGES]


def text(response: Any) -> str:
    return str(response.content.decode())


def cells(row: str) -> list[str]:
    return [
        " ".join(re.sub(r"<[^>]+>", " ", cell).split())
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


def cells_text(fragments: list[str]) -> list[str]:
    return [" ".join(re.sub(r"<[^>]+>", " ", f).split()) for f in fragments]


def row_of(body: str, attribute: str, key: str) -> str:
    match = re.search(rf'<tr[^>]*{attribute}="{re.escape(key)}"[^>]*>.*?</tr>', body, re.S)
    assert match is not None, f"no row {attribute}={key}"
    return match.group(0)


def hidden_fields(body: str, form_testid: str) -> dict[str, str]:
    """The hidden inputs of one form of a page (what a browser would post back)."""
    form = re.search(rf'<form[^>]*data-testid="{form_testid}".*?</form>', body, re.S)
    assert form is not None, body[:2000]
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(0)
        )
        if name != "csrfmiddlewaretoken"
    }


def kafka_errors(body: str) -> list[str]:
    return [
        " ".join(html.unescape(re.sub(r"<[^>]+>", "", item)).split())
        for item in re.findall(r'<li data-testid="kafka-error">(.*?)</li>', body, re.S)
    ]


def stored_configs() -> dict[tuple[str, str, str], str]:
    return {(e.resource_type, e.resource_name, e.name): e.value for e in ConfigEntry.objects.all()}


def events(api: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(api=api).order_by("id"))


def api_incremental(api: Api, token: str, rtype: str, name: str, **configs: str | None) -> None:
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
        ]
    }
    status, answer = api.post("/api/v1/incremental-alter-configs", body, token=token)
    assert status == 200 and answer["responses"][0]["error_code"] == 0, answer


def set_secret(settings: Any) -> None:
    """The node's delegation-token key (a setting, never a record), from now on in this test."""
    settings.CP_STATIC_BROKER_CONFIGS = with_token_secret_key(
        settings.CP_STATIC_BROKER_CONFIGS, SECRET
    )


@pytest.fixture
def cluster(register: Callable[..., int], api: Api, tokens: dict[str, str]) -> str:
    """Brokers 1-3 and the topic "orders"."""
    for broker_id in (1, 2, 3):
        register(broker_id, unfence=True)
    status, body = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 2, "replication_factor": 2}]},
        token=tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    return "orders"


@pytest.fixture
def alice_client(tokens: dict[str, str]) -> Client:
    """A non-super principal with no ACLs at all."""
    acl_cache.clear()
    client = Client()
    ui_login(client, "alice", tokens["alice"])
    return client


# --- pages ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PAGES)
def test_pages_require_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/ui/login/?next={path}"
    assert client.get(path, {"partial": "1"}).status_code == 401


@pytest.mark.parametrize("path", PAGES)
def test_each_page_renders(admin_client: Client, cluster: str, path: str) -> None:
    response = admin_client.get(path)
    assert response.status_code == 200, text(response)[:2000]
    body = text(response)
    assert "<h1>" in body and "User:admin" in body
    # Lists refresh themselves; forms do not (a refresh would lose what is typed or shown).
    assert ("data-refresh" in body) is (path not in FORM_PAGES)
    partial = admin_client.get(path, {"partial": "1"})
    assert partial.status_code == 200 and partial["X-UI-Fragment"] == "1"
    assert "<html" not in text(partial)


def test_navigation_links_to_the_admin_pages(admin_client: Client) -> None:
    body = text(admin_client.get("/ui/"))
    for path, label in [
        ("/ui/configs/", "Configs"),
        ("/ui/acls/", "ACLs"),
        ("/ui/quotas/", "Quotas"),
        ("/ui/tokens/", "Tokens"),
        ("/ui/audit/", "Audit"),
    ]:
        assert f'<a href="{path}">{label}</a>' in body
        page = text(admin_client.get(path))
        assert f'<a href="{path}" aria-current="page">{label}</a>' in page
    assert '<a href="/ui/timeline/">Timeline</a>' in body  # the cluster pages stay


def test_unknown_config_resources_are_404(admin_client: Client, cluster: str) -> None:
    assert admin_client.get("/ui/configs/topics/nope/").status_code == 404
    assert admin_client.get("/ui/configs/topics/nope/edit/").status_code == 404
    missing = admin_client.get("/ui/configs/brokers/42/")
    assert missing.status_code == 404 and "Broker not found" in text(missing)
    assert admin_client.get("/ui/acls/no-such-acl/delete/").status_code == 404


# --- configs ------------------------------------------------------------------------------------
def test_config_pages_show_value_source_default_and_documentation(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: str
) -> None:
    api_incremental(api, tokens["admin"], "TOPIC", "orders", **{"retention.ms": "1000"})
    api_incremental(api, tokens["admin"], "BROKER", "", **{"compression.type": "gzip"})
    api_incremental(api, tokens["admin"], "BROKER", "1", **{"log.retention.ms": "5000"})

    topic = text(admin_client.get(TOPIC_CONFIG))
    # Durations in units people read, the raw milliseconds on hover.
    retention = row_of(topic, "data-config", "retention.ms")
    assert cells(retention) == [
        "retention.ms",
        "1 s",
        "DYNAMIC_TOPIC_CONFIG",
        "7 d",
        "How long a log segment is kept before it is deleted; -1 keeps it forever. (LONG)",
    ]
    assert 'title="1000 ms"' in retention and 'title="604800000 ms"' in retention
    assert cells(row_of(topic, "data-config", "compression.type"))[1:3] == [
        "gzip",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    ]
    assert cells(row_of(topic, "data-config", "unclean.leader.election.enable"))[1:3] == [
        "false",
        "STATIC_BROKER_CONFIG",
    ]
    segment = row_of(topic, "data-config", "segment.bytes")
    assert cells(segment)[1:3] == ["1 GiB", "DEFAULT_CONFIG"]
    assert 'title="1073741824 bytes"' in segment

    broker = text(admin_client.get(BROKER_CONFIG))
    assert cells(row_of(broker, "data-config", "log.retention.ms"))[1:3] == [
        "5 s",
        "DYNAMIC_BROKER_CONFIG",
    ]
    assert cells(row_of(broker, "data-config", "compression.type"))[1:3] == [
        "gzip",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    ]
    assert "read-only" in row_of(broker, "data-config", "num.partitions")

    default = text(admin_client.get(DEFAULT_CONFIG))
    assert cells(row_of(default, "data-config", "compression.type"))[1:3] == [
        "gzip",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
    ]
    # The cluster default lists every key, not only those set at its level.
    assert cells(row_of(default, "data-config", "log.retention.ms"))[1:3] == [
        "7 d",
        "DEFAULT_CONFIG",
    ]

    index = text(admin_client.get("/ui/configs/"))
    for link in (TOPIC_CONFIG, DEFAULT_CONFIG, BROKER_CONFIG, "/ui/configs/brokers/3/"):
        assert f'href="{link}"' in index


def test_sensitive_configs_never_show_their_value(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: str, settings: Any
) -> None:
    """The token key is a node setting: shown as a static password (redacted, read-only),
    never offered for editing, and a forged form field for it changes nothing."""
    set_secret(settings)
    for path in (DEFAULT_CONFIG, BROKER_CONFIG, f"{DEFAULT_CONFIG}edit/", f"{BROKER_CONFIG}edit/"):
        body = text(admin_client.get(path))
        assert SECRET not in body, path
    for path in (DEFAULT_CONFIG, BROKER_CONFIG):
        row = row_of(text(admin_client.get(path)), "data-config", "delegation.token.secret.key")
        assert cells(row)[1:3] == ["(redacted)", "STATIC_BROKER_CONFIG"]
        assert "sensitive" in row and "read-only" in row
    for path in (f"{DEFAULT_CONFIG}edit/", f"{BROKER_CONFIG}edit/"):
        assert "value__delegation.token.secret.key" not in text(admin_client.get(path))

    before = Cluster.objects.get(pk=1).last_offset
    forged = admin_client.post(
        f"{DEFAULT_CONFIG}edit/", {"value__delegation.token.secret.key": "another-secret-value"}
    )
    assert forged.status_code in (200, 302)
    assert "another-secret-value" not in text(forged)
    assert Cluster.objects.get(pk=1).last_offset == before
    assert ("BROKER", "", "delegation.token.secret.key") not in stored_configs()


def test_topic_config_diff_then_apply(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: str
) -> None:
    api_incremental(
        api, tokens["admin"], "TOPIC", "orders", **{"cleanup.policy": "compact", "segment.ms": "9"}
    )
    before = stored_configs()
    audited = AuditEvent.objects.count()

    form = text(admin_client.get(f"{TOPIC_CONFIG}edit/"))
    assert 'name="value__cleanup.policy"' in form and 'value="compact"' in form
    assert 'name="delete__segment.ms"' in form and 'name="delete__retention.ms"' not in form
    assert 'name="value__num.partitions"' not in form  # read-only keys are not editable

    preview = admin_client.post(
        f"{TOPIC_CONFIG}edit/",
        {
            "value__retention.ms": "5000",  # SET a key not set yet
            "value__cleanup.policy": "",  # emptied: DELETE
            "value__segment.ms": "9",
            "delete__segment.ms": "on",  # reset: DELETE
            "value__max.message.bytes": "",  # untouched
        },
    )
    assert preview.status_code == 200
    body = text(preview)
    assert "data-refresh" not in body
    # Effective values on both sides, each with where it comes from (issue 25).
    assert cells(row_of(body, "data-diff", "retention.ms")) == [
        "retention.ms",
        "SET",
        "7 d (default)",
        "→",
        "5 s",
    ]
    assert cells(row_of(body, "data-diff", "cleanup.policy")) == [
        "cleanup.policy",
        "DELETE",
        "compact (topic)",
        "→",
        "(deleted) falls back to delete (default)",
    ]
    assert cells(row_of(body, "data-diff", "segment.ms"))[:3] == [
        "segment.ms",
        "DELETE",
        "9 ms (topic)",
    ]
    assert 'data-diff="max.message.bytes"' not in body
    # The diff step changes nothing and sends nothing to the API.
    assert stored_configs() == before
    assert AuditEvent.objects.count() == audited

    fields = hidden_fields(body, "config-apply-form")
    applied = admin_client.post(f"{TOPIC_CONFIG}apply/", fields)
    assert applied.status_code == 302 and applied["Location"] == TOPIC_CONFIG
    after = stored_configs()
    assert after[("TOPIC", "orders", "retention.ms")] == "5000"
    assert ("TOPIC", "orders", "cleanup.policy") not in after
    assert ("TOPIC", "orders", "segment.ms") not in after

    (event,) = events("IncrementalAlterConfigs")[-1:]
    assert (event.principal, event.client_id, event.outcome) == ("User:admin", "ui", "SUCCESS")
    assert event.client_host == "127.0.0.1" and event.request_id == applied["X-Request-ID"]
    assert event.resources == [
        {"resource_type": "TOPIC", "resource_name": "orders", "error_code": 0}
    ]
    assert event.first_offset is not None and event.last_offset == event.first_offset + 2

    page = text(admin_client.get(TOPIC_CONFIG))
    assert "Changed 3 configs of topic orders." in page
    assert cells(row_of(page, "data-config", "retention.ms"))[1:3] == [
        "5 s",
        "DYNAMIC_TOPIC_CONFIG",
    ]
    assert "Changed 3 configs" not in text(admin_client.get(TOPIC_CONFIG))  # shown once


@pytest.mark.parametrize(
    ("path", "resource_name", "key", "value"),
    [
        (BROKER_CONFIG, "1", "log.retention.ms", "7000"),
        (DEFAULT_CONFIG, "", "min.insync.replicas", "2"),
    ],
)
def test_broker_and_cluster_default_configs_change_through_the_diff(
    admin_client: Client, cluster: str, path: str, resource_name: str, key: str, value: str
) -> None:
    preview = admin_client.post(f"{path}edit/", {f"value__{key}": value})
    shown = {"7000": "7 s"}.get(value, value)  # durations in units people read
    before = {"log.retention.ms": "7 d (default)", "min.insync.replicas": "1 (default)"}[key]
    assert cells(row_of(text(preview), "data-diff", key)) == [key, "SET", before, "→", shown]
    assert ("BROKER", resource_name, key) not in stored_configs()
    applied = admin_client.post(f"{path}apply/", hidden_fields(text(preview), "config-apply-form"))
    assert applied.status_code == 302
    assert stored_configs()[("BROKER", resource_name, key)] == value
    event = events("IncrementalAlterConfigs")[-1]
    assert (event.principal, event.outcome) == ("User:admin", "SUCCESS")
    assert event.resources[0]["resource_type"] == "BROKER"
    assert event.resources[0]["resource_name"] == resource_name


def test_config_preview_refuses_bad_values_with_kafkas_words(
    admin_client: Client, cluster: str
) -> None:
    before = stored_configs()
    response = admin_client.post(
        f"{TOPIC_CONFIG}edit/", {"value__retention.ms": "soon", "value__segment.bytes": "1"}
    )
    assert response.status_code == 200
    body = text(response)
    assert "Invalid value soon for configuration retention.ms: Not a number of type LONG" in body
    assert "Invalid value 1 for configuration segment.bytes: Value must be at least 14" in body
    assert 'data-testid="config-diff"' not in body
    nothing = admin_client.post(f"{TOPIC_CONFIG}edit/", {})
    assert "Nothing to change" in text(nothing)
    assert stored_configs() == before


def test_config_apply_shows_kafka_errors_and_is_audited(admin_client: Client, cluster: str) -> None:
    preview = admin_client.post(f"{TOPIC_CONFIG}edit/", {"value__retention.ms": "5"})
    fields = hidden_fields(text(preview), "config-apply-form")
    # A key the registry does not know, as a hand-made confirmation would carry it.
    fields["changes"] = json.dumps(
        [{"name": "no.such.key", "config_operation": "SET", "value": "1"}]
    )
    response = admin_client.post(f"{TOPIC_CONFIG}apply/", fields)
    assert response.status_code == 200
    assert kafka_errors(text(response)) == [
        "INVALID_CONFIG (40) topic orders: Unknown topic config name: no.such.key"
    ]
    assert ("TOPIC", "orders", "no.such.key") not in stored_configs()
    event = events("IncrementalAlterConfigs")[-1]
    assert (event.principal, event.outcome, event.error_code) == ("User:admin", "FAILED", 40)


@pytest.mark.parametrize(
    "changes",
    [
        "not json",
        "[]",
        "{}",
        '[{"name": "retention.ms"}]',
        '[{"name": "retention.ms", "config_operation": "APPEND", "value": "1"}]',
        json.dumps([{"name": "a", "config_operation": "DELETE"}] * 2),
        '[{"name": 5, "config_operation": "SET", "value": "1"}]',
    ],
)
def test_a_malformed_confirmation_never_500s(
    admin_client: Client, cluster: str, changes: str
) -> None:
    audited = AuditEvent.objects.count()
    response = admin_client.post(f"{TOPIC_CONFIG}apply/", {"changes": changes})
    assert response.status_code == 400
    assert "malformed" in text(response)
    assert AuditEvent.objects.count() == audited


def test_a_diff_made_stale_by_another_change_is_shown_again(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: str
) -> None:
    preview = admin_client.post(f"{TOPIC_CONFIG}edit/", {"value__retention.ms": "5000"})
    fields = hidden_fields(text(preview), "config-apply-form")
    api_incremental(api, tokens["admin"], "TOPIC", "orders", **{"retention.ms": "42"})
    stale = admin_client.post(f"{TOPIC_CONFIG}apply/", fields)
    assert stale.status_code == 409
    body = text(stale)
    assert "changed since this diff was made" in body
    assert cells(row_of(body, "data-diff", "retention.ms"))[2:5] == ["42 ms (topic)", "→", "5 s"]
    assert stored_configs()[("TOPIC", "orders", "retention.ms")] == "42"
    again = admin_client.post(f"{TOPIC_CONFIG}apply/", hidden_fields(body, "config-apply-form"))
    assert again.status_code == 302
    assert stored_configs()[("TOPIC", "orders", "retention.ms")] == "5000"


# --- ACLs ---------------------------------------------------------------------------------------
ACL = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "pattern_type": "LITERAL",
    "principal": "User:bob",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}


def acl_set() -> set[tuple[str, ...]]:
    return set(
        Acl.objects.values_list(
            "resource_type", "resource_name", "pattern_type", "principal", "operation"
        )
    )


def test_acl_create_list_and_delete_with_confirmation(admin_client: Client) -> None:
    created = admin_client.post("/ui/acls/new/", ACL)
    assert created.status_code == 302
    assert created["Location"] == "/ui/acls/?principal=User%3Abob"
    assert acl_set() == {("TOPIC", "orders", "LITERAL", "User:bob", "READ")}
    event = events("CreateAcls")[-1]
    assert (event.principal, event.client_id, event.outcome) == ("User:admin", "ui", "SUCCESS")

    listed = text(admin_client.get(created["Location"]))
    assert "Created ACL: ALLOW User:bob READ on TOPIC:orders (LITERAL)" in listed
    acl = Acl.objects.get()
    row = cells(row_of(listed, "data-acl-id", acl.id))
    assert row == ["TOPIC:orders (LITERAL)", "*", "READ", "ALLOW", "Delete…"]
    assert 'data-acl-group="User:bob"' in listed

    confirm = admin_client.get(f"/ui/acls/{acl.id}/delete/")
    assert confirm.status_code == 200
    body = text(confirm)
    assert "Delete this ACL?" in body and "data-refresh" not in body
    assert Acl.objects.count() == 1  # the confirmation step deletes nothing
    fields = hidden_fields(body, "confirm-form")
    assert fields == {**ACL, "confirm": "yes"}
    # Without the confirmation's own field, a POST deletes nothing: it asks again.
    unconfirmed = {k: v for k, v in fields.items() if k != "confirm"}
    asked = admin_client.post("/ui/acls/delete/", unconfirmed)
    assert asked.status_code == 200 and "Delete this ACL?" in text(asked)
    assert Acl.objects.count() == 1
    deleted = admin_client.post("/ui/acls/delete/", fields)
    assert deleted.status_code == 302 and deleted["Location"] == "/ui/acls/"
    assert not Acl.objects.exists()
    event = events("DeleteAcls")[-1]
    assert (event.principal, event.outcome) == ("User:admin", "SUCCESS")
    assert "Deleted ACL: ALLOW User:bob READ" in text(admin_client.get("/ui/acls/"))

    again = admin_client.post("/ui/acls/delete/", fields)
    assert again.status_code == 302
    assert "No ACL matched" in text(admin_client.get("/ui/acls/"))


@pytest.mark.parametrize(
    ("role", "group", "expected"),
    [
        (
            "producer",
            "",
            {
                ("TOPIC", "orders", "PREFIXED", "User:app", "WRITE"),
                ("TOPIC", "orders", "PREFIXED", "User:app", "DESCRIBE"),
                ("TOPIC", "orders", "PREFIXED", "User:app", "CREATE"),
            },
        ),
        (
            "consumer",
            "billing",
            {
                ("TOPIC", "orders", "PREFIXED", "User:app", "READ"),
                ("TOPIC", "orders", "PREFIXED", "User:app", "DESCRIBE"),
                ("GROUP", "billing", "PREFIXED", "User:app", "READ"),
            },
        ),
    ],
)
def test_producer_and_consumer_helper(
    admin_client: Client, role: str, group: str, expected: set[tuple[str, ...]]
) -> None:
    response = admin_client.post(
        "/ui/acls/new-client/",
        {
            "role": role,
            "principal": "User:app",
            "host": "*",
            "topic": "orders",
            "group": group,
            "pattern_type": "PREFIXED",
        },
    )
    assert response.status_code == 302, text(response)[:2000]
    assert acl_set() == expected
    assert set(Acl.objects.values_list("permission_type", flat=True)) == {"ALLOW"}
    (event,) = events("CreateAcls")
    assert len(event.resources) == 3 and event.outcome == "SUCCESS"


def test_acl_forms_show_form_and_kafka_errors(admin_client: Client) -> None:
    no_group = admin_client.post(
        "/ui/acls/new-client/",
        {"role": "consumer", "principal": "User:app", "host": "*", "topic": "t"},
    )
    assert no_group.status_code == 200 and "A consumer needs its consumer group." in text(no_group)
    bad_principal = admin_client.post("/ui/acls/new/", {**ACL, "principal": "bob"})
    assert "Invalid principal" in text(bad_principal)
    bad_choice = admin_client.post("/ui/acls/new/", {**ACL, "operation": "EVERYTHING"})
    assert bad_choice.status_code == 200 and "Select a valid choice" in text(bad_choice)
    assert not AuditEvent.objects.exists()  # nothing reached the API

    cluster = admin_client.post(
        "/ui/acls/new/", {**ACL, "resource_type": "CLUSTER", "resource_name": "foo"}
    )
    assert cluster.status_code == 200
    (error,) = kafka_errors(text(cluster))
    assert error.startswith("INVALID_REQUEST (42)")
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in error
    assert not Acl.objects.exists()
    assert events("CreateAcls")[-1].outcome == "FAILED"


def test_acl_list_groups_and_filters(
    admin_client: Client, api: Api, tokens: dict[str, str]
) -> None:
    creations = [
        {**ACL, "principal": principal, "resource_name": topic}
        for principal in ("User:bob", "User:carol")
        for topic in ("orders", "payments")
    ]
    status, answer = api.post(
        "/api/v1/create-acls", {"creations": creations}, token=tokens["admin"]
    )
    assert status == 200 and answer["results"] == [{"error_code": 0, "error_message": None}] * 4

    by_principal = text(admin_client.get("/ui/acls/"))
    assert re.findall(r'data-acl-group="([^"]+)"', by_principal) == ["User:bob", "User:carol"]
    by_resource = text(admin_client.get("/ui/acls/", {"group": "resource"}))
    assert re.findall(r'data-acl-group="([^"]+)"', by_resource) == [
        "TOPIC:orders (LITERAL)",
        "TOPIC:payments (LITERAL)",
    ]
    carol = text(admin_client.get("/ui/acls/", {"principal": "User:carol"}))
    assert re.findall(r'data-acl-group="([^"]+)"', carol) == ["User:carol"]
    assert 'data-testid="acl-count">2<' in carol
    payments = text(
        admin_client.get("/ui/acls/", {"resource_type": "TOPIC", "resource_name": "payments"})
    )
    assert payments.count("data-acl-id=") == 2
    # "Who can read orders.v2?": Kafka's MATCH, prefixed and wildcard ACLs too (issue 25).
    extra = [
        {**ACL, "principal": "User:dave", "resource_name": "orders.", "pattern_type": "PREFIXED"},
        {**ACL, "principal": "User:erin", "resource_name": "*"},
        {**ACL, "principal": "User:finn", "resource_name": "payments.", "pattern_type": "PREFIXED"},
    ]
    status, answer = api.post("/api/v1/create-acls", {"creations": extra}, token=tokens["admin"])
    assert status == 200, answer
    matched = text(
        admin_client.get(
            "/ui/acls/",
            {
                "resource_type": "TOPIC",
                "resource_name": "orders.v2",
                "pattern_type": "MATCH",
                "group": "resource",
            },
        )
    )
    assert re.findall(r'data-acl-group="([^"]+)"', matched) == [
        "TOPIC:* (LITERAL)",
        "TOPIC:orders. (PREFIXED)",
    ]
    assert 'data-testid="acl-match"' in matched
    bad = admin_client.get("/ui/acls/", {"operation": "NOPE", "group": "sideways"})
    assert bad.status_code == 200 and "Select a valid choice" in text(bad)


# --- client quotas ------------------------------------------------------------------------------
def quotas() -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    found: dict[Any, dict[str, float]] = {}
    for row in ClientQuota.objects.all():
        found.setdefault(tuple(tuple(pair) for pair in row.entity), {})[row.key] = row.value
    return found


def test_quotas_set_list_and_remove(admin_client: Client) -> None:
    steps = [
        {"user": "alice", "key": "producer_byte_rate", "value": "1024", "action": "set"},
        {"user": "alice", "key": "request_percentage", "value": "12.5", "action": "set"},
        {"client_id_default": "on", "key": "consumer_byte_rate", "value": "2048", "action": "set"},
        {"ip": "10.0.0.1", "key": "connection_creation_rate", "value": "5", "action": "set"},
        {"ip_default": "on", "key": "connection_creation_rate", "value": "50", "action": "set"},
    ]
    for step in steps:
        response = admin_client.post("/ui/quotas/set/", step)
        assert response.status_code == 302, text(response)[:2000]
    assert quotas() == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        (("client-id", None),): {"consumer_byte_rate": 2048.0},
        (("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0},
        (("ip", None),): {"connection_creation_rate": 50.0},
    }
    recorded = events("AlterClientQuotas")
    assert len(recorded) == 5
    assert {(e.principal, e.client_id, e.outcome) for e in recorded} == {
        ("User:admin", "ui", "SUCCESS")
    }

    body = text(admin_client.get("/ui/quotas/"))
    assert "Set request_percentage = 12.5 for user=alice." in body
    alice = row_of(body, "data-entity", "user=alice")
    # A byte rate in units people read (raw on hover), never 1.04858e+06.
    assert cells_text(re.findall(r'data-testid="quota-value">(.*?)</span>\s', alice)) == [
        "1 KiB/s",
        "12.5",
    ]
    assert 'title="1024 bytes/s"' in alice
    assert 'data-entity="client-id=&lt;default&gt;"' in body
    assert 'data-testid="quota-count">4<' in body
    ips = text(admin_client.get("/ui/quotas/", {"entity_type": "ip"}))
    assert ips.count("data-entity=") == 2 and "alice" not in ips

    # The list's remove button posts the entity and key back.
    remove = re.search(
        r'<li data-quota="producer_byte_rate">.*?<form[^>]*>(.*?)</form>', alice, re.S
    )
    assert remove is not None
    fields = dict(
        re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', remove.group(1))
    )
    fields.pop("csrfmiddlewaretoken")
    assert fields == {"user": "alice", "key": "producer_byte_rate", "action": "remove"}
    # It asks first, as every destructive action does: nothing is removed yet.
    asked = admin_client.post("/ui/quotas/set/", fields)
    assert asked.status_code == 200 and "Remove producer_byte_rate of user=alice?" in text(asked)
    assert quotas()[(("user", "alice"),)]["producer_byte_rate"] == 1024.0
    confirmed = hidden_fields(text(asked), "confirm-form")
    assert confirmed == {**fields, "confirm": "yes"}
    assert admin_client.post("/ui/quotas/set/", confirmed).status_code == 302
    assert quotas()[(("user", "alice"),)] == {"request_percentage": 12.5}
    assert "Removed producer_byte_rate of user=alice." in text(admin_client.get("/ui/quotas/"))


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"key": "producer_byte_rate", "value": "1", "action": "set"}, "Name a user"),
        (
            {"user": "a", "user_default": "on", "key": "producer_byte_rate", "value": "1"},
            "Give a name or tick default, not both.",
        ),
        ({"user": "a", "key": "producer_byte_rate", "action": "set"}, "needs its value"),
        ({"user": "a", "key": "producer_byte_rate", "value": "inf", "action": "set"}, "number"),
        ({"user": "a", "key": "bytes_please", "value": "1", "action": "set"}, "valid choice"),
    ],
)
def test_quota_form_errors_never_reach_the_api(
    admin_client: Client, data: dict[str, str], error: str
) -> None:
    response = admin_client.post("/ui/quotas/set/", data)
    assert response.status_code == 200 and error in text(response)
    assert not ClientQuota.objects.exists() and not AuditEvent.objects.exists()


def test_quota_kafka_errors_are_shown(admin_client: Client) -> None:
    cases = [
        (
            {"user": "a", "key": "connection_creation_rate", "value": "5", "action": "set"},
            "INVALID_REQUEST (42) user=a: Unknown quota key connection_creation_rate "
            "(invalid configuration key for this entity)",
        ),
        (
            {"user": "a", "ip": "10.0.0.1", "key": "producer_byte_rate", "value": "5"},
            "INVALID_REQUEST (42) user=a, ip=10.0.0.1: Invalid quota entity combination, "
            "IP entity should not be combined with User or ClientId",
        ),
        (
            {"user": "a", "key": "producer_byte_rate", "value": "1.5", "action": "set"},
            "INVALID_REQUEST (42) user=a: Quota producer_byte_rate must be an integer.",
        ),
    ]
    for data, expected in cases:
        response = admin_client.post("/ui/quotas/set/", {"action": "set", **data})
        assert response.status_code == 200
        assert kafka_errors(text(response)) == [expected]
    assert not ClientQuota.objects.exists()
    assert [e.outcome for e in events("AlterClientQuotas")] == ["FAILED"] * 3


# --- delegation tokens --------------------------------------------------------------------------
def create_token(client: Client, **data: str) -> tuple[Any, str]:
    response = client.post("/ui/tokens/new/", data, follow=True)  # post/redirect/get
    assert response.status_code == 200, text(response)[:2000]
    match = re.search(r'data-testid="token-hmac">([^<]+)<', text(response))
    assert match is not None, text(response)[:3000]
    return response, html.unescape(match.group(1))


def test_token_hmac_is_shown_once_and_never_again(
    admin_client: Client, api: Api, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    response, hmac_value = create_token(admin_client, renewers="User:alice")
    assert len(hmac_value) > 40
    assert "no-store" in response["Cache-Control"]
    assert "data-refresh" not in text(response)  # a refresh must not fetch it again
    token = DelegationToken.objects.get()
    assert token.owner == "User:admin" and token.renewers == ["User:alice"]
    assert token.token_id in text(response)
    (event,) = events("CreateDelegationToken")
    assert (event.principal, event.client_id, event.outcome) == ("User:admin", "ui", "SUCCESS")

    later = [
        admin_client.get(path, params)
        for path in ("/ui/tokens/", "/ui/tokens/new/", "/ui/audit/", "/ui/", DEFAULT_CONFIG)
        for params in ({}, {"partial": "1"})
    ]
    for page in later:
        assert page.status_code == 200
        assert hmac_value not in text(page) and html.escape(hmac_value) not in text(page)
    assert token.token_id in text(later[0])
    # Nothing kept it for later: not the session, not a cookie (messages live in one).
    assert hmac_value not in json.dumps(dict(admin_client.session.items()), default=str)
    assert all(hmac_value not in morsel.value for morsel in admin_client.cookies.values())


def test_token_renew_and_expire(
    admin_client: Client, api: Api, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    _, hmac_value = create_token(admin_client)
    before = DelegationToken.objects.get().expiration_timestamp

    renewed = admin_client.post(
        "/ui/tokens/renew/", {"hmac": hmac_value, "renew_period_ms": "60000"}
    )
    assert renewed.status_code == 302 and renewed["Location"] == "/ui/tokens/"
    after = DelegationToken.objects.get().expiration_timestamp
    assert after < before  # a minute from now instead of a day from creation
    assert events("RenewDelegationToken")[-1].outcome == "SUCCESS"
    listing = text(admin_client.get("/ui/tokens/"))
    assert "The token now expires at" in listing and hmac_value not in listing

    wrong = admin_client.post("/ui/tokens/renew/", {"hmac": "AAAA", "renew_period_ms": "1"})
    assert wrong.status_code == 200
    assert kafka_errors(text(wrong)) == [
        "DELEGATION_TOKEN_NOT_FOUND (62): Delegation token not found."
    ]
    assert "AAAA" not in text(wrong)  # the HMAC box is never filled back in

    # Expiring asks first: the token's row leads to its confirmation, which names it.
    token_id = DelegationToken.objects.get().token_id
    listing = text(admin_client.get("/ui/tokens/"))
    assert f'href="/ui/tokens/expire/?token_id={token_id}"' in listing
    confirm = text(admin_client.get("/ui/tokens/expire/", {"token_id": token_id}))
    assert f"Expire token {token_id}?" in confirm and "data-refresh" not in confirm
    one_click = admin_client.post("/ui/tokens/expire/", {"hmac": hmac_value})
    assert one_click.status_code == 200 and DelegationToken.objects.exists()
    assert hmac_value not in text(one_click)
    # The HMAC of another token than the one named acts on nothing.
    _, other_hmac = create_token(admin_client)
    mismatch = admin_client.post(
        "/ui/tokens/expire/", {"token_id": token_id, "hmac": other_hmac, "confirm": "yes"}
    )
    assert "is not token" in text(mismatch) and DelegationToken.objects.count() == 2
    expired = admin_client.post(
        "/ui/tokens/expire/", {"token_id": token_id, "hmac": hmac_value, "confirm": "yes"}
    )
    assert expired.status_code == 302
    assert DelegationToken.objects.get().token_id != token_id
    other = DelegationToken.objects.get().token_id
    expired = admin_client.post(
        "/ui/tokens/expire/", {"token_id": other, "hmac": other_hmac, "confirm": "yes"}
    )
    assert expired.status_code == 302
    assert not DelegationToken.objects.exists()
    assert events("ExpireDelegationToken")[-1].outcome == "SUCCESS"
    assert "The token expired: it is removed." in text(admin_client.get("/ui/tokens/"))


def test_tokens_disabled_without_a_secret(admin_client: Client) -> None:
    listing = text(admin_client.get("/ui/tokens/"))
    assert "DELEGATION_TOKEN_AUTH_DISABLED" in listing
    # Where the key is set: each node's setting (and each broker's), never a config.
    assert "CP_DELEGATION_TOKEN_SECRET_KEY" in listing and "every node" in listing
    assert 'href="/ui/configs/brokers/default/edit/"' not in listing
    response = admin_client.post("/ui/tokens/new/", {})
    assert response.status_code == 200
    assert kafka_errors(text(response)) == [
        "DELEGATION_TOKEN_AUTH_DISABLED (61): Delegation Token feature is not enabled."
    ]
    assert not DelegationToken.objects.exists()
    bad_owner = admin_client.post("/ui/tokens/new/", {"owner": "nobody"})
    assert "expected a string in format principalType:principalName" in text(bad_owner)


# --- authorization: refused, and audited as DENIED ---------------------------------------------
@pytest.mark.parametrize(
    "path", [*LIST_PAGES, TOPIC_CONFIG, f"{TOPIC_CONFIG}edit/", DEFAULT_CONFIG]
)
def test_a_principal_without_acls_may_not_view_the_pages(
    alice_client: Client, cluster: str, path: str
) -> None:
    response = alice_client.get(path)
    assert response.status_code == 403
    assert "Not authorized" in text(response) and "User:alice" in text(response)


def test_a_principal_allowed_to_view_still_needs_describe_configs(
    alice_client: Client, api: Api, tokens: dict[str, str], cluster: str
) -> None:
    grant = {**ACL, "resource_type": "CLUSTER", "resource_name": "kafka-cluster"}
    grant.update(principal="User:alice", operation="DESCRIBE")
    status, answer = api.post("/api/v1/create-acls", {"creations": [grant]}, token=tokens["admin"])
    assert status == 200 and answer["results"][0]["error_code"] == 0
    acl_cache.clear()
    assert alice_client.get("/ui/acls/").status_code == 200
    assert alice_client.get("/ui/audit/").status_code == 200
    for path in (TOPIC_CONFIG, BROKER_CONFIG, "/ui/quotas/"):
        refused = alice_client.get(path)
        assert refused.status_code == 403 and "DESCRIBE_CONFIGS" in text(refused), path
    assert "orders" not in text(alice_client.get("/ui/configs/"))  # not a visible topic
    # What is hidden is said, not passed off as an empty cluster (issue 25).
    topics = text(alice_client.get("/ui/topics/"))
    assert 'data-testid="hidden-topics"' in topics and "No topics yet" not in topics
    assert "1 topic hidden: you may not DESCRIBE it" in topics
    partitions = text(alice_client.get("/ui/partitions/"))
    assert 'data-testid="hidden-topics"' in partitions and "No partitions yet" not in partitions
    overview = text(alice_client.get("/ui/"))
    assert "1 topic you may not DESCRIBE included" in overview


def test_writes_of_a_principal_without_acls_are_refused_by_the_api_and_audited(
    alice_client: Client, cluster: str
) -> None:
    before = (stored_configs(), acl_set(), quotas())
    changes = json.dumps([{"name": "retention.ms", "config_operation": "SET", "value": "1"}])

    topic = alice_client.post(f"{TOPIC_CONFIG}apply/", {"changes": changes})
    assert topic.status_code == 403
    (error,) = kafka_errors(text(topic))
    assert error.startswith("TOPIC_AUTHORIZATION_FAILED (29)")
    assert "retention.ms" not in text(topic)  # configs she may not read are not shown
    broker = alice_client.post(f"{BROKER_CONFIG}apply/", {"changes": changes})
    assert broker.status_code == 403
    assert kafka_errors(text(broker))[0].startswith("CLUSTER_AUTHORIZATION_FAILED (31)")
    acl = alice_client.post("/ui/acls/new/", ACL)
    assert acl.status_code == 403
    assert kafka_errors(text(acl))[0].startswith("CLUSTER_AUTHORIZATION_FAILED (31)")
    delete = alice_client.post("/ui/acls/delete/", {**ACL, "confirm": "yes"})
    assert delete.status_code == 403
    quota = alice_client.post(
        "/ui/quotas/set/", {"user": "a", "key": "producer_byte_rate", "value": "1", "action": "set"}
    )
    assert quota.status_code == 403
    assert kafka_errors(text(quota))[0].startswith("CLUSTER_AUTHORIZATION_FAILED (31)")
    # The diff step reads configs: it is refused like the page, before any request is made.
    assert (
        alice_client.post(f"{TOPIC_CONFIG}edit/", {"value__retention.ms": "1"}).status_code == 403
    )

    assert (stored_configs(), acl_set(), quotas()) == before
    denied = AuditEvent.objects.filter(principal="User:alice").order_by("id")
    assert [(e.api, e.outcome, e.client_id) for e in denied] == [
        ("IncrementalAlterConfigs", "DENIED", "ui"),
        ("IncrementalAlterConfigs", "DENIED", "ui"),
        ("CreateAcls", "DENIED", "ui"),
        ("DeleteAcls", "DENIED", "ui"),
        ("AlterClientQuotas", "DENIED", "ui"),
    ]
    assert [e.error_code for e in denied] == [29, 31, 31, 31, 31]


def test_ui_forms_enforce_csrf(tokens: dict[str, str]) -> None:
    client = Client(enforce_csrf_checks=True)
    login = client.get("/ui/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text(login))
    assert csrf is not None
    response = client.post(
        "/ui/login/",
        {"name": "admin", "token": tokens["admin"], "csrfmiddlewaretoken": csrf.group(1)},
    )
    assert response.status_code == 302
    data = {"user": "alice", "key": "producer_byte_rate", "value": "1", "action": "set"}
    assert client.post("/ui/quotas/set/", data).status_code == 403
    assert not ClientQuota.objects.exists() and not AuditEvent.objects.exists()
    form = text(client.get("/ui/quotas/set/"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token is not None
    response = client.post("/ui/quotas/set/", {**data, "csrfmiddlewaretoken": token.group(1)})
    assert response.status_code == 302 and ClientQuota.objects.count() == 1


# --- the audit trail ----------------------------------------------------------------------------
def envelope_write(api: Api, tokens: dict[str, str]) -> None:
    """alice's topic config change, forwarded by broker 1 in an Envelope (allowed by an ACL)."""
    grant = {**ACL, "principal": "User:alice", "operation": "ALTER_CONFIGS"}
    status, answer = api.post("/api/v1/create-acls", {"creations": [grant]}, token=tokens["admin"])
    assert status == 200 and answer["results"][0]["error_code"] == 0
    inner = {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": "orders",
                "configs": [{"name": "retention.ms", "config_operation": "SET", "value": "60000"}],
            }
        ]
    }
    status, answer = api.post(
        "/internal/v1/envelope",
        {
            "request_header": {
                "request_api_key": 44,
                "request_api_version": 1,
                "client_id": "legacy-admin",
                "correlation_id": 7,
            },
            "request_data": inner,
            "request_principal": {"type": "User", "name": "alice"},
            "client_host_address": "10.1.2.3",
            "forwarding_broker_id": 1,
        },
        token=tokens["broker"],
        headers={"X-Request-ID": "env-1"},
    )
    assert status == 200 and answer["response_data"]["responses"][0]["error_code"] == 0, answer


def test_audit_page_shows_and_filters_events(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: str
) -> None:
    envelope_write(api, tokens)
    status, _ = api.post(
        "/api/v1/create-acls",
        {"creations": [ACL]},
        token=tokens["alice"],
        headers={"X-Request-ID": "denied-1"},
    )
    assert status == 403

    body = text(admin_client.get("/ui/audit/"))
    ids = [int(i) for i in re.findall(r'data-audit-id="(\d+)"', body)]
    assert ids == sorted(ids, reverse=True) and len(ids) == AuditEvent.objects.count()

    forwarded = AuditEvent.objects.get(request_id="env-1")
    row = cells(row_of(body, "data-audit-id", str(forwarded.pk)))
    assert row[1:5] == [
        "User:alice",
        "legacy-admin 10.1.2.3",
        "User:broker-a broker 1 127.0.0.1",
        "IncrementalAlterConfigs",
    ]
    assert row[5] == "TOPIC orders" and row[6].startswith("SUCCESS")
    assert row[7:] == ["—", "env-1", str(forwarded.first_offset)]

    denied = AuditEvent.objects.get(request_id="denied-1")
    row = cells(row_of(body, "data-audit-id", str(denied.pk)))
    assert row[1] == "User:alice" and row[3] == "direct" and row[4] == "CreateAcls"
    assert row[6].startswith("DENIED") and row[7] == "CLUSTER_AUTHORIZATION_FAILED (31)"
    assert row[9] == "—"

    def shown(**params: str) -> list[int]:
        page = text(admin_client.get("/ui/audit/", params))
        return [int(i) for i in re.findall(r'data-audit-id="(\d+)"', page)]

    assert shown(principal="User:alice") == [denied.pk, forwarded.pk]
    assert shown(api="CreateAcls", principal="User:alice") == [denied.pk]
    assert shown(outcome="DENIED") == [denied.pk]
    assert shown(forwarded="true") == [forwarded.pk]
    assert forwarded.pk not in shown(forwarded="false") and denied.pk in shown(forwarded="false")
    assert shown(request_id="env-1") == [forwarded.pk]
    assert shown(resource="orders", principal="User:alice") == [denied.pk, forwarded.pk]
    assert shown(resource="no-such-thing") == []
    assert "No audit event matches these filters." in text(
        admin_client.get("/ui/audit/", {"resource": "no-such-thing"})
    )
    bad = admin_client.get("/ui/audit/", {"outcome": "MAYBE", "forwarded": "perhaps"})
    assert bad.status_code == 200 and "outcome:" in text(bad)

    # The API answers the same filters (one filter set for both).
    status, answer = api.get(
        "/api/v1/audit-events?principal=User:alice&outcome=DENIED", token=tokens["admin"]
    )
    assert status == 200 and [e["id"] for e in answer["results"]] == [denied.pk]


# --- query counts -------------------------------------------------------------------------------
def count_queries(client: Client, path: str) -> int:
    acl_cache.clear()  # every measurement includes the ACL load
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, text(response)[:500]
    return len(queries.captured_queries)


def test_list_query_counts_do_not_grow_with_rows(
    admin_client: Client, api: Api, tokens: dict[str, str], cluster: str, settings: Any
) -> None:
    set_secret(settings)
    pages = [*LIST_PAGES, TOPIC_CONFIG, DEFAULT_CONFIG, BROKER_CONFIG]

    def add_rows(start: int, count: int) -> None:
        names = [f"u{i:03d}" for i in range(start, start + count)]
        status, answer = api.post(
            "/api/v1/create-acls",
            {"creations": [{**ACL, "principal": f"User:{n}"} for n in names]},
            token=tokens["admin"],
        )
        assert status == 200, answer
        status, answer = api.post(
            "/api/v1/alter-client-quotas",
            {
                "entries": [
                    {
                        "entity": [{"entity_type": "user", "entity_name": n}],
                        "ops": [{"key": "producer_byte_rate", "value": 1024.0}],
                    }
                    for n in names
                ]
            },
            token=tokens["admin"],
        )
        assert status == 200, answer
        for _ in names:
            status, answer = api.post("/api/v1/create-delegation-token", {}, token=tokens["admin"])
            assert answer["error_code"] == 0, answer

    add_rows(0, 2)
    before = {page: count_queries(admin_client, page) for page in pages}
    add_rows(2, 12)
    api_incremental(api, tokens["admin"], "TOPIC", "orders", **{"retention.ms": "1"})
    after = {page: count_queries(admin_client, page) for page in pages}

    assert text(admin_client.get("/ui/acls/")).count("data-acl-id=") == 14
    assert text(admin_client.get("/ui/quotas/")).count("data-entity=") == 14
    assert text(admin_client.get("/ui/tokens/")).count("data-token-id=") == 14
    assert text(admin_client.get("/ui/audit/")).count("data-audit-id=") >= 20
    assert after == before
    assert max(after.values()) <= 8, after


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/ui/configs/brokers/99999999999999999999/", 404),
        ("/ui/configs/brokers/99999999999999999999/edit/", 404),
        ("/ui/acls/" + "x" * 500 + "/delete/", 404),
        ("/ui/audit/?page=last&forwarded=2&api=" + "x" * 400, 200),
        ("/ui/quotas/?entity_type=%00&page=-3", 200),
        ("/ui/quotas/set/?user=%00&key=nope", 200),
        ("/ui/configs/?q=" + "%25" * 300, 200),
    ],
)
def test_odd_addresses_never_500(admin_client: Client, path: str, status: int) -> None:
    assert admin_client.get(path).status_code == status
