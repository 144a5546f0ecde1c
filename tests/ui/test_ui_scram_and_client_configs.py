"""The console's SCRAM users page (KIP-554) and its client metrics and group configs (KIP-714,
KIP-848), through Django's test client: the list shows mechanisms and iterations only, the form
refuses what the API refuses with the API's words, a password set here logs in on the wire,
deletion asks first, every write is audited, and no password, salt or key reaches a page."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from controlplane.authz import acl_cache
from controlplane.controller.scram.formatter import proof_matches
from security.models import ScramCredential
from security.selectors import scram_credential_get
from tests.api.test_scram_api import upsertion
from tests.conftest import Api
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

LIST, SET, DELETE = "/ui/scram-users/", "/ui/scram-users/set/", "/ui/scram-users/delete/"
PASSWORD = "correct horse battery staple"


def text(response: Any) -> str:
    return str(response.content.decode())


def set_password(client: Client, **overrides: Any) -> Any:
    data = {
        "name": "alice",
        "mechanism": "SCRAM-SHA-512",
        "iterations": "8192",
        "password": PASSWORD,
        "confirm_password": PASSWORD,
        **overrides,
    }
    return client.post(SET, data)


def logs_in(name: str, mechanism: str, password: str) -> bool:
    """What the listener checks: a client's proof from this password holds."""
    from controlplane.controller.scram.formatter import client_proof, salted_password

    stored = scram_credential_get(name=name, mechanism=mechanism)
    assert stored is not None
    salted = salted_password(mechanism, password, stored.salt, stored.iterations)
    message = b"n=user,r=a,r=ab,s=c2FsdA==,i=4096,c=biws,r=ab"
    return proof_matches(mechanism, stored, message, client_proof(mechanism, salted, message))


def test_a_password_set_in_the_console_logs_in_and_is_never_shown(
    admin_client: Client, tokens: dict[str, str]
) -> None:
    form = admin_client.get(SET, {"name": "alice", "mechanism": "SCRAM-SHA-512"})
    assert form.status_code == 200 and 'value="alice"' in text(form)
    done = set_password(admin_client)
    assert done.status_code == 302 and done["Location"] == LIST
    assert logs_in("alice", "SCRAM-SHA-512", PASSWORD)
    assert not logs_in("alice", "SCRAM-SHA-512", PASSWORD + "!")
    row = ScramCredential.objects.get()
    (event,) = AuditEvent.objects.filter(api="AlterUserScramCredentials")
    assert (event.principal, event.client_id, event.outcome) == ("User:admin", "ui", "SUCCESS")
    listing = text(admin_client.get(LIST))
    assert "alice logs in with SCRAM-SHA-512 now." in listing
    assert re.search(r'data-scram-user="alice" data-mechanism="SCRAM-SHA-512"', listing)
    assert '<td class="num" data-testid="scram-iterations">8192</td>' in listing
    pages = [listing, text(admin_client.get("/ui/audit/")), text(admin_client.get("/ui/"))]
    timeline = text(admin_client.get("/ui/timeline/"))
    assert "SCRAM credentials: alice SCRAM-SHA-512 set" in timeline
    pages.append(timeline)
    session = json.dumps(dict(admin_client.session.items()), default=str)
    for secret in (PASSWORD, row.salt, row.stored_key, row.server_key):
        assert all(secret not in page for page in [*pages, session])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"iterations": "4095"}, "UNACCEPTABLE_CREDENTIAL: Too few iterations"),
        ({"iterations": "16385"}, "UNACCEPTABLE_CREDENTIAL: Too many iterations"),
        ({"confirm_password": "other"}, "The two passwords differ."),
        ({"mechanism": "SCRAM-SHA-1"}, "Select a valid choice."),
    ],
)
def test_the_form_refuses_what_the_api_refuses_in_its_words(
    admin_client: Client, overrides: dict[str, str], message: str
) -> None:
    refused = set_password(admin_client, **overrides)
    assert refused.status_code == 200 and message in text(refused)
    assert PASSWORD not in text(refused)  # the password boxes are never filled back in
    assert not ScramCredential.objects.exists()
    assert not AuditEvent.objects.filter(api="AlterUserScramCredentials").exists()


