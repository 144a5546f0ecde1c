"""Shared fixtures. Services: CP_REQUIRE_SERVICES=1 (CI) turns a missing service into a failure.

Tests share the machine's PostgreSQL and Redis with other runs: their addresses come from the
environment (`DATABASE_URL`, `CP_TEST_POSTGRES_URL`, `CP_TEST_REDIS_URL`, see devtools.stack),
Redis keys go under a prefix of the test's own, and nothing flushes or drops what others use.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devtools.stack import host_and_port, postgres_admin_url, redis_url

REQUIRE_SERVICES = os.environ.get("CP_REQUIRE_SERVICES") == "1"


def service_up(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def need_service(name: str, host: str, port: int) -> None:
    if service_up(host, port):
        return
    message = f"{name} is not reachable at {host}:{port}"
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} and CP_REQUIRE_SERVICES=1")
    pytest.skip(message)


def need_postgres() -> None:
    need_service("PostgreSQL", *host_and_port(postgres_admin_url(), 5432))


def need_redis() -> None:
    need_service("Redis", *host_and_port(redis_url(), 6379))


@pytest.fixture(autouse=True, scope="session")
def _single_writer() -> None:
    """The log and the projection tables are written only by the controller's commit: any other
    write in any test fails (controlplane.runtime.single_writer)."""
    from controlplane.runtime.single_writer import guard_connections

    guard_connections()


def controller_state_reset() -> None:
    """No controller, no sessions and no cached ACLs, principals, quotas or answers in this
    process."""
    from audit.services import DENIALS
    from configs.mutation_quota import quota_cache
    from controlplane.authz import acl_cache
    from controlplane.login_failures import FAILED_LOGINS
    from controlplane.principals import forwarded_cache, token_cache
    from controlplane.runtime import notice_cache
    from controlplane.runtime.controller import reset_runtime
    from controlplane.runtime.ingress import local_listener_lags
    from controlplane.runtime.sessions import local_sessions
    from controlplane.throttling import MUTATION_QUOTAS, REQUEST_RATE
    from replicas.selectors import REASSIGNMENT_LISTINGS
    from wire.apis.clients.metadata import metadata_cache
    from wire.apis.clients.reassignments import ENCODED_LISTINGS
    from wire.apis.controller import voters

    reset_runtime()
    notice_cache.forget_all()  # the log's head, the brokers' epochs, the features
    voters.forget()
    local_sessions().clear()
    local_listener_lags().clear()
    MUTATION_QUOTAS.clear()
    REQUEST_RATE.clear()
    quota_cache.clear()
    acl_cache.clear()
    token_cache.clear()
    forwarded_cache.clear()
    FAILED_LOGINS.clear()
    DENIALS.clear()
    # Answers cached per the tables' offset: each test's database starts its log afresh.
    metadata_cache.clear()
    REASSIGNMENT_LISTINGS.clear()
    ENCODED_LISTINGS.clear()


@pytest.fixture(autouse=True)
def _fresh_controller_state() -> Iterator[None]:
    """Each test starts with no controller, no sessions and no cached ACLs in this process."""
    from controlplane.runtime.controller import reset_runtime

    controller_state_reset()
    yield
    reset_runtime()


def internal_port() -> str:
    """The port the internal listener is served on (`CP_INTERNAL_PORT`), as SERVER_PORT says."""
    from django.conf import settings

    return str(settings.CP_INTERNAL_PORT)


def listener_client_class() -> type[Any]:
    from django.test import Client

    class ListenerClient(Client):
        """Django's test client, sending `/internal/...` to the internal listener's port.

        Each listener serves its own paths only (controlplane.middleware.ListenerMiddleware), as
        brokers reach the internal port and everyone else the public one. A test that means to
        knock on the other door passes SERVER_PORT itself.
        """

        def generic(self, method: str, path: str, *args: Any, **extra: Any) -> Any:
            if str(path).startswith("/internal/"):
                extra.setdefault("SERVER_PORT", internal_port())
            return super().generic(method, path, *args, **extra)

    return ListenerClient


@pytest.fixture
def client() -> Any:
    """pytest-django's `client`, with `/internal/...` sent to the internal listener's port."""
    return listener_client_class()()


class Api:
    """A JSON client for the test: `api.post(path, body, token=...)` -> (status, json)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def _headers(self, token: str | None, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        for key, value in (extra or {}).items():
            headers["HTTP_" + key.upper().replace("-", "_")] = value
        return headers

    def post(
        self,
        path: str,
        body: Any,
        *,
        token: str | None,
        headers: dict[str, str] | None = None,
        raw: bool = False,
    ) -> tuple[int, Any]:
        data = body if raw else json.dumps(body)
        response = self.client.post(
            path, data, content_type="application/json", **self._headers(token, headers)
        )
        return response.status_code, _json(response)

    def get(
        self, path: str, *, token: str | None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        response = self.client.get(path, **self._headers(token, headers))
        return response.status_code, _json(response)


def set_config(
    api: Api, token: str, resource_type: str, resource_name: str, name: str, value: str
) -> dict[str, Any]:
    """One IncrementalAlterConfigs SET through the REST API: the resource's answer."""
    status, body = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": resource_type,
                    "resource_name": resource_name,
                    "configs": [{"name": name, "config_operation": "SET", "value": value}],
                }
            ]
        },
        token=token,
    )
    assert status == 200, body
    return dict(body["responses"][0])


