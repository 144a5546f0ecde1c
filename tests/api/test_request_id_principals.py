"""Request ids belong to their principal (issue 20).

A request id dedups the retries of one principal's request. Another principal's request that
carries the same id (a client library's counter, a copied or guessed id) is a request of its
own: applied as usual, answered with its own response and never with the other principal's,
and audited as a `RequestIdCollision`. For an Envelope the principal is the original client's,
not the forwarding broker's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from audit.models import AuditEvent
from controlplane.models import Acl, AppliedRequest, ConfigEntry, MetadataRecord
from controlplane.principals import principal_create
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import (
    AppliedWrite,
    ControllerAnswer,
    ControllerEvent,
    RequestContext,
)
from controlplane.runtime.metadata_log import DuplicateWrite, log_commit
from controlplane.runtime.replay import duplicate_writes, metadata_verify
from security.models import DelegationToken
from tests.api.test_envelope_api import (
    ENVELOPE,
    INCREMENTAL,
    envelope,
    grant_alter_configs,
    orders_topic,
    set_retention,
)
from tests.api.test_request_dedup import retention_event, without_handled
from tests.api.test_tokens_api import CREATE

pytestmark = pytest.mark.django_db

COLLISION = "RequestIdCollision"


def records_of(request_id: str) -> list[tuple[str, str]]:
    """(principal, record type) of the log's records of `request_id`, in offset order."""
    return list(
        MetadataRecord.objects.filter(request_id=request_id)
        .order_by("offset")
        .values_list("principal", "record_type")
    )


def collisions(request_id: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The audited collisions of `request_id`: (who reused it, [(resource type, name)])."""
    return [
        (event.principal, [(r["resource_type"], r["resource_name"]) for r in event.resources])
        for event in AuditEvent.objects.filter(api=COLLISION, request_id=request_id).order_by("id")
    ]


@pytest.fixture
def topic(api: Any, tokens: dict[str, str], register: Any) -> str:
    return orders_topic(api, tokens, register)


def retention_of(topic: str) -> str:
    return ConfigEntry.objects.get(resource_name=topic, name="retention.ms").value


def test_another_principals_token_create_with_the_same_id_creates_its_own_token(
    api: Any, tokens: dict[str, str], token_secret_key: str
) -> None:
    """The reproduction of issue 20: alice got the admin's token (HMAC withheld), none of hers."""
    same = {"X-Request-ID": "token-R"}
    status, admins = api.post(CREATE, {}, token=tokens["admin"], headers=same)
    assert status == 200 and admins["error_code"] == 0 and admins["hmac"], admins

    status, alices = api.post(CREATE, {}, token=tokens["alice"], headers=same)
    assert status == 200 and alices["error_code"] == 0, alices
    assert (alices["principal_type"], alices["principal_name"]) == ("User", "alice")
    assert alices["token_id"] != admins["token_id"]
    assert alices["hmac"] and alices["hmac"] != admins["hmac"]  # her own, shown once
    owners = dict(DelegationToken.objects.values_list("token_id", "owner"))
    assert owners == {admins["token_id"]: "User:admin", alices["token_id"]: "User:alice"}
    assert records_of("token-R") == [
        ("User:admin", "DelegationTokenRecord"),
        ("User:alice", "DelegationTokenRecord"),
    ]
    # Each principal's retry still answers its own stored write (without the HMAC).
    for name, first in (("admin", admins), ("alice", alices)):
        status, again = api.post(CREATE, {}, token=tokens[name], headers=same)
        assert status == 200 and again["token_id"] == first["token_id"], again
        assert again["hmac"] is None and again["principal_name"] == name
    assert DelegationToken.objects.count() == 2 and len(records_of("token-R")) == 2
    # Audited: both writes, and the collision once (a retry is no collision).
    rows = AuditEvent.objects.filter(request_id="token-R", api="CreateDelegationToken")
    assert sorted(rows.values_list("principal", flat=True)) == ["User:admin", "User:alice"]
    assert collisions("token-R") == [
        ("User:alice", [("API", "CreateDelegationToken"), ("PRINCIPAL", "User:admin")])
    ]
    assert metadata_verify() == []


def test_another_principals_config_write_with_the_same_id_is_applied(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    grant_alter_configs(api, tokens, "User:alice")
    same = {"X-Request-ID": "config-R"}
    status, first = api.post(
        INCREMENTAL, set_retention(topic, "1000"), token=tokens["admin"], headers=same
    )
    assert status == 200 and first["responses"][0]["error_code"] == 0, first
    status, second = api.post(
        INCREMENTAL, set_retention(topic, "2000"), token=tokens["alice"], headers=same
    )
    assert status == 200 and second["responses"][0]["error_code"] == 0, second
    assert retention_of(topic) == "2000"
    # Alice's retry applies nothing and answers her write; the id with another body is
    # refused (INVALID_REQUEST, 422: issue 34), never answered hers.
    status, retried = api.post(
        INCREMENTAL, set_retention(topic, "2000"), token=tokens["alice"], headers=same
    )
    assert status == 200 and retried == second
    status, reused = api.post(
        INCREMENTAL, set_retention(topic, "3000"), token=tokens["alice"], headers=same
    )
    assert status == 422 and reused["error_code"] == 42, reused
    assert retention_of(topic) == "2000"
    assert records_of("config-R") == [
        ("User:admin", "ConfigRecord"),
        ("User:alice", "ConfigRecord"),
    ]
    assert collisions("config-R") == [
        ("User:alice", [("API", "IncrementalAlterConfigs"), ("PRINCIPAL", "User:admin")])
    ]
    assert AppliedRequest.objects.filter(request_id="config-R").count() == 2
    assert metadata_verify() == []


def test_another_principals_acl_creation_with_the_same_id_is_applied(
    api: Any, tokens: dict[str, str]
) -> None:
    ops = principal_create(name="ops", super_user=True)

    def allow(principal: str) -> dict[str, Any]:
        return {
            "creations": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": "payments",
                    "pattern_type": "LITERAL",
                    "principal": principal,
                    "host": "*",
                    "operation": "READ",
                    "permission_type": "ALLOW",
                }
            ]
        }

    same = {"X-Request-ID": "acl-R"}
    for token, principal in ((tokens["admin"], "User:carol"), (ops, "User:dave")):
        status, answer = api.post(
            "/api/v1/create-acls", allow(principal), token=token, headers=same
        )
        assert status == 200 and answer["results"][0]["error_code"] == 0, answer
    assert [r[0] for r in records_of("acl-R")] == ["User:admin", "User:ops"]
    granted = Acl.objects.filter(resource_name="payments").values_list("principal", flat=True)
    assert sorted(granted) == ["User:carol", "User:dave"]
    assert collisions("acl-R") == [
        ("User:ops", [("API", "CreateAcls"), ("PRINCIPAL", "User:admin")])
    ]
    assert metadata_verify() == []