def test_a_principal_without_alter_is_refused_by_the_api_and_audited(
    client: Client, tokens: dict[str, str], api: Api
) -> None:
    status, _ = api.post(
        "/api/v1/create-acls",
        {
            "creations": [
                {
                    "resource_type": "CLUSTER",
                    "resource_name": "kafka-cluster",
                    "pattern_type": "LITERAL",
                    "principal": "User:alice",
                    "host": "*",
                    "operation": "DESCRIBE",
                    "permission_type": "ALLOW",
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200
    ui_login(client, "alice", tokens["alice"])
    refused = set_password(client, name="mallory")
    assert refused.status_code == 403 and "CLUSTER_AUTHORIZATION_FAILED" in text(refused)
    assert AuditEvent.objects.get(api="AlterUserScramCredentials").outcome == "DENIED"
    assert not ScramCredential.objects.exists()


def test_deleting_a_credential_asks_first(
    admin_client: Client, api: Api, tokens: dict[str, str]
) -> None:
    status, _ = api.post(
        "/api/v1/alter-user-scram-credentials",
        {"upsertions": [upsertion("bob", "b")]},
        token=tokens["admin"],
    )
    assert status == 200
    listing = text(admin_client.get(LIST))
    assert 'href="/ui/scram-users/delete/?name=bob&amp;mechanism=SCRAM-SHA-256"' in listing
    confirm = html.unescape(
        text(admin_client.get(DELETE, {"name": "bob", "mechanism": "SCRAM-SHA-256"}))
    )
    assert "Delete bob's SCRAM-SHA-256 credential?" in confirm
    one_click = admin_client.post(DELETE, {"name": "bob", "mechanism": "SCRAM-SHA-256"})
    assert one_click.status_code == 200 and ScramCredential.objects.exists()
    done = admin_client.post(
        DELETE, {"name": "bob", "mechanism": "SCRAM-SHA-256", "confirm": "yes"}
    )
    assert done.status_code == 302 and not ScramCredential.objects.exists()
    again = admin_client.post(
        DELETE, {"name": "bob", "mechanism": "SCRAM-SHA-256", "confirm": "yes"}
    )
    assert "RESOURCE_NOT_FOUND" in text(again)


def test_the_list_reads_a_fixed_number_of_queries(
    admin_client: Client, api: Api, tokens: dict[str, str]
) -> None:
    def count() -> int:
        acl_cache.clear()
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(LIST).status_code == 200
        return len(queries.captured_queries)

    api.post(
        "/api/v1/alter-user-scram-credentials",
        {"upsertions": [upsertion("u0", "p")]},
        token=tokens["admin"],
    )
    few = count()
    api.post(
        "/api/v1/alter-user-scram-credentials",
        {"upsertions": [upsertion(f"u{n}", "p") for n in range(1, 40)]},
        token=tokens["admin"],
    )
    assert count() == few


def test_the_configs_index_lists_subscriptions_and_groups_and_edits_them(
    admin_client: Client, api: Api, tokens: dict[str, str]
) -> None:
    status, answer = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "CLIENT_METRICS",
                    "resource_name": "producers",
                    "configs": [{"name": "metrics", "config_operation": "SET", "value": "*"}],
                },
                {
                    "resource_type": "GROUP",
                    "resource_name": "orders-readers",
                    "configs": [
                        {
                            "name": "consumer.session.timeout.ms",
                            "config_operation": "SET",
                            "value": "50000",
                        }
                    ],
                },
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200, answer
    index = text(admin_client.get("/ui/configs/"))
    assert 'href="/ui/configs/client-metrics/producers/"' in index
    assert 'href="/ui/configs/groups/orders-readers/"' in index
    opened = admin_client.get("/ui/configs/groups/", {"name": "new-group"})
    assert opened["Location"] == "/ui/configs/groups/new-group/"
    detail = text(admin_client.get("/ui/configs/groups/orders-readers/"))
    assert "Configs of group orders-readers" in detail and "GROUP_CONFIG" in detail
    assert "share.auto.offset.reset" in detail
    edit = admin_client.post(
        "/ui/configs/client-metrics/producers/edit/",
        {"value__interval.ms": "60000", "value__metrics": "*"},
    )
    assert edit.status_code == 200 and "interval.ms" in text(edit)
    from tests.ui.test_ui_configs_second_pass import hidden_fields

    applied = admin_client.post(
        "/ui/configs/client-metrics/producers/apply/",
        hidden_fields(text(edit), "config-apply-form"),
    )
    assert applied.status_code == 302, text(applied)[:2000]
    from controlplane.models import ConfigEntry

    assert ConfigEntry.objects.get(resource_name="producers", name="interval.ms").value == "60000"
    refused = admin_client.post(
        "/ui/configs/groups/orders-readers/edit/",
        {"value__consumer.session.timeout.ms": "1000"},
    )
    applied = admin_client.post(
        "/ui/configs/groups/orders-readers/apply/",
        hidden_fields(text(refused), "config-apply-form"),
    )
    assert "INVALID_CONFIG" in text(applied)
