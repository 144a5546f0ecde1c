"""Two listeners, like Kafka's client and inter-broker ones: each port serves its own URL conf.

The internal listener (shell/urls_internal.py: the brokers' API and /metrics) answers on
`CP_INTERNAL_PORT`, or on every port of a process started with `CP_LISTENER=internal`; the public
one (shell/urls.py) everywhere else. A path of the other listener is a 404 with Kafka's
error body, never an HTML page. The real gunicorn bound to two ports: tests/integration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver

from controlplane.controller.errors import Errors
from controlplane.http_errors import error_body
from tests.conftest import registration_body

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_PORT = "8000"
INTERNAL_PATHS = [
    "/internal/v1/broker-registration",
    "/internal/v1/broker-heartbeat",
    "/internal/v1/metadata",
    "/internal/v1/metadata/snapshot",
    "/internal/v1/metadata/snapshots/1",
    "/internal/v1/envelope",
    "/internal/v1/alter-partition",
    "/internal/v1/alter-replica-state",
]
# The public listener's paths: the admin API, its schema and docs, the UI and its files.
PUBLIC_PATHS = [
    ("GET", "/api/v1/whoami"),
    ("GET", "/api/v1/cluster"),
    ("GET", "/api/v1/brokers"),
    ("GET", "/api/v1/metadata-log"),
    ("POST", "/api/v1/create-topics"),
    ("POST", "/api/v1/incremental-alter-configs"),
    ("GET", "/api/v1/audit-events"),
    ("GET", "/api/schema/"),
    ("GET", "/api/docs/"),
    ("GET", "/"),
    ("GET", "/ui/"),
    ("GET", "/ui/login/"),
    ("GET", "/ui/brokers/"),
    ("GET", "/static/frontend/ui.css"),
]


def routes(patterns: list[Any], prefix: str = "") -> set[str]:
    """Every route of a URL conf, includes flattened: `internal/v1/metadata`, `metrics`, ..."""
    found: set[str] = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found |= routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            found.add(prefix + str(pattern.pattern))
    return found


def not_found(path: str) -> dict[str, Any]:
    return error_body(Errors.INVALID_REQUEST, f"No such API path: {path}")


def send(client: Any, method: str, path: str, port: str, token: str | None = None) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    body = "{}" if method == "POST" else ""
    return client.generic(
        method, path, body, content_type="application/json", SERVER_PORT=port, **headers
    )


def test_each_url_conf_holds_its_own_listener_paths() -> None:
    from shell import urls, urls_internal

    internal = routes(urls_internal.urlpatterns)
    paths = {p.removeprefix("/") for p in INTERNAL_PATHS}
    paths = {p.replace("snapshots/1", "snapshots/<str:end_offset>") for p in paths}
    assert internal == paths | {"metrics"}
    public = routes(urls.urlpatterns)
    assert not [r for r in public if r.startswith("internal")], public
    assert {"api/v1/whoami", "api/schema/", "metrics", "ui/"} <= public


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("path", INTERNAL_PATHS)
@pytest.mark.parametrize("port", [PUBLIC_PORT, "80"])
def test_the_public_port_answers_404_for_every_internal_path(
    client: Any, tokens: dict[str, str], path: str, method: str, port: str
) -> None:
    response = send(client, method, path, port, tokens["broker"])
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == not_found(path)


def test_a_request_on_the_public_port_is_not_served_the_internal_api(
    client: Any, tokens: dict[str, str], cluster_id: str
) -> None:
    """A real registration body with a broker token changes nothing: 404, nothing registered."""
    from brokers.models import Broker

    path = "/internal/v1/broker-registration"
    response = client.post(
        path,
        json.dumps(registration_body(1, cluster_id)),
        content_type="application/json",
        SERVER_PORT=PUBLIC_PORT,
        HTTP_AUTHORIZATION=f"Bearer {tokens['broker']}",
    )
    assert response.status_code == 404 and response.json() == not_found(path)
    assert not Broker.objects.exists()
    on_internal = client.post(
        path,
        json.dumps(registration_body(1, cluster_id)),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {tokens['broker']}",
    )
    assert on_internal.status_code == 200 and on_internal.json()["error_code"] == 0
    assert Broker.objects.filter(broker_id=1).exists()


@pytest.mark.parametrize(("method", "path"), PUBLIC_PATHS)
def test_the_internal_port_answers_404_for_public_paths_and_the_ui(
    client: Any, tokens: dict[str, str], settings: Any, method: str, path: str
) -> None:
    response = send(client, method, path, str(settings.CP_INTERNAL_PORT), tokens["admin"])
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json", response.content[:200]
    assert response.json() == not_found(path)


@pytest.mark.parametrize(("method", "path"), PUBLIC_PATHS)
def test_the_public_port_serves_public_paths(
    client: Any, tokens: dict[str, str], method: str, path: str
) -> None:
    """Served: answered by their view (an empty RPC body is that view's 400), never a 404."""
    response = send(client, method, path, PUBLIC_PORT, tokens["admin"])
    assert response.status_code in {200, 302, 400}, (path, response.status_code)


def test_metrics_on_both_ports(client: Any, settings: Any, db: None) -> None:
    for port in (PUBLIC_PORT, str(settings.CP_INTERNAL_PORT)):
        response = client.get("/metrics", SERVER_PORT=port)
        assert response.status_code == 200
        assert "cp_http_requests_total" in response.content.decode()


def test_the_internal_port_is_the_setting(
    client: Any, tokens: dict[str, str], settings: Any
) -> None:
    settings.CP_INTERNAL_PORT = 19093
    path = "/internal/v1/metadata?wait_ms=0"
    broker = {"HTTP_AUTHORIZATION": f"Bearer {tokens['broker']}"}
    assert client.get(path, SERVER_PORT="19093", **broker).status_code == 200
    moved = client.get(path, SERVER_PORT="8001", **broker)
    assert moved.status_code == 404 and moved.json() == not_found("/internal/v1/metadata")
    assert client.get("/api/v1/whoami", SERVER_PORT="8001", **broker).status_code == 200


def test_no_internal_port_when_it_is_0(client: Any, tokens: dict[str, str], settings: Any) -> None:
    settings.CP_INTERNAL_PORT = 0
    broker = {"HTTP_AUTHORIZATION": f"Bearer {tokens['broker']}"}
    for port in ("0", "8001"):
        response = client.get("/internal/v1/metadata", SERVER_PORT=port, **broker)
        assert response.status_code == 404, port


def test_a_process_started_as_the_internal_listener_serves_it_on_every_port(
    client: Any, tokens: dict[str, str], settings: Any
) -> None:
    """CP_LISTENER=internal (docker compose's `internal` service): ROOT_URLCONF is the internal
    conf, so its one bound port serves the brokers' API and nothing public."""
    settings.ROOT_URLCONF = settings.CP_INTERNAL_URLCONF
    broker = {"HTTP_AUTHORIZATION": f"Bearer {tokens['broker']}"}
    assert client.get("/internal/v1/metadata", SERVER_PORT="8001", **broker).status_code == 200
    assert client.get("/internal/v1/metadata", SERVER_PORT="80", **broker).status_code == 200
    assert client.get("/metrics", SERVER_PORT="80").status_code == 200
    for path in ("/api/v1/whoami", "/ui/", "/static/frontend/ui.css"):
        response = client.get(path, SERVER_PORT="80", **broker)
        assert response.status_code == 404 and response.json() == not_found(path)


def _settings_in_a_process(**env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"CP_LISTENER", "CP_INTERNAL_PORT"}}
    code = (
        "import json; from django.conf import settings as s; "
        "print(json.dumps([s.CP_LISTENER, s.ROOT_URLCONF, s.CP_INTERNAL_PORT]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "controlplane.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ["public", "shell.urls", 8001]),
        ({"CP_LISTENER": "public"}, ["public", "shell.urls", 8001]),
        ({"CP_LISTENER": "internal"}, ["internal", "shell.urls_internal", 8001]),
        (
            {"CP_LISTENER": "Internal", "CP_INTERNAL_PORT": "9001"},
            ["internal", "shell.urls_internal", 9001],
        ),
        ({"CP_INTERNAL_PORT": "0"}, ["public", "shell.urls", 0]),
    ],
)
def test_listener_settings_from_the_environment(env: dict[str, str], expected: list[Any]) -> None:
    result = _settings_in_a_process(**env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected


def test_an_unknown_listener_is_refused() -> None:
    result = _settings_in_a_process(CP_LISTENER="inter-broker")
    assert result.returncode != 0
    assert "CP_LISTENER='inter-broker': use public or internal" in result.stderr


def test_the_schema_command_documents_both_listeners(tmp_path: Path) -> None:
    """`manage.py spectacular` lists what /api/schema/ lists: the public and internal paths."""
    from django.core.management import call_command

    out = tmp_path / "schema.json"
    call_command("spectacular", "--file", str(out), "--format", "openapi-json")
    paths = json.loads(out.read_text())["paths"]
    documented = {p.replace("snapshots/1", "snapshots/{end_offset}") for p in INTERNAL_PATHS}
    assert documented <= set(paths)
    assert {"/api/v1/whoami", "/api/v1/create-topics", "/api/v1/metadata-log"} <= set(paths)
