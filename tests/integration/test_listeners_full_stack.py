"""The two listeners on real gunicorn processes, as each mode runs them.

* One process bound to two ports (the embedded `make run`, and every web node of the test
  stacks): the public conf on one, the internal conf on CP_INTERNAL_PORT.
* A process started with CP_LISTENER=internal (docker compose's `internal` service): the
  internal conf on its one port; beside it a public-only process (compose's `web`).

On each port the other listener's paths are a 404 with Kafka's error body.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import pytest

from devtools.stack import Http, Stack, free_port, gunicorn_argv, wait_for

pytestmark = pytest.mark.integration

INTERNAL = [
    ("POST", "/internal/v1/broker-registration"),
    ("POST", "/internal/v1/broker-heartbeat"),
    ("GET", "/internal/v1/metadata?wait_ms=0"),
    ("POST", "/internal/v1/envelope"),
    ("POST", "/internal/v1/alter-partition"),
    ("POST", "/internal/v1/alter-replica-state"),
]
PUBLIC = [
    ("GET", "/api/v1/whoami"),
    ("GET", "/api/v1/cluster"),
    ("POST", "/api/v1/create-topics"),
    ("GET", "/api/schema/"),
    ("GET", "/api/docs/"),
    ("GET", "/ui/"),
    ("GET", "/ui/login/"),
]


def not_found(path: str) -> dict[str, Any]:
    return {
        "error_code": 42,
        "error": "INVALID_REQUEST",
        "error_message": f"No such API path: {path.split('?')[0]}",
    }


def raw_status(url: str) -> int:
    """The status of a GET whatever its body (HTML or JSON)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def check_internal_port(base: str, token: str) -> None:
    """The brokers' API answers (an empty body is the view's 400, a metadata fetch 200); the
    public paths are Kafka's 404."""
    internal = Http(base, base)
    for method, path in INTERNAL:
        status, answer = internal.call(method, path, {} if method == "POST" else None, token)
        assert status in {200, 400}, (base, path, status, answer)
        assert answer != not_found(path)
    for method, path in PUBLIC:
        status, answer = internal.call(method, path, {} if method == "POST" else None, token)
        assert (status, answer) == (404, not_found(path)), (base, path)
    assert raw_status(f"{base}/metrics") == 200


def check_public_port(base: str, token: str) -> None:
    public = Http(base, base)
    for method, path in INTERNAL:
        status, answer = public.call(method, path, {} if method == "POST" else None, token)
        assert (status, answer) == (404, not_found(path)), (base, path)
    status, answer = public.get("/api/v1/whoami", token)
    assert status == 200 and answer["principal"] == "User:admin"
    status, schema = public.get("/api/schema/?format=json", token)
    assert status == 200
    assert {"/internal/v1/broker-heartbeat", "/api/v1/whoami"} <= set(schema["paths"])
    for path in ("/ui/login/", "/api/docs/", "/metrics"):
        assert raw_status(base + path) == 200, path


def test_one_process_serves_each_conf_on_its_port(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    stack.wait_active("controller-a")
    http = stack.start_web(workers=1, threads=4)
    assert http.base != http.internal
    check_internal_port(http.internal, stack.tokens["broker"])
    check_public_port(http.base, stack.tokens["admin"])
    # Http routes by path: the brokers' API through the same object reaches the internal port.
    status, page = http.get("/internal/v1/metadata?wait_ms=0", stack.tokens["broker"])
    assert status == 200 and page["controller_id"] == 3000


def test_an_internal_listener_process_and_a_public_one(stack: Stack) -> None:
    """As docker compose runs them: `internal` (CP_LISTENER=internal) and `web` (public), each
    on one port; neither serves the other's paths."""
    stack.start_controller("controller-a", 3000)
    stack.wait_active("controller-a")
    ports = {"web": free_port(), "internal": free_port()}
    while ports["internal"] == ports["web"]:
        ports["internal"] = free_port()
    for name, listener in (("web", "public"), ("internal", "internal")):
        stack.spawn(
            name,
            gunicorn_argv([f"127.0.0.1:{ports[name]}"], workers=1, threads=4),
            # The internal port setting names neither bound port: the listener alone decides.
            {"CP_LISTENER": listener, "CP_INTERNAL_PORT": "0"},
        )
    web, internal = (f"http://127.0.0.1:{ports[n]}" for n in ("web", "internal"))
    wait_for(lambda: raw_status(f"{web}/metrics") == 200, 30, "web to listen")
    wait_for(lambda: raw_status(f"{internal}/metrics") == 200, 30, "internal to listen")
    check_internal_port(internal, stack.tokens["broker"])
    check_public_port(web, stack.tokens["admin"])


def test_a_server_started_without_the_settings_module_in_its_environment(stack: Stack) -> None:
    """gunicorn started as the docs start it, with no DJANGO_SETTINGS_MODULE: the worker reads
    the settings before gunicorn loads the app, so it names the app's default itself."""
    stack.env.pop("DJANGO_SETTINGS_MODULE", None)
    http = stack.start_web(workers=1, threads=2)
    status, body = http.get("/api/v1/whoami", stack.tokens["admin"])
    assert status == 200, body
