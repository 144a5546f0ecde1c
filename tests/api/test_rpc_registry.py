"""The RPC registry: every admin RPC Kafka forwards is registered once, routed at its path,
forwardable exactly where KIP-590 says, authorized before it runs, and audited (issue 9). The
house's own RPCs sit in the same registry, and an RPC registered in its app's rpcs.py needs
nothing else to be routed, documented, authorized and audited (issue 21)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.urls import clear_url_caches, resolve

from audit.models import AuditEvent
from controlplane.api.fields import StrictCharField, StrictSerializer
from controlplane.api.responses import STR, arr, kafka
from controlplane.controller.acls.bindings import AclOperation
from controlplane.controller.api_keys import ADMIN_APIS, ENVELOPE_API_KEY
from controlplane.rpc import REGISTRY, ApiSpec, Caller, cluster, register
from mirror import rpcs as mirror_rpcs
from shell.api.rpc_views import RpcView, rpc_urlpatterns

# The forwardable APIs (docs/reference/kafka-protocol.md) (Kafka apiKey).
FORWARDABLE = {19, 20, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 30, 31, 51, 57, 64}
MIRRORS_OWN = {
    "AlterMirrorConfig",
    "AlterMirrorTargetState",
    "JoinMirrorGroup",
    "SyncMirrorGroup",
    "PutMirrorTaskConfigs",
    "LeaveMirrorGroup",
}
BALANCERS_OWN = {"CreateBalancePlan", "ExecuteBalancePlan", "CancelBalancePlan"}


def test_every_admin_rpc_is_registered_once_with_kafkas_api_key() -> None:
    kafkas = {name: spec for name, spec in REGISTRY.items() if spec.kafka is not None}
    assert set(kafkas) == set(ADMIN_APIS)
    keys = [spec.api_key for spec in kafkas.values()]
    assert len(keys) == len(set(keys)) and ENVELOPE_API_KEY not in keys
    assert {spec.api_key for spec in kafkas.values() if spec.forwardable} == FORWARDABLE
    assert all(spec.path == ADMIN_APIS[name].path for name, spec in kafkas.items())


def test_the_houses_own_rpcs_are_in_the_same_registry_and_never_forwardable() -> None:
    """MirrorMaker's and the balancer's RPCs (Kafka numbers none): one registry, no apiKey,
    never in an Envelope, routed by their apps at paths of their own (the one router leaves
    them alone)."""
    houses = {name: spec for name, spec in REGISTRY.items() if spec.kafka is None}
    assert set(houses) == MIRRORS_OWN | BALANCERS_OWN
    assert mirror_rpcs.ALTER_CONFIG is REGISTRY["AlterMirrorConfig"]
    for spec in houses.values():
        assert spec.api_key is None and not spec.forwardable and spec.path is None
        assert spec.response["properties"]["error_code"] == {"type": "integer"}


def test_a_name_is_registered_once_and_kafkas_path_is_kafkas() -> None:
    spec = REGISTRY["DescribeCluster"]
    fields = {
        "request": spec.request,
        "authorize": spec.authorize,
        "handler": spec.handler,
        "resources": spec.resources,
        "response": spec.response,
    }
    with pytest.raises(ValueError, match="registered twice"):
        register("DescribeCluster", **fields)
    with pytest.raises(ValueError, match="its path is 'describe-cluster'"):
        register("DescribeCluster", path="cluster-please", **fields)
    assert REGISTRY["DescribeCluster"] is spec


@pytest.mark.parametrize("name", sorted(ADMIN_APIS))
def test_every_rpc_is_routed_to_its_spec(name: str) -> None:
    spec = REGISTRY[name]
    match = resolve(f"/api/v1/{spec.path}")
    view = match.func.view_class
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


# --- adding an admin RPC: its spec alone ------------------------------------------------------
WIDGETS = "DescribeWidgets"  # the house's own RPC, declared by this module and nowhere else
WIDGETS_ANSWER = kafka("widgets", widgets=arr(STR))


class DescribeWidgetsSerializer(StrictSerializer):
    name = StrictCharField(max_length=20)


def describe_widgets(body: dict[str, Any], caller: Caller) -> dict[str, Any]:
    return {
        "error_code": 0,
        "error_message": None,
        "widgets": [f"{body['name']}-for-{caller.name}"],
    }


def name_the_widget(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> list[dict[str, Any]]:
    return [{"resource_type": "WIDGET", "resource_name": str(body.get("name")), "error_code": top}]


def _url_confs_loaded() -> None:
    """Load the public URL conf as a starting server does: its apps registered their RPCs in
    `ready()`, before any URL conf is loaded."""
    importlib.reload(importlib.import_module(settings.CP_PUBLIC_URLCONF))
    clear_url_caches()


@pytest.fixture
def widgets_rpc() -> Iterator[ApiSpec]:
    spec = register(
        WIDGETS,
        path="describe-widgets",
        request=DescribeWidgetsSerializer,
        authorize=cluster(AclOperation.DESCRIBE),
        handler=describe_widgets,
        resources=name_the_widget,
        response=WIDGETS_ANSWER,
    )
    _url_confs_loaded()
    yield spec
    del REGISTRY[WIDGETS]
    _url_confs_loaded()


@pytest.mark.django_db
def test_a_registered_spec_alone_is_routed_documented_authorized_and_audited(
    widgets_rpc: ApiSpec, api: Any, tokens: dict[str, str], client: Any
) -> None:
    assert resolve("/api/v1/describe-widgets").func.view_class.spec is widgets_rpc
    # Routed and run: the handler answers the validated body.
    status, answer = api.post(
        "/api/v1/describe-widgets",
        {"name": "gear"},
        token=tokens["admin"],
        headers={"X-Request-ID": "w-1"},
    )
    assert (status, answer["widgets"]) == (200, ["gear-for-User:admin"]), answer
    # Validated by its serializer.
    status, answer = api.post("/api/v1/describe-widgets", {"size": 3}, token=tokens["admin"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST", answer
    # Authorized: alice may not DESCRIBE the cluster, and the handler never runs for her.
    status, answer = api.post(
        "/api/v1/describe-widgets",
        {"name": "gear"},
        token=tokens["alice"],
        headers={"X-Request-ID": "w-2"},
    )
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
    # Audited under its name, its resources named by its spec.
    allowed, refused = (AuditEvent.objects.get(request_id=r) for r in ("w-1", "w-2"))
    assert (allowed.api, allowed.outcome, allowed.principal) == (WIDGETS, "SUCCESS", "User:admin")
    assert allowed.resources == [
        {"resource_type": "WIDGET", "resource_name": "gear", "error_code": 0}
    ]
    assert (refused.api, refused.outcome, refused.http_status) == (WIDGETS, "DENIED", 403)
    # Documented: its request body and its answer, with every error it may answer.
    schema = client.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/describe-widgets"]["post"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == (
        WIDGETS_ANSWER
    )
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/DescribeWidgets"}
    assert set(schema["components"]["schemas"]["DescribeWidgets"]["properties"]) == {"name"}
    assert {"400", "403", "503"} <= set(operation["responses"])


def test_the_one_router_routes_the_specs_with_a_path_and_leaves_the_others_to_their_app(
    widgets_rpc: ApiSpec,
) -> None:
    routed = {route.callback.view_class.spec.name for route in rpc_urlpatterns()}
    assert routed == set(ADMIN_APIS) | {WIDGETS}  # the mirror's have no path: its views run them
