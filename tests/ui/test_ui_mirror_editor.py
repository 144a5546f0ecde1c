"""The MirrorMaker 2 configuration editor (issue 25, point 10) through Django's test client: the
stored text in a text area, validated as PUT /api/v1/mirror/config validates it (INVALID_CONFIG
naming every bad key), a diff of keys and lines before anything is stored, storing through the
API's RPC (audited), a fresh diff on a concurrent edit, refusals; and a heartbeats-only flow
drawn as disabled, never as down."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEvent
from controlplane.authz import acl_cache
from mirror.members import local_members
from mirror.selectors import mirror_config_get
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

EDITOR = "/ui/mirror/config/"
APPLY = "/ui/mirror/config/apply/"
TEXT = """clusters = A, B
A.bootstrap.servers = http://127.0.0.1:18001
A.token = ${env:MM2_A_TOKEN}
B.bootstrap.servers = http://127.0.0.1:18002
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
A->B.enabled = true
A->B.topics = orders.*
"""
NEW_TEXT = (
    TEXT.replace("orders.*", "orders.*, payments.*").replace("A.token = ${env:MM2_A_TOKEN}\n", "")
    + "A->B.replication.factor = 3\n"
)


@pytest.fixture(autouse=True)
def _members() -> Any:
    local_members().clear()
    yield
    local_members().clear()


def text(response: Any) -> str:
    return str(response.content.decode())


def plain(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def put(client: Client, token: str, body: str) -> None:
    response = client.put(
        "/api/v1/mirror/config",
        body.encode(),
        content_type="text/plain",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content


def kafka_errors(body: str) -> list[str]:
    return [
        plain(item) for item in re.findall(r'<li data-testid="kafka-error">(.*?)</li>', body, re.S)
    ]


def hidden_fields(body: str, form_testid: str) -> dict[str, str]:
    form = re.search(rf'<form[^>]*data-testid="{form_testid}".*?</form>', body, re.S)
    assert form is not None, body[:2000]
    return {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(0), re.S
        )
        if name != "csrfmiddlewaretoken"
    }


def key_rows(body: str) -> dict[str, list[str]]:
    return {
        html.unescape(key): [plain(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for key, row in re.findall(r'<tr data-key="([^"]+)"[^>]*>(.*?)</tr>', body, re.S)
    }


def config_events() -> list[tuple[str, str, str]]:
    return list(
        AuditEvent.objects.filter(api="AlterMirrorConfig")
        .order_by("id")
        .values_list("principal", "client_id", "outcome")
    )


def test_the_editor_shows_the_stored_text(admin_client: Client, tokens: dict[str, str]) -> None:
    empty = text(admin_client.get(EDITOR))
    assert "none stored yet" in empty and 'data-testid="mirror-config-form"' in empty
    assert "Write the configuration" in text(admin_client.get("/ui/mirror/"))
    put(admin_client, tokens["admin"], TEXT)
    page = text(admin_client.get(EDITOR))
    area = re.search(r"<textarea[^>]*>(.*?)</textarea>", page, re.S)
    assert area is not None and html.unescape(area.group(1)).strip() == TEXT.strip()
    assert 'href="/ui/mirror/config/"' in text(admin_client.get("/ui/mirror/"))
    assert "data-refresh" not in page


def test_a_bad_text_names_every_bad_key_and_stores_nothing(
    admin_client: Client, tokens: dict[str, str]
) -> None:
    put(admin_client, tokens["admin"], TEXT)
    bad = TEXT + "C->A.enabled = true\nB.password = hunter2\nA->B.tasks.max = many\n"
    response = admin_client.post(EDITOR, {"text": bad})
    assert response.status_code == 200
    body = text(response)
    errors = kafka_errors(body)
    assert len(errors) == 3 and all(e.startswith("INVALID_CONFIG (40) : ") for e in errors), errors
    said = " ".join(errors)
    for key in ("C->A.enabled", "B.password", "A->B.tasks.max"):
        assert f"{key}:" in said, (key, errors)
    assert "hunter2" in body  # the text comes back as typed, to be fixed
    assert 'data-testid="mirror-key-diff"' not in body
    assert mirror_config_get() is not None and mirror_config_get()[0] == TEXT  # type: ignore[index]
    assert config_events() == [("User:admin", "", "SUCCESS")]  # only the API's own PUT


def test_review_shows_the_diff_then_stores_through_the_api(
    admin_client: Client, tokens: dict[str, str]
) -> None:
    put(admin_client, tokens["admin"], TEXT)
    stored_before = mirror_config_get()
    # A browser posts a text area's lines with CRLF; the diff and the store see LF.
    review = admin_client.post(EDITOR, {"text": NEW_TEXT.replace("\n", "\r\n")})
    assert review.status_code == 200
    body = text(review)
    rows = key_rows(body)
    assert rows["A->B.topics"] == [
        "A->B.topics",
        "changed",
        "orders.*",
        "→",
        "orders.*, payments.*",
    ]
    assert rows["A->B.replication.factor"] == ["A->B.replication.factor", "added", "—", "→", "3"]
    assert rows["A.token"] == ["A.token", "removed", "${env:MM2_A_TOKEN}", "→", "(removed)"]
    assert len(rows) == 3 and 'data-testid="key-change-count">3<' in body
    lines = re.findall(r'<span class="diff-(add|del)">(.*?)</span>', body, re.S)
    assert ("del", "-A->B.topics = orders.*") in [(k, html.unescape(t)) for k, t in lines]
    assert ("add", "+A->B.replication.factor = 3") in [(k, html.unescape(t)) for k, t in lines]
    assert mirror_config_get() == stored_before  # nothing stored by the review

    applied = admin_client.post(APPLY, hidden_fields(body, "mirror-config-apply-form"))
    assert applied.status_code == 302 and applied["Location"] == "/ui/mirror/"
    stored = mirror_config_get()
    assert stored is not None and stored[0] == NEW_TEXT
    assert config_events()[-1] == ("User:admin", "ui", "SUCCESS")
    assert "Stored the MirrorMaker configuration." in text(admin_client.get("/ui/mirror/"))

    same = text(admin_client.post(EDITOR, {"text": NEW_TEXT}))
    assert 'data-testid="config-unchanged"' in same


def test_back_to_the_text_keeps_what_was_typed(
    admin_client: Client, tokens: dict[str, str]
) -> None:
    put(admin_client, tokens["admin"], TEXT)
    back = text(admin_client.post(EDITOR + "?edit=1", {"text": NEW_TEXT}))
    area = re.search(r"<textarea[^>]*>(.*?)</textarea>", back, re.S)
    assert area is not None and html.unescape(area.group(1)).strip() == NEW_TEXT.strip()
    assert 'data-testid="mirror-key-diff"' not in back


def test_a_concurrent_edit_gets_a_fresh_diff(admin_client: Client, tokens: dict[str, str]) -> None:
    put(admin_client, tokens["admin"], TEXT)
    review = text(admin_client.post(EDITOR, {"text": NEW_TEXT}))
    meanwhile = TEXT.replace("orders.*", "invoices.*")
    put(admin_client, tokens["admin"], meanwhile)
    stale = admin_client.post(APPLY, hidden_fields(review, "mirror-config-apply-form"))
    assert stale.status_code == 409
    body = text(stale)
    assert "The configuration changed since this diff was made" in body
    assert key_rows(body)["A->B.topics"][2] == "invoices.*"  # against what is stored now
    assert mirror_config_get()[0] == meanwhile  # type: ignore[index]
    applied = admin_client.post(APPLY, hidden_fields(body, "mirror-config-apply-form"))
    assert applied.status_code == 302 and mirror_config_get()[0] == NEW_TEXT  # type: ignore[index]


def test_refusals(tokens: dict[str, str], admin_client: Client) -> None:
    put(admin_client, tokens["admin"], TEXT)
    acl_cache.clear()
    alice = Client()
    ui_login(alice, "alice", tokens["alice"])
    assert alice.get(EDITOR).status_code == 403
    assert alice.post(EDITOR, {"text": NEW_TEXT}).status_code == 403
    assert "edit-mirror-config" not in text(alice.get("/ui/mirror/"))
    refused = alice.post(APPLY, {"text": NEW_TEXT, "base_offset": "0"})
    assert refused.status_code == 403
    assert kafka_errors(text(refused))[0].startswith("CLUSTER_AUTHORIZATION_FAILED (31)")
    assert NEW_TEXT not in text(refused)
    assert config_events()[-1] == ("User:alice", "ui", "DENIED")
    assert mirror_config_get()[0] == TEXT  # type: ignore[index]
    malformed = admin_client.post(APPLY, {"text": NEW_TEXT})
    assert malformed.status_code == 400
    assert Client().get(EDITOR).status_code == 302  # not logged in: to the login page


# --- a heartbeats-only flow -------------------------------------------------------------------
def test_a_heartbeats_only_flow_is_drawn_disabled_not_down(
    admin_client: Client, tokens: dict[str, str]
) -> None:
    put(admin_client, tokens["admin"], TEXT)  # B->A: not enabled, emits heartbeats (default)
    page = text(admin_client.get("/ui/mirror/"))
    arrow = re.search(r'<a [^>]*data-flow="B-&gt;A"[^>]*>.*?</a>', page, re.S)
    assert arrow is not None
    drawn = arrow.group(0)
    assert 'data-health="disabled"' in drawn
    assert 'stroke="#8a94a0"' in drawn and 'stroke-dasharray="2 6"' in drawn
    assert "B-&gt;A · disabled (heartbeats only)" in drawn
    assert "#a12727" not in drawn and "down" not in plain(drawn)
    assert 'id="flow-B-A" data-health="disabled"' in page
    # The enabled flow nobody runs is still down.
    assert re.search(r'data-flow="A-&gt;B" data-health="down"', page)
    flow = text(admin_client.get("/ui/mirror/B/A/"))
    assert 'data-testid="flow-health">disabled (heartbeats only)<' in flow
