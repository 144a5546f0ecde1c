"""The audit trail over HTTP: every admin request, allowed or denied, with what it wrote."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from controlplane.controller.api_keys import ADMIN_APIS
from controlplane.models import MetadataRecord
from tests.conftest import with_token_secret_key

pytestmark = pytest.mark.django_db

AUDIT = "/api/v1/audit-events"
SECRET = "the-secret-key-nobody-sees"


def acl(principal: str = "User:bob", **overrides: Any) -> dict[str, Any]:
    return {
        "resource_type": "TOPIC",
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
        **overrides,
    }


def set_config(rtype: str, name: str, key: str, value: str) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": key, "config_operation": "SET", "value": value}],
            }
        ]
    }


# One valid body per admin RPC: each must leave exactly one audit event.
BODIES: dict[str, dict[str, Any]] = {
    "CreateTopics": {"topics": [{"name": "audited", "num_partitions": 1, "replication_factor": 1}]},
    "DeleteTopics": {"topic_names": ["audited"]},
    "CreatePartitions": {"topics": [{"name": "orders", "count": 2}]},
    "ElectLeaders": {"election_type": "PREFERRED", "topic_partitions": None},
    "AlterPartitionReassignments": {
        "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "replicas": [1]}]}]
    },
    "ListPartitionReassignments": {"topics": None},
    "DescribeCluster": {"include_cluster_authorized_operations": True},
    "AlterConfigs": {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": "orders",
                "configs": [{"name": "retention.ms", "value": "1000"}],
            }
        ]
    },
    "IncrementalAlterConfigs": set_config("TOPIC", "orders", "retention.ms", "2000"),
    "DescribeConfigs": {
        "resources": [
            {"resource_type": "TOPIC", "resource_name": "orders", "configuration_keys": None}
        ]
    },
    "CreateAcls": {"creations": [acl()]},
    "DeleteAcls": {
        "filters": [
            {
                "resource_type_filter": "TOPIC",
                "resource_name_filter": "orders",
                "pattern_type_filter": "LITERAL",
                "principal_filter": "User:bob",
                "host_filter": "*",
                "operation": "READ",
                "permission_type": "ALLOW",
            }
        ]
    },
    "DescribeAcls": {
        "resource_type": "ANY",
        "resource_name": None,
        "pattern_type": "ANY",
        "principal": None,
        "host": None,
        "operation": "ANY",
        "permission_type": "ANY",
    },
    "AlterClientQuotas": {
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "bob"}],
                "ops": [{"key": "producer_byte_rate", "value": 1024.0}],
            }
        ]
    },
    "DescribeClientQuotas": {"components": [{"entity_type": "user", "match_type": "ANY"}]},
    "CreateDelegationToken": {"renewers": [], "max_lifetime_ms": -1},
    "DescribeDelegationToken": {"owners": None},
    "UnregisterBroker": {"broker_id": 7},
    "AlterUserScramCredentials": {
        "upsertions": [
            {
                "name": "bob",
                "mechanism": "SCRAM-SHA-256",
                "iterations": 4096,
                "salt": "c2FsdA==",
                "salted_password": "c2FsdGVkLXBhc3N3b3Jk",
            }
        ]
    },
    "DescribeUserScramCredentials": {"users": [{"name": "bob"}]},
    # The level the log starts at: finalized already, so nothing is written.
    "UpdateFeatures": {
        "feature_updates": [
            {"feature": "metadata.version", "max_version_level": 25, "upgrade_type": 1}
        ]
    },
}


@pytest.fixture
def topic(api: Any, tokens: dict[str, str], register: Any, settings: Any) -> str:
    # The token key, a node setting: never a record, never in the trail.
    settings.CP_STATIC_BROKER_CONFIGS = with_token_secret_key(
        settings.CP_STATIC_BROKER_CONFIGS, SECRET
    )
    register(1, unfence=True)
    status, answer = api.post(
        "/api/v1/create-topics",
        {"topics": [{"name": "orders", "num_partitions": 1, "replication_factor": 1}]},
        token=tokens["admin"],
    )
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer
    AuditEvent.objects.all().delete()
    return "orders"


def audit(api: Any, token: str, query: str = "") -> list[dict[str, Any]]:
    status, page = api.get(f"{AUDIT}{query}", token=token)
    assert status == 200, page
    return list(page["results"])


def test_every_admin_rpc_is_audited_with_the_offsets_it_wrote(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    # Renew and expire need an HMAC: test_secrets_never_reach_the_trail_or_the_log has them.
    with_hmac = {"RenewDelegationToken", "ExpireDelegationToken"}
    assert set(BODIES) | with_hmac == set(ADMIN_APIS), "every admin RPC is covered"
    for name, body in BODIES.items():
        path = "/api/v1/" + ADMIN_APIS[name].path
        status, answer = api.post(
            path,
            body,
            token=tokens["admin"],
            headers={"X-Request-ID": f"audit-{name}", "X-Client-ID": "tool"},
        )
        assert status == 200, (name, answer)
        [event] = AuditEvent.objects.filter(request_id=f"audit-{name}")
        assert (event.api, event.principal, event.client_id) == (name, "User:admin", "tool")
        written = list(
            MetadataRecord.objects.filter(request_id=f"audit-{name}").values_list(
                "offset", flat=True
            )
        )
        if written:
            assert (event.first_offset, event.last_offset) == (min(written), max(written))
        else:
            assert event.first_offset is event.last_offset is None
        assert event.resources, name
    by_api = {e["api"]: e for e in audit(api, tokens["admin"], "?page_size=100")}
    assert by_api["CreateTopics"]["resources"] == [
        {"resource_type": "TOPIC", "resource_name": "audited", "error_code": 0}
    ]
    assert by_api["UnregisterBroker"]["outcome"] == "FAILED"  # broker 7 never registered
    assert by_api["UnregisterBroker"]["error_code"] == 102
    assert by_api["CreateAcls"]["outcome"] == "SUCCESS"
    assert by_api["CreateAcls"]["resources"][0]["resource_name"] == (
        "orders (LITERAL): ALLOW READ for User:bob"
    )


def test_denied_requests_are_audited(api: Any, tokens: dict[str, str], topic: str) -> None:
    status, _ = api.post("/api/v1/create-acls", {"creations": [acl()]}, token=tokens["alice"])
    assert status == 403
    status, answer = api.post(
        "/api/v1/incremental-alter-configs",
        set_config("TOPIC", "orders", "retention.ms", "5"),
        token=tokens["alice"],
    )
    assert status == 200 and answer["responses"][0]["error_code"] == 29
    events = audit(api, tokens["admin"], "?principal=User:alice")
    assert [(e["api"], e["outcome"], e["error_code"]) for e in events] == [
        ("IncrementalAlterConfigs", "DENIED", 29),
        ("CreateAcls", "DENIED", 31),
    ]
    assert events[1]["http_status"] == 403
    assert events[1]["resources"][0]["resource_type"] == "TOPIC"  # named though refused


def test_partial_outcome_names_the_failed_resource(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    body = set_config("TOPIC", "orders", "retention.ms", "10")
    body["resources"].append(
        {
            "resource_type": "TOPIC",
            "resource_name": "missing",
            "configs": [{"name": "retention.ms", "config_operation": "SET", "value": "1"}],
        }
    )
    status, _ = api.post("/api/v1/incremental-alter-configs", body, token=tokens["admin"])
    assert status == 200
    [event] = audit(api, tokens["admin"])
    assert (event["outcome"], event["error_code"]) == ("PARTIAL", 3)
    assert [r["error_code"] for r in event["resources"]] == [0, 3]


def test_filters(api: Any, tokens: dict[str, str], topic: str) -> None:
    api.post(
        "/api/v1/create-acls",
        {"creations": [acl()]},
        token=tokens["admin"],
        headers={"X-Request-ID": "r-1"},
    )
    api.post("/api/v1/create-acls", {"creations": [acl()]}, token=tokens["alice"])
    api.post(
        "/api/v1/incremental-alter-configs",
        set_config("TOPIC", "orders", "retention.ms", "7"),
        token=tokens["admin"],
    )

    def apis(query: str) -> list[str]:
        return [e["api"] for e in audit(api, tokens["admin"], query)]

    assert apis("?request_id=r-1") == ["CreateAcls"]
    assert apis("?outcome=DENIED") == ["CreateAcls"]
    assert apis("?api=IncrementalAlterConfigs") == ["IncrementalAlterConfigs"]
    assert apis("?principal=User:admin") == ["IncrementalAlterConfigs", "CreateAcls"]
    assert apis("?forwarded=true") == []
    assert len(apis("?forwarded=false")) == 3
    assert apis("?resource=retention") == []  # names resources, never config keys or values
    assert len(apis("?resource=orders")) == 3
    assert apis("?error_code=31") == ["CreateAcls"]
    status, answer = api.get(f"{AUDIT}?outcome=MAYBE", token=tokens["admin"])
    assert status == 400 and answer["error"] == "INVALID_REQUEST"


def test_reading_the_trail_needs_describe_on_the_cluster(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    status, answer = api.get(AUDIT, token=tokens["alice"])
    assert status == 403 and answer["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    status, _ = api.get(AUDIT, token=None)
    assert status == 401
    assert not AuditEvent.objects.exists()  # reading is not an admin request


def test_the_list_costs_the_same_queries_for_2_and_40_events(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            status, _ = api.get(f"{AUDIT}?page_size=100", token=tokens["admin"])
        assert status == 200
        return len(captured)

    for _ in range(2):
        api.post("/api/v1/create-acls", {"creations": [acl()]}, token=tokens["admin"])
    few = queries()
    for _ in range(38):
        api.post("/api/v1/create-acls", {"creations": [acl()]}, token=tokens["admin"])
    assert queries() == few


def test_secrets_never_reach_the_trail_or_the_log(
    api: Any, tokens: dict[str, str], topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    status, created = api.post(
        "/api/v1/create-delegation-token",
        {"renewers": [], "max_lifetime_ms": -1},
        token=tokens["admin"],
    )
    assert status == 200 and created["hmac"]
    status, renewed = api.post(
        "/api/v1/renew-delegation-token",
        {"hmac": created["hmac"], "renew_period_ms": 1000},
        token=tokens["admin"],
    )
    assert status == 200 and renewed["error_code"] == 0
    # The controller's note of the token (for the audit trail) stays on the server.
    assert not {"_token_id", "token_id"} & set(renewed), renewed
    status, expired = api.post(
        "/api/v1/expire-delegation-token",
        {"hmac": created["hmac"], "expiry_time_period_ms": -1},
        token=tokens["admin"],
    )
    assert status == 200 and expired["error_code"] == 0
    assert not {"_token_id", "token_id"} & set(expired), expired
    # An attempt to set the key dynamically is refused (a static config); its value is not
    # kept either.
    status, refused = api.post(
        "/api/v1/incremental-alter-configs",
        set_config("BROKER", "", "delegation.token.secret.key", SECRET + "-2"),
        token=tokens["admin"],
    )
    assert status == 200 and refused["responses"][0]["error"] == "INVALID_CONFIG", refused
    trail = json.dumps(audit(api, tokens["admin"], "?page_size=100"))
    for secret in (created["hmac"], SECRET, SECRET + "-2"):
        assert secret not in trail
        assert secret not in caplog.text
    events = {e["api"]: e for e in json.loads(trail)}
    token_id = created["token_id"]
    for name in ("CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken"):
        assert events[name]["resources"] == [
            {"resource_type": "DELEGATION_TOKEN", "resource_name": token_id, "error_code": 0}
        ]
        assert events[name]["first_offset"] is not None