def test_envelopes_are_scoped_by_the_original_principal(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    """Two forwarded clients with one id are two writes; one client's retry, through the same
    broker or sent directly, is one."""
    grant_alter_configs(api, tokens, "User:alice", "User:bob")
    same = {"X-Request-ID": "env-R"}

    def forward(name: str, value: str) -> dict[str, Any]:
        status, answer = api.post(
            ENVELOPE,
            envelope(
                set_retention(topic, value),
                principal={"type": "User", "name": name},
                forwarding_broker_id=1,
            ),
            token=tokens["broker"],
            headers=same,
        )
        assert status == 200 and answer["error_code"] == 0, answer
        inner = answer["response_data"]
        assert inner["responses"][0]["error_code"] == 0, inner
        return dict(inner)

    alices = forward("alice", "1000")
    assert retention_of(topic) == "1000"
    bobs = forward("bob", "2000")
    assert retention_of(topic) == "2000"
    assert forward("alice", "1000") == alices  # the broker's retry of alice's request
    status, direct = api.post(
        INCREMENTAL, set_retention(topic, "1000"), token=tokens["alice"], headers=same
    )
    assert status == 200 and direct == alices  # alice herself, with the id she used
    assert forward("bob", "2000") == bobs
    assert retention_of(topic) == "2000"
    assert records_of("env-R") == [("User:alice", "ConfigRecord"), ("User:bob", "ConfigRecord")]
    (collision,) = AuditEvent.objects.filter(api=COLLISION, request_id="env-R")
    assert collision.principal == "User:bob"
    assert (collision.forwarding_principal, collision.forwarding_broker_id) == ("User:broker-a", 1)
    assert collision.resources == [
        {"resource_type": "API", "resource_name": "IncrementalAlterConfigs", "error_code": 0},
        {"resource_type": "PRINCIPAL", "resource_name": "User:alice", "error_code": 0},
    ]
    assert metadata_verify() == []


def test_copies_from_two_principals_in_one_batch_are_two_writes() -> None:
    runtime = get_runtime()

    def event(principal: str, value: int) -> ControllerEvent:
        sent = retention_event("batch-R", value)
        return dataclasses.replace(
            sent, context=dataclasses.replace(sent.context, principal=principal)
        )

    answers = runtime.handle_batch(
        [event("User:admin", 1000), event("User:ops", 2000), event("User:admin", 1000)]
    )
    admins, ops, admins_copy = (without_handled(a) for a in answers)
    assert admins_copy == admins and ops != admins
    assert [r[0] for r in records_of("batch-R")] == ["User:admin", "User:ops"]
    assert ops.offsets is not None and admins.offsets is not None
    assert ops.offsets[0] == admins.offsets[0] + 1
    # A later batch: each principal's retry answers its own write; a third principal is new.
    later = runtime.handle_batch([event("User:ops", 2000), event("User:carol", 5000)])
    assert without_handled(later[0]) == ops
    assert [r[0] for r in records_of("batch-R")] == ["User:admin", "User:ops", "User:carol"]
    assert collisions("batch-R") == [
        ("User:ops", [("API", "IncrementalAlterConfigs"), ("PRINCIPAL", "User:admin")]),
        (
            "User:carol",
            [
                ("API", "IncrementalAlterConfigs"),
                ("PRINCIPAL", "User:admin"),
                ("PRINCIPAL", "User:ops"),
            ],
        ),
    ]
    assert duplicate_writes() == [] and metadata_verify() == []


def test_the_commit_refuses_a_second_write_per_principal() -> None:
    """The last line behind the lookups: two writes of one (principal, id) fail the commit;
    one id of two principals commits."""
    runtime = get_runtime()
    runtime.handle(retention_event("warm-up", 1))
    assert runtime.lease is not None and runtime.image is not None
    from controlplane.controller.image import MetadataDelta
    from controlplane.controller.records import ConfigRecord

    def two_writes(*principals: str) -> tuple[MetadataDelta, list[AppliedWrite]]:
        assert runtime.image is not None
        delta = MetadataDelta(runtime.image)
        end = runtime.image.last_offset
        writes = []
        for n, principal in enumerate(principals, start=1):
            delta.replay(ConfigRecord("BROKER", "", "log.retention.ms", str(n)))
            context = RequestContext(principal=principal, request_id="shared")
            answer = ControllerAnswer({})
            writes.append(
                AppliedWrite(context, "IncrementalAlterConfigs", end + n, end + n, answer)
            )
        return delta, writes

    delta, writes = two_writes("User:admin", "User:admin")
    with pytest.raises(DuplicateWrite) as raised:
        log_commit(lease=runtime.lease, delta=delta, writes=writes)
    assert raised.value.keys == [("User:admin", "shared")]
    assert records_of("shared") == []
    delta, writes = two_writes("User:admin", "User:ops")
    log_commit(lease=runtime.lease, delta=delta, writes=writes)
    assert [r[0] for r in records_of("shared")] == ["User:admin", "User:ops"]
    assert duplicate_writes() == []


def test_alter_replica_state_reports_of_two_broker_principals_with_one_id_both_apply(
    api: Any, tokens: dict[str, str], register: Any
) -> None:
    from replicas.models import Partition
    from replicas.selectors import replica_incidents

    other = principal_create(name="broker-b", broker=True)
    epochs = {1: register(1, unfence=True), 2: register(2, unfence=True)}
    status, answer = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": "foo",
                    "assignments": [
                        {"partition_index": 0, "broker_ids": [1, 2]},
                        {"partition_index": 1, "broker_ids": [2, 1]},
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer
    for broker_id, token, partition in ((1, tokens["broker"], 1), (2, other, 0)):
        status, report = api.post(
            "/internal/v1/alter-replica-state",
            {
                "broker_id": broker_id,
                "broker_epoch": epochs[broker_id],
                "new_state": 1,
                "reason": "log directory failed",
                "topics": [{"name": "foo", "partitions": [partition]}],
            },
            token=token,
            headers={"X-Request-ID": "ars-R"},
        )
        assert status == 200 and report["error_code"] == 0, report
    offline = dict(Partition.objects.values_list("partition_index", "offline_replicas"))
    assert offline == {0: [2], 1: [1]}
    assert {r[0] for r in records_of("ars-R")} == {"User:broker-a", "User:broker-b"}
    # Each incident names the broker whose report caused it, not the other one with that id.
    incidents = {(i["partition_index"], i["broker_id"]) for i in replica_incidents()}
    assert incidents == {(0, 2), (1, 1)}
    assert metadata_verify() == []
