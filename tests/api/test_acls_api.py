"""create-acls, describe-acls and delete-acls over HTTP, and the authorizer reading the result
(StandardAuthorizerTest-style: ALLOW grants, DENY beats ALLOW, deleting the DENY restores)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.authz import is_authorized
from controlplane.controller.acls.bindings import AclOperation, ResourceType
from controlplane.models import Acl, Cluster
from controlplane.principals import AuthenticatedPrincipal

pytestmark = pytest.mark.django_db

CREATE = "/api/v1/create-acls"
DESCRIBE = "/api/v1/describe-acls"
DELETE = "/api/v1/delete-acls"


def binding(
    resource_type: str = "CLUSTER",
    resource_name: str = "kafka-cluster",
    pattern_type: str = "LITERAL",
    principal: str = "User:alice",
    host: str = "*",
    operation: str = "DESCRIBE",
    permission_type: str = "ALLOW",
) -> dict[str, str]:
    return {
        "resource_type": resource_type,
        "resource_name": resource_name,
        "pattern_type": pattern_type,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission_type,
    }


def as_filter(b: dict[str, Any]) -> dict[str, Any]:
    return {
        "resource_type_filter": b["resource_type"],
        "resource_name_filter": b["resource_name"],
        "pattern_type_filter": b["pattern_type"],
        "principal_filter": b["principal"],
        "host_filter": b["host"],
        "operation": b["operation"],
        "permission_type": b["permission_type"],
    }


def create(api: Any, token: str, *bindings: dict[str, str]) -> list[dict[str, Any]]:
    status, body = api.post(CREATE, {"creations": list(bindings)}, token=token)
    assert status == 200, body
    return list(body["results"])


def delete(api: Any, token: str, *filters: dict[str, Any]) -> list[dict[str, Any]]:
    status, body = api.post(DELETE, {"filters": list(filters)}, token=token)
    assert status == 200, body
    return list(body["filter_results"])


def describe(api: Any, token: str, **fields: Any) -> list[dict[str, Any]]:
    body = {
        "resource_type": "ANY",
        "pattern_type": "ANY",
        "operation": "ANY",
        "permission_type": "ANY",
        **fields,
    }
    status, answer = api.post(DESCRIBE, body, token=token)
    assert status == 200, answer
    assert answer["error_code"] == 0 and answer["error_message"] is None
    return list(answer["resources"])


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


OK = {"error_code": 0, "error_message": None}


def test_allow_then_deny_then_delete_deny(api, tokens):
    admin, alice = tokens["admin"], tokens["alice"]
    assert api.get("/api/v1/brokers", token=alice)[0] == 403
    assert create(api, admin, binding()) == [OK]
    assert api.get("/api/v1/brokers", token=alice)[0] == 200
    deny = binding(host="*", permission_type="DENY")
    assert create(api, admin, deny) == [OK]
    status, body = api.get("/api/v1/brokers", token=alice)
    assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    (result,) = delete(api, admin, as_filter(deny))
    assert result["error_code"] == 0
    assert result["matching_acls"] == [{**OK, **deny}]
    assert api.get("/api/v1/brokers", token=alice)[0] == 200
    assert Acl.objects.count() == 1


def test_alter_implies_describe_and_grants_acl_writes(api, tokens):
    admin, alice = tokens["admin"], tokens["alice"]
    body = {"creations": [binding(resource_type="TOPIC", resource_name="t")]}
    assert api.post(CREATE, body, token=alice)[0] == 403
    assert api.post(DELETE, {"filters": []}, token=alice)[0] == 403
    create(api, admin, binding(operation="ALTER"))
    assert api.get("/api/v1/brokers", token=alice)[0] == 200  # ALLOW ALTER implies DESCRIBE
    assert create(api, alice, binding(resource_type="TOPIC", resource_name="t")) == [OK]
    assert describe(api, alice, resource_type="TOPIC")[0]["resource_name"] == "t"


def test_prefix_acl_matching(api, tokens):
    create(
        api,
        tokens["admin"],
        binding("TOPIC", "orders-", "PREFIXED", operation="READ"),
        binding("TOPIC", "orders-secret", "LITERAL", operation="READ", permission_type="DENY"),
    )
    alice = AuthenticatedPrincipal(id=0, name="alice", is_super_user=False, is_broker=False)

    def can_read(topic: str) -> bool:
        return is_authorized(
            alice,
            host="10.0.0.1",
            operation=AclOperation.READ,
            resource_type=ResourceType.TOPIC,
            resource_name=topic,
        )

    assert can_read("orders-eu") and can_read("orders-")
    assert not can_read("orders") and not can_read("ordersx")
    assert not can_read("orders-secret")  # DENY beats the prefixed ALLOW
    delete(
        api,
        tokens["admin"],
        {
            **as_filter(binding()),
            "resource_type_filter": "TOPIC",
            "resource_name_filter": "orders-",
            "pattern_type_filter": "PREFIXED",
            "operation": "READ",
        },
    )
    assert not can_read("orders-eu")


def test_describe_filters(api, tokens):
    admin = tokens["admin"]
    create(
        api,
        admin,
        binding("TOPIC", "*", "LITERAL", principal="User:bob", operation="WRITE"),
        binding("TOPIC", "foo", "PREFIXED", operation="READ"),
        binding("TOPIC", "foobar", "LITERAL", operation="READ"),
        binding("TOPIC", "foobar", "LITERAL", principal="User:bob", operation="READ"),
        binding("TOPIC", "other", "LITERAL", operation="READ"),
        binding("GROUP", "foobar", "LITERAL", operation="READ"),
    )

    def names(resources: list[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
        return sorted(
            (r["resource_type"], r["resource_name"], r["pattern_type"], len(r["acls"]))
            for r in resources
        )

    assert len(names(describe(api, admin))) == 5  # five resource patterns, six ACLs
    assert names(describe(api, admin, resource_type="TOPIC", resource_name="foobar")) == [
        ("TOPIC", "foobar", "LITERAL", 2)
    ]
    assert names(
        describe(api, admin, resource_type="TOPIC", resource_name="foobar", pattern_type="MATCH")
    ) == [
        ("TOPIC", "*", "LITERAL", 1),
        ("TOPIC", "foo", "PREFIXED", 1),
        ("TOPIC", "foobar", "LITERAL", 2),
    ]
    assert names(describe(api, admin, resource_type="TOPIC", pattern_type="PREFIXED")) == [
        ("TOPIC", "foo", "PREFIXED", 1)
    ]
    assert names(describe(api, admin, resource_type="TOPIC", pattern_type="LITERAL")) == [
        ("TOPIC", "*", "LITERAL", 1),
        ("TOPIC", "foobar", "LITERAL", 2),
        ("TOPIC", "other", "LITERAL", 1),
    ]
    (bob,) = describe(api, admin, principal="User:bob", operation="READ")
    assert bob == {
        "resource_type": "TOPIC",
        "resource_name": "foobar",
        "pattern_type": "LITERAL",
        "acls": [
            {"principal": "User:bob", "host": "*", "operation": "READ", "permission_type": "ALLOW"}
        ],
    }
    assert describe(api, admin, host="10.0.0.1") == []
    # Kafka's default pattern type for a filter is LITERAL.
    status, body = api.post(
        DESCRIBE,
        {"resource_type": "ANY", "operation": "ANY", "permission_type": "ANY"},
        token=admin,
    )
    assert status == 200 and len(body["resources"]) == 4  # the LITERAL ones


def test_describe_needs_describe_on_cluster(api, tokens):
    body = {"resource_type": "ANY", "operation": "ANY", "permission_type": "ANY"}
    status, answer = api.post(DESCRIBE, body, token=tokens["alice"])
    assert status == 403 and answer["error_code"] == 31
    create(api, tokens["admin"], binding())
    assert api.post(DESCRIBE, body, token=tokens["alice"])[0] == 200


def test_broker_principal_refused_on_acl_writes(api, tokens):
    status, body = api.post(CREATE, {"creations": [binding()]}, token=tokens["broker"])
    assert status == 403 and body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    status, body = api.post(DELETE, {"filters": []}, token=tokens["broker"])
    assert status == 403
    assert api.post(CREATE, {"creations": []}, token=None)[0] == 401


def test_delete_several_filters_over_http(api, tokens):
    admin = tokens["admin"]
    create(
        api,
        admin,
        binding("TOPIC", "a", operation="READ"),
        binding("TOPIC", "b", operation="READ"),
        binding("GROUP", "g", operation="READ"),
    )
    before = log_end()
    results = delete(
        api,
        admin,
        {
            "resource_type_filter": "TOPIC",
            "pattern_type_filter": "ANY",
            "operation": "ANY",
            "permission_type": "ANY",
        },
        {
            "resource_type_filter": "ANY",
            "pattern_type_filter": "ANY",
            "principal_filter": "User:alice",
            "operation": "READ",
            "permission_type": "ANY",
        },
        {"resource_type_filter": "UNKNOWN", "operation": "ANY", "permission_type": "ANY"},
    )
    assert sorted(m["resource_name"] for m in results[0]["matching_acls"]) == ["a", "b"]
    assert sorted(m["resource_name"] for m in results[1]["matching_acls"]) == ["a", "b", "g"]
    assert results[2] == {
        "error_code": 42,
        "error_message": "Unknown patternFilter.",
        "matching_acls": [],
    }
    assert log_end() - before == 3  # each ACL removed once
    assert Acl.objects.count() == 0


def test_invalid_creations_answer_per_item(api, tokens):
    results = create(
        api,
        tokens["admin"],
        binding(operation="ANY"),
        binding(pattern_type="MATCH"),
        binding(principal="alice"),
        binding(resource_name="other"),
        binding("TOPIC", ""),
        binding(),
    )
    assert [r["error_code"] for r in results] == [42, 42, 42, 42, 42, 0]
    assert results[0]["error_message"] == "Invalid operation ANY"
    assert Acl.objects.count() == 1


@pytest.mark.parametrize(
    ("path", "body", "culprit"),
    [
        (CREATE, {"creations": [{**binding(), "operation": "FLY"}]}, "operation"),
        (CREATE, {"creations": [{**binding(), "extra": 1}]}, "extra"),
        (CREATE, {"creations": [{**binding(), "principal": None}]}, "principal"),
        (CREATE, {"creations": [{**binding(), "resource_name": 5}]}, "resource_name"),
        (CREATE, {"creations": "x"}, "creations"),
        (CREATE, ["x"], "Expected a JSON object"),
        (
            DELETE,
            {"filters": [{"operation": "ANY", "permission_type": "ANY"}]},
            "resource_type_filter",
        ),
        (DELETE, {"filters": [{**as_filter(binding()), "host_filter": 1}]}, "host_filter"),
        (DESCRIBE, {"resource_type": "ANY", "operation": "ANY"}, "permission_type"),
        (
            DESCRIBE,
            {"resource_type": "BOGUS", "operation": "ANY", "permission_type": "ANY"},
            "resource_type",
        ),
    ],
)
def test_malformed_bodies_are_400_and_write_nothing(api, tokens, path, body, culprit):
    create(api, tokens["admin"], binding())
    before = log_end()
    status, answer = api.post(path, body, token=tokens["admin"])
    assert status == 400, answer
    assert answer["error"] == "INVALID_REQUEST" and culprit in answer["error_message"]
    assert log_end() == before and Acl.objects.count() == 1


def test_describe_unknown_filter_is_invalid_request(api, tokens):
    body = {"resource_type": "ANY", "operation": "UNKNOWN", "permission_type": "ANY"}
    status, answer = api.post(DESCRIBE, body, token=tokens["admin"])
    assert status == 400
    assert answer["error_code"] == 42 and answer["error_message"] == "Unknown entryFilter."
    assert answer["resources"] == []


def test_acl_writes_are_logged_with_request_id(api, tokens):
    from controlplane.models import MetadataRecord

    create(api, tokens["admin"], binding())
    status, _ = api.post(
        DELETE,
        {"filters": [as_filter(binding())]},
        token=tokens["admin"],
        headers={"X-Request-ID": "del-acl-1"},
    )
    assert status == 200
    record = MetadataRecord.objects.order_by("-offset").first()
    assert record is not None and record.record_type == "RemoveAccessControlEntryRecord"
    assert record.request_id == "del-acl-1"
