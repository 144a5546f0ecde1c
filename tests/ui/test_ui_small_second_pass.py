"""Issue 25, point 10 (smaller), through Django's test client: the canary page's version
choices, evidence, bake time and the fleet's current version; an audit report's progress page;
a new token's post/redirect/get; the effective-quota lookup. What a person sees in Chromium:
tests/browser/test_small_second_pass_chromium.py."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from frontend.views.canary import duration_text
from frontend.views.tokens import CREATED_TOKEN_KEY
from security.models import DelegationToken
from tests.conftest import Api
from tests.ui.test_ui_admin import set_secret

pytestmark = pytest.mark.django_db

CANARY = "canary-broker"


def text(response: Any) -> str:
    return str(response.content.decode())


# --- canary -------------------------------------------------------------------------------------
def fleet(register: Callable[..., int]) -> None:
    """`make run`'s shape: the fleet on 3.9.0, a canary broker trying 3.9.1, one broker that
    reports no version."""
    for b in range(3):
        register(b, unfence=True, software_version="3.9.0")
    register(3, unfence=True)
    register(100, unfence=True, pod=CANARY, software_version="3.9.1")


def test_the_rollout_form_offers_the_versions_the_brokers_report(
    admin_client: Client, register: Callable[..., int]
) -> None:
    fleet(register)
    body = text(admin_client.get("/ui/canary/"))
    datalist = re.search(r'<datalist id="known-versions"[^>]*>(.*?)</datalist>', body, re.S)
    assert datalist is not None
    assert re.findall(r'<option value="([^"]+)">([^<]*)</option>', datalist.group(1)) == [
        ("3.9.0", "3 brokers"),
        ("3.9.1", "1 broker, 1 canary"),
    ]
    choices = re.findall(r'data-version-choice="([^"]+)"', body)
    assert choices == ["3.9.0", "3.9.1"]
    assert 'href="/ui/canary/?version=3.9.0"' in body
    # Free text is still allowed: the field is an input with a datalist, not a closed select.
    assert re.search(r'<input id="rollout-version" name="version"[^>]*list="known-versions"', body)


def test_the_fleets_current_version_is_complete_in_the_api_and_on_the_page(
    admin_client: Client, api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    fleet(register)
    status, answer = api.get("/api/v1/canary/rollout?version=3.9.0", token=tokens["admin"])
    assert status == 200 and answer["verdict"] == "COMPLETE", answer
    assert "fleet's current version" in answer["explanation"]
    assert "Canary broker(s) 100 run 3.9.1" in answer["explanation"]
    assert "Broker(s) 3 report no version" in answer["explanation"]
    assert answer["brokers_running_version"] == [0, 1, 2]
    body = text(admin_client.get("/ui/canary/?version=3.9.0"))
    assert 'data-verdict="COMPLETE"' in body and "fleet&#x27;s current version" in body
    # The canary's own version is still a rollout under the guard, baking.
    status, baking = api.get("/api/v1/canary/rollout?version=3.9.1", token=tokens["admin"])
    assert baking["verdict"] == "HOLD" and "still baking" in baking["explanation"]


def test_a_version_only_part_of_the_fleet_runs_without_the_canary_still_holds(
    api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    for b in range(3):
        register(b, unfence=True, software_version="1.0")
    register(3, unfence=True, software_version="2.0")  # skipped the canary brokers
    register(100, unfence=True, pod=CANARY, software_version="1.0")
    status, answer = api.get("/api/v1/canary/rollout?version=2.0", token=tokens["admin"])
    assert answer["verdict"] == "HOLD" and "no canary broker" in answer["explanation"]
    # 1.0 runs everywhere but on broker 3: not the whole fleet, so the guard judges it.
    status, partial = api.get("/api/v1/canary/rollout?version=1.0", token=tokens["admin"])
    assert status == 200 and partial["verdict"] != "COMPLETE"


def test_every_broker_on_one_version_is_still_the_guards_complete(
    api: Api, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1, unfence=True, software_version="2.0")
    register(2, unfence=True, pod=CANARY, software_version="2.0")
    status, answer = api.get("/api/v1/canary/rollout?version=2.0", token=tokens["admin"])
    assert status == 200 and answer["verdict"] == "COMPLETE"
    assert "Every registered broker (2) reports version 2.0" in answer["explanation"]


def test_the_evidence_names_its_incidents_and_the_bake_time_is_a_duration(
    admin_client: Client, register: Callable[..., int]
) -> None:
    fleet(register)
    body = text(admin_client.get("/ui/canary/?version=3.9.1"))
    table = re.search(
        r'<table class="table compact" data-testid="rollout-evidence">(.*?)</table>', body, re.S
    )
    assert table is not None
    headers = re.findall(r"<th(?:\s[^>]*)?>(?:<abbr[^>]*>)?([^<]*)", table.group(1))
    assert headers[2:] == [
        "Fencings",
        "Session expiries",
        "Offline replicas",
        "Leaderless partitions",
        "Incidents",
        "Incidents per broker",
    ]
    assert "Incidents are session expiries, offline replicas" in table.group(1)
    assert "fencings alone" in table.group(1)
    bake = re.search(r'data-testid="bake-time">(.*?)</p>', body, re.S)
    assert bake is not None
    shown = re.sub(r"<[^>]+>", "", bake.group(1))
    assert re.match(r"Baking for \d+ (?:ms|s) of the 1 h 0 min bake time", shown), shown


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (None, ""),
        (850, "850 ms"),
        (5_000, "5 s"),
        (725_000, "12 min 5 s"),
        (3_600_000, "1 h 0 min"),
        (90_061_000, "1 d 1 h"),
    ],
)
def test_durations_read_as_a_person_reads_them(ms: int | None, shown: str) -> None:
    assert duration_text(ms) == shown


# --- audit reports ------------------------------------------------------------------------------
@pytest.fixture
def export_path(tmp_path: Any, settings: Any) -> Any:
    settings.CP_AUDIT_EXPORT_PATH = str(tmp_path / "audit")
    settings.CP_AUDIT_REPORTS_PATH = str(tmp_path / "reports")
    return tmp_path / "audit"


def test_a_report_opens_on_a_progress_page_at_once(admin_client: Client, export_path: Any) -> None:
    page = admin_client.get(
        "/ui/audit/reports/state-at/",
        {"at": "2026-11-24T06:00:00Z", "format": "html", "progress": "1"},
    )
    # Answered without running Spark (no export exists: the report itself would be a 400).
    assert page.status_code == 200
    body = text(page)
    assert 'data-testid="report-progress"' in body and "<progress" in body
    src = re.search(r'data-report-src="([^"]+)"', body)
    assert src is not None
    url = html.unescape(src.group(1))
    assert url.startswith("/ui/audit/reports/state-at/?") and "progress" not in url
    assert "format=html" in url and "at=2026-11-24T06%3A00%3A00Z" in url
    assert 'href="/ui/audit/reports/" data-testid="report-back"' in body
    assert "data-refresh" not in body
    # What the page fetches answers the problem, which the page then shows.
    fetched = admin_client.get(url + "&partial=1")
    assert fetched.status_code == 400 and b'data-testid="report-problem"' in fetched.content


def test_bad_input_is_said_at_once_without_a_progress_page(
    admin_client: Client, export_path: Any
) -> None:
    bad = admin_client.get(
        "/ui/audit/reports/state-at/", {"at": "yesterday", "format": "html", "progress": "1"}
    )
    assert bad.status_code == 400 and b"neither ISO 8601" in bad.content
    assert b"data-report-src" not in bad.content


def test_the_report_forms_open_in_the_same_tab_through_the_progress_page(
    admin_client: Client, api: Api, tokens: dict[str, str], export_path: Any, monkeypatch: Any
) -> None:
    from frontend.views import audit as audit_views

    monkeypatch.setattr(
        audit_views,
        "latest_export",
        lambda: {"commit": 1, "committed_ms": 0, "offset": 0, "datasets": {}},
    )
    body = text(admin_client.get("/ui/audit/reports/"))
    forms = re.findall(r'<form method="get"[^>]*data-testid="report-[^"]+"[^>]*>', body)
    assert forms and all("target=" not in f for f in forms)
    assert body.count('<input type="hidden" name="progress" value="1">') == len(forms)


# --- tokens -------------------------------------------------------------------------------------
def test_creating_a_token_redirects_and_the_hmac_is_shown_once(
    admin_client: Client, api: Api, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    posted = admin_client.post("/ui/tokens/new/", {"renewers": "User:alice"})
    assert posted.status_code == 302 and posted["Location"] == "/ui/tokens/created/"
    token = DelegationToken.objects.get()
    assert token.token_id not in posted["Location"]
    shown = admin_client.get("/ui/tokens/created/")
    assert shown.status_code == 200 and "no-store" in shown["Cache-Control"]
    body = text(shown)
    match = re.search(r'data-testid="token-hmac">([^<]+)<', body)
    assert match is not None and len(html.unescape(match.group(1))) > 40
    assert token.token_id in body and "User:alice" in body
    assert 'data-copy="token-hmac"' in body and 'data-copy="token-id"' in body
    assert "data-refresh" not in body
    # Taken out of the session as it was shown: a reload shows nothing and creates nothing.
    assert CREATED_TOKEN_KEY not in admin_client.session
    again = admin_client.get("/ui/tokens/created/")
    assert again.status_code == 200
    assert 'data-testid="token-gone"' in text(again)
    assert match.group(1) not in text(again) and 'data-testid="token-hmac"' not in text(again)
    assert DelegationToken.objects.count() == 1


def test_a_head_request_does_not_take_the_one_display(
    admin_client: Client, api: Api, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    admin_client.post("/ui/tokens/new/", {})
    assert admin_client.head("/ui/tokens/created/").status_code == 405
    assert 'data-testid="token-hmac"' in text(admin_client.get("/ui/tokens/created/"))


def test_a_refused_creation_stays_on_the_form(admin_client: Client) -> None:
    refused = admin_client.post("/ui/tokens/new/", {"owner": "nobody"})
    assert refused.status_code in (200, 400, 403)
    assert not DelegationToken.objects.exists()
    assert CREATED_TOKEN_KEY not in admin_client.session


# --- quotas -------------------------------------------------------------------------------------
def set_quota(
    api: Api, token: str, entity: list[tuple[str, str | None]], key: str, value: float
) -> None:
    body = {
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": key, "value": value, "remove": False}],
            }
        ]
    }
    status, answer = api.post("/api/v1/alter-client-quotas", body, token=token)
    assert status == 200 and answer["entries"][0]["error_code"] == 0, answer


def test_the_quotas_page_answers_which_quota_applies_as_the_api_does(
    admin_client: Client, api: Api, tokens: dict[str, str]
) -> None:
    admin = tokens["admin"]
    set_quota(api, admin, [("user", None)], "producer_byte_rate", 1_048_576)
    set_quota(api, admin, [("user", "alice"), ("client-id", "app")], "producer_byte_rate", 2048)
    set_quota(api, admin, [("client-id", None)], "request_percentage", 50)
    status, expected = api.get(
        "/api/v1/client-quotas/effective?user=alice&client_id=app", token=admin
    )
    assert status == 200
    body = text(admin_client.get("/ui/quotas/", {"user": "alice", "client_id": "app"}))
    rows = re.findall(
        r'<tr data-quota="([^"]+)">.*?data-testid="effective-value">(.*?)</td>'
        r'<td class="mono" data-testid="effective-entity">(.*?)</td>',
        body,
        re.S,
    )
    shown = {key: html.unescape(entity) for key, _, entity in rows}
    assert shown == {
        item["key"]: ", ".join(
            f"{e['entity_type']}={'<default>' if e['entity_name'] is None else e['entity_name']}"
            for e in sorted(item["entity"], key=lambda e: e["entity_type"] != "user")
        )
        for item in expected["values"]
    }
    assert shown == {
        "producer_byte_rate": "user=alice, client-id=app",
        "request_percentage": "client-id=<default>",
    }
    assert "2 KiB/s" in body or "2.0 KiB/s" in body
    # Another user falls back to the default user's quota.
    other = text(admin_client.get("/ui/quotas/", {"user": "bob", "client_id": "app"}))
    assert re.search(r'data-testid="effective-entity">user=&lt;default&gt;</td>', other)
    # A pair nothing limits says so; a missing name is an error on the form, not a 500.
    set_none = text(admin_client.get("/ui/quotas/"))
    assert 'data-testid="effective-table"' not in set_none
    missing = text(admin_client.get("/ui/quotas/", {"user": "alice", "client_id": ""}))
    assert 'data-testid="effective-errors"' in missing


def test_an_unlimited_pair_is_said_to_be_unlimited(admin_client: Client) -> None:
    body = text(admin_client.get("/ui/quotas/", {"user": "carol", "client_id": "x"}))
    assert 'data-testid="effective-none"' in body
    order = re.search(r"<ol class=\"mono\">(.*?)</ol>", body, re.S)
    assert order is not None  # Kafka's order of precedence, most specific first
    assert re.findall(r"<li>(.*?)</li>", html.unescape(order.group(1))) == [
        "user=carol, client-id=x",
        "user=carol, client-id=<default>",
        "user=carol",
        "user=<default>, client-id=x",
        "user=<default>, client-id=<default>",
        "user=<default>",
        "client-id=x",
        "client-id=<default>",
    ]
