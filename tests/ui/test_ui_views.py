"""The browser UI through Django's test client: login, pages, fragments, query counts."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from controlplane.authentication import SESSION_KEY
from controlplane.authz import acl_cache
from controlplane.runtime.lease import cluster_get_or_create
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

PAGES = ["/ui/", "/ui/brokers/", "/ui/brokers/1/"]


def text(response: Any) -> str:
    return response.content.decode()


# --- routes and login ------------------------------------------------------------------------
def test_root_redirects_to_ui(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/ui/"


@pytest.mark.parametrize("path", PAGES)
def test_pages_require_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/ui/login/?next={path}"


@pytest.mark.parametrize("path", PAGES)
def test_partial_without_login_is_401_not_a_login_page(client: Client, path: str) -> None:
    response = client.get(path, {"partial": "1"})
    assert response.status_code == 401
    assert "X-UI-Fragment" not in response


def test_login_form_renders(client: Client) -> None:
    response = client.get("/ui/login/?next=/ui/brokers/")
    assert response.status_code == 200
    body = text(response)
    assert 'name="csrfmiddlewaretoken"' in body
    assert 'name="name"' in body and 'name="token"' in body and 'type="password"' in body
    assert 'name="next" value="/ui/brokers/"' in body
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]


def test_bad_token_refused(client: Client, tokens: dict[str, str]) -> None:
    attempts = [
        {"name": "admin", "token": "not-a-token"},
        {"name": "admin", "token": tokens["alice"]},  # someone else's token
        {"name": "alice", "token": tokens["admin"]},
        {"name": "admi", "token": tokens["admin"]},
        {"name": "", "token": tokens["admin"]},
        {"name": "admin", "token": ""},
    ]
    for attempt in attempts:
        response = client.post("/ui/login/", attempt)
        assert response.status_code == 200, attempt
        assert SESSION_KEY not in client.session, attempt
        if attempt["name"] and attempt["token"]:
            assert "Invalid principal name or token." in text(response), attempt
        assert tokens["admin"] not in text(response)  # the token is never echoed back
    assert client.get("/ui/").status_code == 302


def test_login_sets_session_and_follows_next(client: Client, tokens: dict[str, str]) -> None:
    response = client.post(
        "/ui/login/", {"name": "admin", "token": tokens["admin"], "next": "/ui/brokers/"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/ui/brokers/"
    assert isinstance(client.session[SESSION_KEY], int)
    assert client.get("/ui/brokers/").status_code == 200


def test_login_accepts_the_user_prefix_and_ignores_offsite_next(
    client: Client, tokens: dict[str, str]
) -> None:
    response = client.post(
        "/ui/login/",
        {"name": "User:admin", "token": tokens["admin"], "next": "https://evil.example/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/ui/"


def test_login_enforces_csrf(tokens: dict[str, str]) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/ui/login/", {"name": "admin", "token": tokens["admin"]})
    assert response.status_code == 403
    page = client.get("/ui/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text(page))
    assert csrf is not None
    response = client.post(
        "/ui/login/",
        {"name": "admin", "token": tokens["admin"], "csrfmiddlewaretoken": csrf.group(1)},
    )
    assert response.status_code == 302


def test_logout_clears_the_session(admin_client: Client) -> None:
    assert admin_client.get("/ui/logout/").status_code == 405
    response = admin_client.post("/ui/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/ui/login/"
    assert SESSION_KEY not in admin_client.session
    assert admin_client.get("/ui/").status_code == 302


def test_deleted_principal_is_logged_out(admin_client: Client) -> None:
    from controlplane.models import Principal

    Principal.objects.filter(name="admin").delete()
    assert admin_client.get("/ui/").status_code == 302


@pytest.mark.parametrize("path", PAGES)
def test_principal_without_describe_gets_403(
    client: Client, tokens: dict[str, str], path: str
) -> None:
    acl_cache.clear()
    ui_login(client, "alice", tokens["alice"])
    response = client.get(path)
    assert response.status_code == 403
    body = text(response)
    assert "Not authorized" in body and "User:alice" in body
    partial = client.get(path, {"partial": "1"})
    assert partial.status_code == 403
    assert partial["X-UI-Fragment"] == "1"


# --- pages with real data ---------------------------------------------------------------------
def test_overview_shows_the_cluster(admin_client: Client, register: Callable[..., int]) -> None:
    register(1, unfence=True)
    register(2)
    register(3, pod="canary-broker")
    cluster = cluster_get_or_create()
    cluster.refresh_from_db()

    response = admin_client.get("/ui/")
    assert response.status_code == 200
    body = text(response)
    assert '<link rel="stylesheet" href="/static/frontend/ui.css">' in body
    assert 'src="/static/frontend/ui.js"' in body
    assert cluster.cluster_id in body
    assert re.search(r'data-testid="controller-id">\s*3000\s*<', body)
    assert re.search(rf'data-testid="controller-epoch">{cluster.controller_epoch}<', body)
    assert re.search(rf'data-testid="metadata-offset">{cluster.last_offset}<', body)
    assert re.search(r'data-state="FENCED">.*?<td class="num">2</td>', body, re.S)
    assert re.search(r'data-state="UNFENCED">.*?<td class="num">1</td>', body, re.S)
    assert re.search(r'data-state="CONTROLLED_SHUTDOWN">.*?<td class="num">0</td>', body, re.S)
    assert re.search(r'data-pod="broker">.*?<td class="num">2</td>', body, re.S)
    assert re.search(r'data-pod="canary-broker">.*?<td class="num">1</td>', body, re.S)
    assert 'data-testid="broker-total">3<' in body
    assert "User:admin" in body and 'id="ui-updated"' in body and "updated " in body


def test_overview_without_a_controller_says_none(admin_client: Client) -> None:
    response = admin_client.get("/ui/")
    assert response.status_code == 200
    assert re.search(
        r'data-testid="controller-id">\s*<span class="muted">none</span>', text(response)
    )


def test_broker_list_shows_each_broker(admin_client: Client, register: Callable[..., int]) -> None:
    epoch_1 = register(1, unfence=True, rack="rack-a")
    epoch_2 = register(2, pod="canary-broker", rack=None)
    response = admin_client.get("/ui/brokers/")
    assert response.status_code == 200
    body = text(response)
    rows = {
        int(match.group(1)): [
            re.sub(r"<[^>]+>", " ", cell).split()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", match.group(2), re.S)
        ]
        for match in re.finditer(r'<tr id="broker-(\d+)".*?>(.*?)</tr>', body, re.S)
    }
    assert sorted(rows) == [1, 2]
    # Id, state, log dirs, leaders, replicas, out of ISR, under-replicated it leads, offline
    # replicas, epoch, software version, pod, rack, last heartbeat, metadata offset.
    assert rows[1][:3] == [["1"], ["UNFENCED"], ["1", "online"]]
    assert rows[1][3:8] == [["0"], ["0"], ["0"], ["0"], ["0"]]
    assert rows[1][8:12] == [[str(epoch_1)], ["—"], ["broker"], ["rack-a"]]
    assert re.fullmatch(r"\d+ s ago", " ".join(rows[1][12]))
    assert rows[1][13] == [str(epoch_1)]  # the heartbeat reported offset = epoch
    # Fenced: its dir's state is unknown (no heartbeat says it is online).
    assert rows[2][:3] == [["2"], ["FENCED"], ["1", "unknown", "(fenced)"]]
    assert rows[2][8:12] == [[str(epoch_2)], ["—"], ["canary-broker"], ["—"]]
    assert rows[2][13] == ["-1"]  # registration counts as contact, at offset -1
    assert 'href="/ui/brokers/1/"' in body
    assert 'class="badge badge-ok" data-testid="state">UNFENCED<' in body
    assert 'class="badge badge-danger" data-testid="state">FENCED<' in body


def test_broker_list_empty(admin_client: Client) -> None:
    response = admin_client.get("/ui/brokers/")
    assert response.status_code == 200
    assert "No brokers have registered yet." in text(response)


def test_broker_detail_shows_registration_and_records(
    admin_client: Client, register: Callable[..., int]
) -> None:
    epoch = register(7, unfence=True, rack="rack-z")
    register(8)
    response = admin_client.get("/ui/brokers/7/")
    assert response.status_code == 200
    body = text(response)
    assert "Broker 7" in body and "UNFENCED" in body and "rack-z" in body
    assert f'data-testid="epoch">{epoch}<' in body
    assert "b7.local" in body and "b8.local" not in body
    types = re.findall(r'data-testid="record-type">(\w+)<', body)
    assert types[-1] == "RegisterBrokerRecord"
    assert "BrokerRegistrationChangeRecord" in types
    offsets = [int(o) for o in re.findall(r'<tr data-offset="(\d+)"', body)]
    assert offsets == sorted(offsets, reverse=True) and len(offsets) == len(types)
    assert "User:broker-a" in body
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z", body)


@pytest.mark.parametrize("partial", [False, True])
def test_unknown_broker_is_404(admin_client: Client, partial: bool) -> None:
    response = admin_client.get("/ui/brokers/42/", {"partial": "1"} if partial else {})
    assert response.status_code == 404
    body = text(response)
    assert "Broker not found" in body and "<strong>42</strong>" in body
    assert ("<html" in body) is not partial


@pytest.mark.parametrize("path", PAGES)
def test_partial_returns_only_the_fragment(
    admin_client: Client, register: Callable[..., int], path: str
) -> None:
    register(1)
    full = admin_client.get(path)
    partial = admin_client.get(path, {"partial": "1"})
    assert full.status_code == partial.status_code == 200
    assert partial["X-UI-Fragment"] == "1"
    assert "X-UI-Fragment" not in full
    assert "no-store" in partial["Cache-Control"] or "no-cache" in partial["Cache-Control"]
    fragment = text(partial)
    assert "<html" not in fragment and "<header" not in fragment and "<h1>" in fragment
    assert "<html" in text(full) and "data-refresh" in text(full)


def test_partial_reflects_new_state(
    admin_client: Client, register: Callable[..., int], api: Any, tokens: dict[str, str]
) -> None:
    epoch = register(5)
    before = text(admin_client.get("/ui/brokers/", {"partial": "1"}))
    assert 'data-testid="state">FENCED<' in before
    status, beat = api.post(
        "/internal/v1/broker-heartbeat",
        {"broker_id": 5, "broker_epoch": epoch, "current_metadata_offset": epoch},
        token=tokens["broker"],
    )
    assert status == 200 and beat["is_fenced"] is False
    after = text(admin_client.get("/ui/brokers/", {"partial": "1"}))
    assert 'data-testid="state">UNFENCED<' in after


def test_broker_list_query_count_does_not_grow(
    admin_client: Client, register: Callable[..., int]
) -> None:
    def count_queries() -> int:
        acl_cache.clear()  # both measurements include the ACL load
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get("/ui/brokers/")
        assert response.status_code == 200
        return len(queries.captured_queries)

    for broker_id in range(1, 4):
        register(broker_id, unfence=broker_id == 1)
    with_three = count_queries()
    for broker_id in range(4, 14):
        register(broker_id, unfence=broker_id % 2 == 0)
    with_thirteen = count_queries()
    assert text(admin_client.get("/ui/brokers/")).count('<tr id="broker-') == 13
    assert with_thirteen == with_three
    assert with_three <= 6


def test_static_assets_exist() -> None:
    for name in ("frontend/ui.css", "frontend/ui.js"):
        assert finders.find(name), name
