"""Every URL of both URL confs, walked as a principal without ACLs: nothing it may not DESCRIBE
comes back, nothing answers 5xx. And every API read declares how it is authorized
(controlplane/api/authorization.py), so a new view cannot forget it.

The walk needs no list of URLs: it reads the URL confs, fills each path's parameters with the
resources made here (a topic, a broker, ACLs, a client quota, a delegation token, configs) and
sends GET and POST as `alice` (no ACLs) over the API (bearer token) and the UI (her session). Any
2xx or 3xx answer must name none of those resources; views added later (other apps' endpoints)
are walked the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver

from controlplane.api.authorization import CallerOnly, ResourceAuthorization
from controlplane.api.permissions import _ClusterOperation
from tests.conftest import internal_port
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

SECRET_TOPIC = "secret-topic-7f3a"
SECRET_PRINCIPAL = "User:secret-bob-7f3a"
SECRET_QUOTA_USER = "secret-quota-user-7f3a"
SECRET_CONFIG_VALUE = "7773331"
MARKERS = (SECRET_TOPIC, SECRET_PRINCIPAL, SECRET_QUOTA_USER, SECRET_CONFIG_VALUE)
BROKER_ID = 0

# Path parameters by name (then by converter): the resources made below.
PARAMETERS = {"name": SECRET_TOPIC, "broker_id": str(BROKER_ID), "topic": SECRET_TOPIC}
CONVERTERS = {"int": str(BROKER_ID), "str": SECRET_TOPIC, "slug": SECRET_TOPIC, "path": "x"}
PARAMETER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")


def walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(route, view) of every URL pattern, through includes."""
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            yield route, pattern.callback


def concrete(route: str) -> str:
    def fill(match: re.Match[str]) -> str:
        return PARAMETERS.get(match["name"]) or CONVERTERS[match["converter"] or "str"]

    path = PARAMETER.sub(fill, route)
    return "/" + path.lstrip("^").rstrip("$")


def every_url() -> list[tuple[str, str, Any]]:
    """(listener, path, view) for both URL confs."""
    urls = []
    for listener, urlconf in (
        ("public", settings.CP_PUBLIC_URLCONF),
        ("internal", settings.CP_INTERNAL_URLCONF),
    ):
        for route, view in walk(get_resolver(urlconf).url_patterns):
            urls.append((listener, concrete(route), view))
    return urls


@pytest.fixture
def resources(api: Any, tokens: dict[str, str], register: Any, token_secret_key: str) -> None:
    """Made as the super user: what alice must never see."""
    admin = tokens["admin"]
    register(BROKER_ID, unfence=True)
    topic = {"name": SECRET_TOPIC, "num_partitions": 2, "replication_factor": 1}
    assert api.post("/api/v1/create-topics", {"topics": [topic]}, token=admin)[0] == 200
    acl = {
        "resource_type": "TOPIC",
        "resource_name": SECRET_TOPIC,
        "pattern_type": "LITERAL",
        "principal": SECRET_PRINCIPAL,
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    assert api.post("/api/v1/create-acls", {"creations": [acl]}, token=admin)[0] == 200
    quota = {
        "entity": [{"entity_type": "user", "entity_name": SECRET_QUOTA_USER}],
        "ops": [{"key": "producer_byte_rate", "value": 1024.0}],
    }
    assert api.post("/api/v1/alter-client-quotas", {"entries": [quota]}, token=admin)[0] == 200
    configs = {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": SECRET_TOPIC,
                "configs": [
                    {
                        "name": "retention.ms",
                        "config_operation": "SET",
                        "value": SECRET_CONFIG_VALUE,
                    }
                ],
            },
        ]
    }
    assert api.post("/api/v1/incremental-alter-configs", configs, token=admin)[0] == 200
    status, token = api.post(
        "/api/v1/create-delegation-token",
        {"owner_principal_type": "User", "owner_principal_name": SECRET_PRINCIPAL[5:]},
        token=admin,
    )
    assert status == 200 and token["error_code"] == 0, token


def leaks(content: bytes) -> list[str]:
    text = content.decode(errors="replace")
    return [marker for marker in MARKERS if marker in text]


def test_every_url_walked_as_a_principal_without_acls_reveals_nothing(
    client: Any, tokens: dict[str, str], resources: None
) -> None:
    ui_login(client, "alice", tokens["alice"])
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {tokens['alice']}"}
    answered: dict[str, int] = {}
    problems = []
    for listener, path, _view in every_url():
        port = {"SERVER_PORT": internal_port()} if listener == "internal" else {}
        for method in ("GET", "POST"):
            for how, headers in (("bearer", bearer), ("session", {})):
                response = client.generic(
                    method, path, b"{}", content_type="application/json", **port, **headers
                )
                key = f"{method} {listener} {path} ({how})"
                answered[key] = response.status_code
                if response.status_code >= 500:
                    problems.append(f"{key}: {response.status_code}")
                elif response.status_code < 400 and leaks(response.content):
                    problems.append(
                        f"{key}: {response.status_code} shows {leaks(response.content)}"
                    )
    assert not problems, "\n".join(problems)
    # The walk reached what it meant to: the API's lists answered alice, and empty.
    assert answered["GET public /api/v1/topics (bearer)"] == 200
    assert answered["GET public /api/v1/partitions (bearer)"] == 200
    assert answered["GET public /api/v1/topics/secret-topic-7f3a (bearer)"] == 403
    assert answered["GET public /api/v1/audit-events (bearer)"] == 403
    assert len(answered) >= 4 * 60


def test_the_super_user_does_see_them(api: Any, tokens: dict[str, str], resources: None) -> None:
    """The markers are there to be found: the walk above would see a leak."""
    for path in ("/api/v1/topics", "/api/v1/partitions"):
        status, page = api.get(path, token=tokens["admin"])
        assert status == 200 and SECRET_TOPIC in str(page)


def api_reads() -> list[tuple[str, Any]]:
    """(path, view class) of every API view answering GET, on both listeners."""
    reads = []
    for _listener, path, view in every_url():
        cls = getattr(view, "view_class", None) or getattr(view, "cls", None)
        if cls is None or not path.startswith(("/api/v1/", "/internal/")):
            continue
        if hasattr(cls, "get"):
            reads.append((path, cls))
    return reads


def test_every_api_read_declares_its_authorization() -> None:
    """A read is about the cluster (a cluster operation's permission), filters its items by what
    the principal may DESCRIBE (`authorization = ResourceAuthorization(...)`, on an
    AuthorizedListView for lists), or is about the caller alone (CALLER_ONLY)."""
    undeclared = []
    for path, cls in api_reads():
        cluster_wide = any(issubclass(p, _ClusterOperation) for p in cls.permission_classes)
        declared = isinstance(
            getattr(cls, "authorization", None), ResourceAuthorization | CallerOnly
        )
        if not (cluster_wide or declared):
            undeclared.append(f"{path}: {cls.__name__}")
    assert not undeclared, "API reads without an authorization declaration:\n" + "\n".join(
        undeclared
    )
    assert len(api_reads()) >= 10