def _json(response: Any) -> Any:
    assert "application/json" in response["Content-Type"], response.content[:200]
    return response.json()


@pytest.fixture
def api(client: Any) -> Api:
    return Api(client)


@pytest.fixture
def tokens(db: None) -> dict[str, str]:
    from controlplane.principals import principal_create

    return {
        "admin": principal_create(name="admin", super_user=True),
        "broker": principal_create(name="broker-a", broker=True),
        "alice": principal_create(name="alice"),
    }


TOKEN_SECRET_KEY = "a-node-setting-that-signs-tokens-4d1e"


def with_token_secret_key(static: dict[str, str], key: str = TOKEN_SECRET_KEY) -> dict[str, str]:
    """Static broker configs with the delegation-token key, as CP_DELEGATION_TOKEN_SECRET_KEY
    puts it there (controlplane.settings)."""
    return {**static, "delegation.token.secret.key": key}


@pytest.fixture
def token_secret_key(settings: Any) -> str:
    """The node's delegation-token key (a setting, never a record), for this test: every
    reader in the process (the controller, the selectors) reads the setting when asked."""
    settings.CP_DELEGATION_TOKEN_SECRET_KEY = TOKEN_SECRET_KEY
    settings.CP_STATIC_BROKER_CONFIGS = with_token_secret_key(settings.CP_STATIC_BROKER_CONFIGS)
    return TOKEN_SECRET_KEY


@pytest.fixture
def cluster_id(db: None) -> str:
    from controlplane.runtime.lease import cluster_get_or_create

    return cluster_get_or_create().cluster_id


def registration_body(broker_id: int, cluster_id: str, **overrides: Any) -> dict[str, Any]:
    body = {
        "broker_id": broker_id,
        "cluster_id": cluster_id,
        "incarnation_id": str(uuid.uuid4()),
        "listeners": [
            {
                "name": "PLAINTEXT",
                "host": f"b{broker_id}.local",
                "port": 9092,
                "security_protocol": "PLAINTEXT",
            }
        ],
        "rack": f"rack-{broker_id % 3}",
        "pod": "broker",
        "log_dirs": [str(uuid.uuid4())],
    }
    body.update(overrides)
    return body


def heartbeat_body(broker_id: int, epoch: int, offset: int, **flags: Any) -> dict[str, Any]:
    return {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "current_metadata_offset": offset,
        **flags,
    }


@pytest.fixture
def register(api: Api, tokens: dict[str, str], cluster_id: str) -> Callable[..., int]:
    return broker_registrar(api, tokens, cluster_id)


def broker_registrar(api: Api, tokens: dict[str, str], cluster_id: str) -> Callable[..., int]:
    """Register a broker and return its epoch; `unfence=True` heartbeats it to UNFENCED."""

    def _register(broker_id: int, *, unfence: bool = False, **overrides: Any) -> int:
        status, body = api.post(
            "/internal/v1/broker-registration",
            registration_body(broker_id, cluster_id, **overrides),
            token=tokens["broker"],
        )
        assert status == 200 and body["error_code"] == 0, body
        epoch = int(body["broker_epoch"])
        if unfence:
            status, beat = api.post(
                "/internal/v1/broker-heartbeat",
                heartbeat_body(broker_id, epoch, epoch),
                token=tokens["broker"],
            )
            assert beat["is_fenced"] is False, beat
        return epoch

    return _register


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Tests close connections after each request: live-server threads must not keep theirs."""
    from django.conf import settings

    settings.DATABASES["default"]["CONN_MAX_AGE"] = 0
