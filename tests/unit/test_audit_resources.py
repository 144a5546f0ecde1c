"""What the audit trail says of a request: its resources, outcome and error code (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit import resources as named
from audit.resources import MAX_RESOURCES, request_outcome
from controlplane.controller.api_keys import ADMIN_APIS
from controlplane.rpc import REGISTRY

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=20,
)
API_NAMES = [*ADMIN_APIS, "Envelope"]


def request_resources(
    api: str, body: Any, answer: Any, notes: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The resources the trail names for a request of `api` (its spec's namers)."""
    namers = named.envelope if api == "Envelope" else REGISTRY[api].resources
    return named.request_resources(namers, body, answer, notes)


@given(st.sampled_from(API_NAMES), json_values, json_values, json_values)
def test_any_json_at_all_is_described_without_raising(
    api: str, body: Any, answer: Any, notes: Any
) -> None:
    resources = request_resources(api, body, answer, notes if isinstance(notes, dict) else None)
    assert len(resources) <= MAX_RESOURCES + 1
    for resource in resources:
        assert isinstance(resource["resource_type"], str)
        assert isinstance(resource["resource_name"], str)
        assert isinstance(resource["error_code"], int)
    outcome, code = request_outcome(200, answer, resources)
    assert outcome in {"SUCCESS", "PARTIAL", "FAILED", "DENIED"}
    assert (code == 0) == (outcome == "SUCCESS")


def topics(*codes: int) -> dict[str, Any]:
    return {"topics": [{"name": f"t{i}", "error_code": c} for i, c in enumerate(codes)]}


@pytest.mark.parametrize(
    ("status", "answer", "expected"),
    [
        (200, topics(0, 0), ("SUCCESS", 0)),
        (200, topics(0, 36), ("PARTIAL", 36)),
        (200, topics(36, 37), ("FAILED", 36)),
        (200, topics(29, 29), ("DENIED", 29)),
        (200, topics(29, 36), ("FAILED", 29)),
        (403, {"error_code": 31}, ("DENIED", 31)),
        (400, {"error_code": 42}, ("FAILED", 42)),
        (503, {"error_code": 41}, ("FAILED", 41)),
        (500, None, ("FAILED", -1)),
        (200, {"error_code": 65}, ("DENIED", 65)),
    ],
)
def test_outcomes(status: int, answer: Any, expected: tuple[str, int]) -> None:
    resources = request_resources("CreateTopics", {}, answer)
    assert request_outcome(status, answer, resources) == expected


def test_a_refused_request_names_the_resources_of_its_body() -> None:
    body = {"topic_names": ["a"], "topics": [{"name": None, "topic_id": "id-1"}]}
    assert request_resources("DeleteTopics", body, {"error_code": 31}) == [
        {"resource_type": "TOPIC", "resource_name": "id-1", "error_code": 31},
        {"resource_type": "TOPIC", "resource_name": "a", "error_code": 31},
    ]


def test_acl_answers_line_up_with_the_request_by_position() -> None:
    creation = {
        "resource_type": "GROUP",
        "resource_name": "g",
        "pattern_type": "PREFIXED",
        "principal": "User:bob",
        "operation": "READ",
        "permission_type": "DENY",
    }
    answer = {"results": [{"error_code": 0}, {"error_code": 42}]}
    resources = request_resources("CreateAcls", {"creations": [creation, {}]}, answer)
    assert resources[0] == {
        "resource_type": "GROUP",
        "resource_name": "g (PREFIXED): DENY READ for User:bob",
        "error_code": 0,
    }
    assert resources[1]["error_code"] == 42


def test_quota_entities_name_defaults() -> None:
    answer = {
        "entries": [
            {
                "error_code": 0,
                "entity": [
                    {"entity_type": "user", "entity_name": None},
                    {"entity_type": "client-id", "entity_name": "app"},
                ],
            }
        ]
    }
    [resource] = request_resources("AlterClientQuotas", {}, answer)
    assert resource["resource_name"] == "user=<default>,client-id=app"


def test_many_partitions_are_cut_with_a_count() -> None:
    answer = {
        "replica_election_results": [
            {"topic": "t", "partition_result": [{"partition_id": i} for i in range(600)]}
        ]
    }
    resources = request_resources("ElectLeaders", {}, answer)
    assert len(resources) == MAX_RESOURCES + 1
    assert resources[-1]["resource_name"] == "(+100 more)"
    assert request_outcome(200, answer, resources) == ("SUCCESS", 0)


def test_token_resources_never_carry_the_hmac() -> None:
    body = {"hmac": "c2VjcmV0", "renew_period_ms": 5}
    [resource] = request_resources("RenewDelegationToken", body, {}, {"token_id": "tid"})
    assert resource == {
        "resource_type": "DELEGATION_TOKEN",
        "resource_name": "tid",
        "error_code": 0,
    }
    assert "c2VjcmV0" not in str(request_resources("RenewDelegationToken", body, {}))
