"""CreateAcls / DeleteAcls in the pure core (Kafka's AclControlManager).

Cases rebuilt from Kafka's AclControlManagerTest: create then delete by filters, a filter that
matches several ACLs, an ACL matched by two filters removed once, invalid filters and
creations; plus reads through a delta that holds uncommitted changes.
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.controller.acls import control as acls
from controlplane.controller.acls.bindings import AclBindingFilter, AclOperation, ResourceType
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import (
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
)

CLUSTER = "acl-test-cluster"
ENV = ControllerEnv(now_ms=0, activated_ms=0, sessions={})


def creation(
    resource_type: str = "TOPIC",
    resource_name: str = "foo",
    pattern_type: str = "LITERAL",
    principal: str = "User:alice",
    host: str = "*",
    operation: str = "READ",
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


def delete_filter(
    resource_type: str = "ANY",
    resource_name: str | None = None,
    pattern_type: str = "ANY",
    principal: str | None = None,
    host: str | None = None,
    operation: str = "ANY",
    permission_type: str = "ANY",
) -> dict[str, Any]:
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": resource_name,
        "pattern_type_filter": pattern_type,
        "principal_filter": principal,
        "host_filter": host,
        "operation": operation,
        "permission_type": permission_type,
    }


def fresh() -> MetadataDelta:
    return MetadataDelta(MetadataImage(cluster_id=CLUSTER))


def commit(delta: MetadataDelta) -> MetadataDelta:
    """Apply the delta to its image and start a new delta over it (as the controller does)."""
    delta.base.apply(delta)
    delta.base.last_offset = delta.last_offset
    return MetadataDelta(delta.base)


def create(delta: MetadataDelta, *creations: dict[str, str]) -> list[dict[str, Any]]:
    response = run_event(delta, "CreateAcls", {"creations": list(creations)}, ENV)
    return list(response["results"])


def delete(delta: MetadataDelta, *filters: dict[str, Any]) -> list[dict[str, Any]]:
    response = run_event(delta, "DeleteAcls", {"filters": list(filters)}, ENV)
    return list(response["filter_results"])


def current(delta: MetadataDelta) -> list[tuple[str, str, str, str]]:
    return sorted(
        (r.resource_type, r.resource_name, r.principal, r.operation)
        for _, r in acls.iter_acls(delta)
    )


def matched(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted(
        (m["resource_name"], m["principal"], m["operation"]) for m in result["matching_acls"]
    )


TEST_ACLS = [
    creation("TOPIC", "mytopic", "LITERAL", "User:alice", operation="READ"),
    creation("TOPIC", "mytopic", "LITERAL", "User:bob", operation="WRITE"),
    creation("TOPIC", "my", "PREFIXED", "User:alice", operation="DESCRIBE"),
    creation("GROUP", "mygroup", "LITERAL", "User:bob", operation="READ", permission_type="DENY"),
]


def test_create_then_delete_by_exact_filter() -> None:
    delta = fresh()
    assert create(delta, *TEST_ACLS) == [{"error_code": 0, "error_message": None}] * 4
    delta = commit(delta)
    assert len(current(delta)) == 4
    results = delete(
        delta,
        delete_filter(
            "TOPIC", "mytopic", "LITERAL", "User:alice", "*", "READ", "ALLOW"
        ),  # exactly one
    )
    assert results[0]["error_code"] == 0 and results[0]["error_message"] is None
    assert results[0]["matching_acls"] == [
        {
            "error_code": 0,
            "error_message": None,
            "resource_type": "TOPIC",
            "resource_name": "mytopic",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "READ",
            "permission_type": "ALLOW",
        }
    ]
    assert ("TOPIC", "mytopic", "User:alice", "READ") not in current(delta)
    assert len(current(delta)) == 3


def test_delete_filter_matching_several_and_twice_matched_removed_once() -> None:
    delta = fresh()
    create(delta, *TEST_ACLS)
    delta = commit(delta)
    before = delta.last_offset
    results = delete(
        delta,
        delete_filter(resource_type="TOPIC"),  # the three topic ACLs
        delete_filter(principal="User:alice"),  # two of them again
    )
    assert matched(results[0]) == [
        ("my", "User:alice", "DESCRIBE"),
        ("mytopic", "User:alice", "READ"),
        ("mytopic", "User:bob", "WRITE"),
    ]
    assert matched(results[1]) == [
        ("my", "User:alice", "DESCRIBE"),
        ("mytopic", "User:alice", "READ"),
    ]
    removes = [r for _, r in delta.replayed if isinstance(r, RemoveAccessControlEntryRecord)]
    assert len(removes) == 3 == delta.last_offset - before
    assert current(delta) == [("GROUP", "mygroup", "User:bob", "READ")]


def test_delete_all_with_any_filter_and_nothing_left() -> None:
    delta = fresh()
    create(delta, *TEST_ACLS)
    delta = commit(delta)
    results = delete(delta, delete_filter())
    assert len(results[0]["matching_acls"]) == 4
    assert current(delta) == []
    again = delete(delta, delete_filter())
    assert again == [{"error_code": 0, "error_message": None, "matching_acls": []}]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (delete_filter(resource_type="UNKNOWN"), "Unknown patternFilter."),
        (delete_filter(pattern_type="UNKNOWN"), "Unknown patternFilter."),
        (delete_filter(operation="UNKNOWN"), "Unknown entryFilter."),
        (delete_filter(permission_type="UNKNOWN"), "Unknown entryFilter."),
        (delete_filter(operation="NOPE"), "Unknown AclOperation name 'NOPE'"),
        ({"resource_type_filter": "TOPIC"}, "operation"),
    ],
)
def test_invalid_filter_answers_invalid_request_others_apply(
    bad: dict[str, Any], message: str
) -> None:
    delta = fresh()
    create(delta, *TEST_ACLS)
    delta = commit(delta)
    results = delete(delta, bad, delete_filter(resource_type="GROUP"))
    assert results[0]["error_code"] == 42
    assert message in results[0]["error_message"]
    assert results[0]["matching_acls"] == []
    assert matched(results[1]) == [("mygroup", "User:bob", "READ")]
    assert len(current(delta)) == 3


def test_delete_match_and_prefixed_filters() -> None:
    delta = fresh()
    create(
        delta,
        creation("TOPIC", "*", "LITERAL", "User:carol"),
        creation("TOPIC", "foo", "PREFIXED", "User:carol"),
        creation("TOPIC", "foobar", "LITERAL", "User:carol"),
        creation("TOPIC", "other", "LITERAL", "User:carol"),
        creation("TOPIC", "foobar", "PREFIXED", "User:carol"),
    )
    delta = commit(delta)
    (prefixed,) = delete(delta, delete_filter("TOPIC", "foo", "PREFIXED"))
    assert [(m["resource_name"], m["pattern_type"]) for m in prefixed["matching_acls"]] == [
        ("foo", "PREFIXED")
    ]
    create(delta, creation("TOPIC", "foo", "PREFIXED", "User:carol"))
    delta = commit(delta)
    (match,) = delete(delta, delete_filter("TOPIC", "foobar", "MATCH"))
    assert sorted((m["resource_name"], m["pattern_type"]) for m in match["matching_acls"]) == [
        ("*", "LITERAL"),
        ("foo", "PREFIXED"),
        ("foobar", "LITERAL"),
        ("foobar", "PREFIXED"),
    ]
    assert current(delta) == [("TOPIC", "other", "User:carol", "READ")]


def test_delete_sees_uncommitted_changes_of_the_same_batch() -> None:
    delta = fresh()
    create(delta, creation(resource_name="committed"))
    delta = commit(delta)
    create(delta, creation(resource_name="pending"))  # same delta, not committed
    (result,) = delete(delta, delete_filter(resource_type="TOPIC"))
    assert sorted(m["resource_name"] for m in result["matching_acls"]) == [
        "committed",
        "pending",
    ]
    assert current(delta) == []
    delta = commit(delta)
    assert delta.base.acls == {}


def test_iter_acls_merges_base_and_delta() -> None:
    delta = fresh()
    create(delta, creation(resource_name="a"), creation(resource_name="b"))
    delta = commit(delta)
    ids = {r.resource_name: i for i, r in acls.iter_acls(delta)}
    delta.replay(RemoveAccessControlEntryRecord(id=ids["a"]))
    delta.replay(acls.acl_record(acls.binding_from_creation(creation(resource_name="c")), "x"))
    assert [r.resource_name for _, r in acls.iter_acls(delta)] == ["b", "c"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (creation(resource_type="ANY"), "Invalid resourceType ANY"),
        (creation(resource_type="UNKNOWN"), "Invalid resourceType UNKNOWN"),
        (creation(pattern_type="MATCH"), "Invalid patternType MATCH"),
        (creation(pattern_type="ANY"), "Invalid patternType ANY"),
        (creation(operation="ANY"), "Invalid operation ANY"),
        (creation(operation="UNKNOWN"), "Invalid operation UNKNOWN"),
        (creation(permission_type="ANY"), "Invalid permissionType ANY"),
        (creation(resource_name=""), "Resource name should not be empty"),
        (creation(principal="alice"), "principalType:principalName"),
        (
            creation("CLUSTER", "other"),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
    ],
)
def test_invalid_creations(bad: dict[str, str], message: str) -> None:
    delta = fresh()
    results = create(delta, bad, creation())
    assert results[0]["error_code"] == 42 and message in results[0]["error_message"]
    assert results[1] == {"error_code": 0, "error_message": None}
    assert len(current(delta)) == 1


def test_identical_creation_is_a_no_op() -> None:
    delta = fresh()
    create(delta, creation(), creation())
    delta = commit(delta)
    assert create(delta, creation()) == [{"error_code": 0, "error_message": None}]
    assert len(current(delta)) == 1


def test_filter_parsing_and_validation() -> None:
    parsed = acls.acl_filter(delete_filter("TOPIC", "x", "ANY"), suffix="_filter")
    assert parsed.resource_type is ResourceType.TOPIC and parsed.resource_name == "x"
    assert parsed.operation is AclOperation.ANY and parsed.principal is None
    assert acls.filter_validation_error(AclBindingFilter()) is None  # ANY is valid (Kafka)
    assert acls.filter_validation_error(AclBindingFilter(operation=AclOperation.UNKNOWN)) == (
        "Unknown entryFilter."
    )
    record = AccessControlEntryRecord("i", "TOPIC", "t", "PREFIXED", "User:a", "*", "READ", "DENY")
    assert acls.binding_fields(acls.binding_of(record)) == {
        k: v for k, v in record.to_data().items() if k != "id"
    }
