"""The RPC registry: every admin RPC Kafka forwards is registered once, routed at its path,
forwardable exactly where KIP-590 says, authorized before it runs, and audited (issue 9)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import resolve

from audit.models import AuditEvent
from controlplane.api.rpc_views import RpcView
from controlplane.controller.api_keys import ADMIN_APIS, ENVELOPE_API_KEY
from controlplane.rpc import REGISTRY, spec_by_key

# CONTRACT.md: the forwardable APIs (Kafka apiKey).
FORWARDABLE = {19, 20, 33, 37, 38, 39, 40, 43, 44, 49, 30, 31, 64}


def test_every_admin_rpc_is_registered_once_with_kafkas_api_key() -> None:
    assert set(REGISTRY) == set(ADMIN_APIS)
    keys = [spec.key.api_key for spec in REGISTRY.values()]
    assert len(keys) == len(set(keys)) and ENVELOPE_API_KEY not in keys
    assert {k for k in keys if spec_by_key(k).forwardable} == FORWARDABLE  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(ADMIN_APIS))
def test_every_rpc_is_routed_to_its_spec(name: str) -> None:
    spec = REGISTRY[name]
    match = resolve(f"/api/v1/{spec.path}")
    view = match.func.view_class  # type: ignore[attr-defined]
    assert issubclass(view, RpcView) and view.spec is spec
    assert match.url_name == spec.path


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(ADMIN_APIS))
def test_every_rpc_is_authorized_and_audited(name: str, api: Any, tokens: dict[str, str]) -> None:
    """A broker principal on the public API, and a principal with no ACLs, are refused before
    anything runs, and both refusals are audited under the RPC's name."""
    spec = REGISTRY[name]
    path = f"/api/v1/{spec.path}"
    status, answer = api.post(path, {}, token=tokens["broker"], headers={"X-Request-ID": "b"})
    writes = spec.forwardable
    if writes:  # KIP-590: broker principals never send admin writes to the public API
        assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
    (event,) = AuditEvent.objects.filter(request_id="b")
    assert event.api == name and event.principal == "User:broker-a"
    assert event.http_status == status
    status, answer = api.post(path, "{", token=tokens["alice"], raw=True)
    assert status in (400, 403), answer  # refused (authorization first), never a 500
    assert AuditEvent.objects.filter(api=name, principal="User:alice").count() == 1


HOSTILE_BODIES = [[], "text", 7, None, {"unexpected": {"deeply": [1, {"x": None}]}}, {"a" * 300: 1}]


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(ADMIN_APIS))
def test_hostile_bodies_get_kafkas_error_never_a_500(
    name: str, api: Any, tokens: dict[str, str]
) -> None:
    path = f"/api/v1/{REGISTRY[name].path}"
    for n, body in enumerate(HOSTILE_BODIES):
        request_id = f"hostile-{name}-{n}"
        status, answer = api.post(
            path, body, token=tokens["admin"], headers={"X-Request-ID": request_id}
        )
        assert status in (200, 400), (body, status, answer)
        if status == 400:
            assert answer["error"] == "INVALID_REQUEST" and answer["error_message"], answer
        (event,) = AuditEvent.objects.filter(request_id=request_id)
        assert event.api == name and event.http_status == status
