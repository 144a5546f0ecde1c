"""The admin APIs of the Kafka wire listener (configs, ACLs, quotas, delegation tokens, Envelope)
against the REST API: the same request through either door gives the same answer, error codes,
change and audit row. Handlers are called directly with kio entities that crossed the wire
(encoded and decoded with kio), and every response they build is encoded and read back."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import io
import logging
import uuid
from typing import Any

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

import wire.apis.clients.acls
import wire.apis.clients.configs
import wire.apis.clients.quotas
import wire.apis.clients.tokens
import wire.apis.controller.envelope
from audit.models import AuditEvent
from configs.models import ClientQuota
from controlplane.controller.config_schema import BROKER_CONFIGS, TOPIC_CONFIGS
from controlplane.models import ConfigEntry
from controlplane.principals import principal_by_token, principal_create
from controlplane.rpc import Caller
from tests.api.test_configs_api import acl
from tests.conftest import with_token_secret_key
from wire.apis.base import WIRE_APIS, Advertised, WireRequest
from wire.apis.clients.configs import CONFIG_TYPES
from wire.apis.common import CONFIG_SOURCES
from wire.apis.controller.envelope import encode_principal
from wire.convert import from_data, to_data

pytestmark = pytest.mark.django_db

CLIENT_ID = "wire-admin"
CLIENT_HOST = "10.9.8.7"
ADVERTISED = Advertised("127.0.0.1", 19092)


def roundtrip(entity: Any) -> Any:
    """`entity` encoded as a Kafka peer would send it, and read back with kio."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    data = buffer.getvalue()
    decoded, size = entity_reader(type(entity))(memoryview(data), 0)
    assert size == len(data)
    assert decoded == entity
    return decoded


def with_nulls(entity: Any, data: dict[str, Any]) -> Any:
    """`entity` with the null arrays `data` names (wire.convert.from_data reads a null array as
    empty: a DescribeConfigs resource's null `configuration_keys` means every key)."""
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(entity):
        value, given = getattr(entity, field.name), data.get(field.name)
        if given is None and field.name in data and value == ():
            changes[field.name] = None
        elif isinstance(value, tuple) and isinstance(given, list):
            changes[field.name] = tuple(
                with_nulls(v, g) if dataclasses.is_dataclass(v) else v
                for v, g in zip(value, given, strict=True)
            )
    return dataclasses.replace(entity, **changes)


def caller(token: str, *, client_id: str = CLIENT_ID, **principal: Any) -> Caller:
    who = principal_by_token(token)
    assert who is not None
    if principal:
        who = dataclasses.replace(who, **principal)
    return Caller(who, host=CLIENT_HOST, client_id=client_id, request_id=str(uuid.uuid4()))


def wire_call(
    api_key: int, version: int, body: dict[str, Any], token: str, **caller_options: Any
) -> Any:
    """Send `body` (kio field names) as request `api_key` v`version` to the listener's handler,
    as `token`'s principal: the request and the response cross the wire codec."""
    request = roundtrip(with_nulls(from_data(load_request_schema(api_key, version), body), body))
    served = WIRE_APIS[api_key]
    assert served.min_version <= version <= served.max_version
    response = served.handler(
        WireRequest(
            api_key=api_key,
            api_version=version,
            correlation_id=11,
            body=request,
            caller=caller(token, **caller_options),
            advertised=ADVERTISED,
            listener="SASL_PLAINTEXT",
        )
    )
    schema = load_response_schema(api_key, version)
    if isinstance(response, bytes):  # answered already encoded (a cached answer's bytes)
        decoded, size = entity_reader(schema)(memoryview(response), 0)
        assert size == len(response)
        return decoded
    assert isinstance(response, schema)
    return roundtrip(response)


def rest(api: Any, path: str, body: dict[str, Any], token: str) -> tuple[int, Any]:
    return api.post(f"/api/v1/{path}", body, token=token, headers={"X-Client-ID": CLIENT_ID})


def last_audit(api_name: str) -> AuditEvent:
    event = AuditEvent.objects.filter(api=api_name).order_by("-id").first()
    assert event is not None, api_name
    return event


def grant(api: Any, tokens: dict[str, str], *acls: dict[str, str]) -> None:
    status, answer = rest(api, "create-acls", {"creations": list(acls)}, tokens["admin"])
    assert status == 200 and all(r["error_code"] == 0 for r in answer["results"]), answer


@pytest.fixture
def topic(api: Any, tokens: dict[str, str], register: Any) -> str:
    for broker_id in range(3):
        register(broker_id, unfence=True)
    status, body = rest(
        api,
        "create-topics",
        {"topics": [{"name": "orders", "num_partitions": 2, "replication_factor": 3}]},
        tokens["admin"],
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    return "orders"


# --- DescribeConfigs ---------------------------------------------------------------------------


def describe_body(rtype: int, name: str, keys: list[str] | None = None) -> dict[str, Any]:
    return {
        "resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True,
        "include_documentation": True,
    }


def rest_describe(api: Any, token: str, rtype: str, name: str) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": rtype, "resource_name": name}],
        "include_synonyms": True,
        "include_documentation": True,
    }
    status, answer = rest(api, "describe-configs", body, token)
    assert status == 200, answer
    return dict(answer["results"][0])


def as_rest(config: Any) -> dict[str, Any]:
    """A wire config entry in the REST API's terms (codes as names)."""
    sources = {v: k for k, v in CONFIG_SOURCES.items()}
    types = {v: k for k, v in CONFIG_TYPES.items()}
    data = to_data(config)
    return {
        **data,
        "config_source": sources[data["config_source"]],
        "config_type": types[data["config_type"]],
        "synonyms": [{**s, "source": sources[s["source"]]} for s in data["synonyms"]],
    }


def test_describe_configs_answers_the_full_broker_catalogue_as_rest_does(
    api: Any, tokens: dict[str, str], topic: str, settings: Any
) -> None:
    set_secret(settings)
    # kafka-python checks names against this before altering: every key, defaults included.
    (result,) = wire_call(32, 4, describe_body(4, "1"), tokens["admin"]).results
    assert result.error_code is ErrorCode.none and (result.resource_type, result.resource_name) == (
        4,
        "1",
    )
    assert {c.name for c in result.configs} == set(BROKER_CONFIGS)
    by_name = {c.name: c for c in result.configs}
    defaulted = by_name["log.cleaner.delete.retention.ms"]
    assert defaulted.config_source == CONFIG_SOURCES["DEFAULT_CONFIG"]
    assert defaulted.config_type == CONFIG_TYPES["LONG"]
    assert [s.source for s in defaulted.synonyms] == [CONFIG_SOURCES["DEFAULT_CONFIG"]]
    assert defaulted.documentation
    static = by_name["num.partitions"]  # the static setting, then Kafka's default
    assert static.config_source == CONFIG_SOURCES["STATIC_BROKER_CONFIG"]
    assert [s.source for s in static.synonyms] == [
        CONFIG_SOURCES["STATIC_BROKER_CONFIG"],
        CONFIG_SOURCES["DEFAULT_CONFIG"],
    ]
    secret = by_name["delegation.token.secret.key"]  # a static password, as Kafka's
    assert secret.is_sensitive and secret.value is None and secret.read_only
    assert secret.config_source == CONFIG_SOURCES["STATIC_BROKER_CONFIG"]
    assert secret.config_type == CONFIG_TYPES["PASSWORD"]
    assert any(c.read_only for c in result.configs)

    expected = rest_describe(api, tokens["admin"], "BROKER", "1")
    assert [as_rest(c) for c in result.configs] == expected["configs"]


def test_describe_configs_every_version_for_a_topic_with_sources(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    status, answer = rest(
        api,
        "incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": topic,
                    "configs": [
                        {"name": "retention.ms", "config_operation": "SET", "value": "5000"}
                    ],
                }
            ]
        },
        tokens["admin"],
    )
    assert status == 200 and answer["responses"][0]["error_code"] == 0
    expected = rest_describe(api, tokens["admin"], "TOPIC", topic)
    for version in (1, 2, 3, 4):
        (result,) = wire_call(32, version, describe_body(2, topic), tokens["admin"]).results
        assert {c.name for c in result.configs} == set(TOPIC_CONFIGS)
        retention = {c.name: c for c in result.configs}["retention.ms"]
        assert retention.value == "5000"
        assert retention.config_source == CONFIG_SOURCES["DYNAMIC_TOPIC_CONFIG"]
        assert retention.synonyms[0].source == CONFIG_SOURCES["DYNAMIC_TOPIC_CONFIG"]
        if version >= 3:
            assert [as_rest(c) for c in result.configs] == expected["configs"]
    # only the keys asked for
    (result,) = wire_call(32, 4, describe_body(2, topic, ["retention.ms"]), tokens["admin"]).results
    assert [c.name for c in result.configs] == ["retention.ms"]


def test_describe_configs_errors_are_rest_errors(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    cases = [
        (2, "missing", "TOPIC", tokens["admin"]),  # unknown topic
        (4, "77", "BROKER", tokens["admin"]),  # unregistered broker
        (4, "x", "BROKER", tokens["admin"]),  # not a broker id
        (2, topic, "TOPIC", tokens["alice"]),  # not authorized
        (4, "1", "BROKER", tokens["alice"]),  # not authorized on the cluster
        (32, "", "GROUP", tokens["admin"]),  # a group has a name
    ]
    for code, name, rtype, token in cases:
        (result,) = wire_call(32, 4, describe_body(code, name), token).results
        expected = rest_describe(api, token, rtype, name)
        assert (int(result.error_code), result.error_message, result.configs) == (
            expected["error_code"],
            expected["error_message"],
            (),
        ), (rtype, name)
    assert int(result.error_code) == 42  # INVALID_REQUEST for the unnamed GROUP
    (unknown,) = wire_call(32, 4, describe_body(99, "x"), tokens["admin"]).results
    assert unknown.error_code is ErrorCode.invalid_request and unknown.resource_type == 0


# --- AlterConfigs / IncrementalAlterConfigs ----------------------------------------------------


def test_alter_configs_every_version_visible_in_rest_and_audited(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    for version, value in ((0, "1000"), (1, "2000"), (2, "3000")):
        body = {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [{"name": "retention.ms", "value": value}],
                }
            ],
            "validate_only": False,
        }
        (answer,) = wire_call(33, version, body, tokens["admin"]).responses
        assert answer.error_code is ErrorCode.none and answer.resource_type == 2
        assert ConfigEntry.objects.get(resource_name=topic, name="retention.ms").value == value
        configs = {
            c["name"]: c for c in rest_describe(api, tokens["admin"], "TOPIC", topic)["configs"]
        }
        assert configs["retention.ms"]["value"] == value
    event = last_audit("AlterConfigs")
    assert (event.principal, event.client_id, event.client_host) == (
        "User:admin",
        CLIENT_ID,
        CLIENT_HOST,
    )
    assert event.outcome == "SUCCESS" and event.first_offset is not None
    assert event.resources == [{"resource_type": "TOPIC", "resource_name": topic, "error_code": 0}]


def inc_body(rtype: int, name: str, *ops: tuple[str, int, str | None]) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": n, "config_operation": o, "value": v} for n, o, v in ops],
            }
        ],
        "validate_only": False,
    }


def test_incremental_alter_configs_operations_and_broker_resources(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    SET, DELETE, APPEND = 0, 1, 2
    (answer,) = wire_call(
        44,
        1,
        inc_body(2, topic, ("retention.ms", SET, "7000"), ("cleanup.policy", APPEND, "compact")),
        tokens["admin"],
    ).responses
    assert answer.error_code is ErrorCode.none
    configs = {c["name"]: c for c in rest_describe(api, tokens["admin"], "TOPIC", topic)["configs"]}
    assert configs["retention.ms"]["value"] == "7000"
    assert configs["cleanup.policy"]["value"] == "delete,compact"
    (answer,) = wire_call(
        44, 0, inc_body(2, topic, ("retention.ms", DELETE, None)), tokens["admin"]
    ).responses
    assert answer.error_code is ErrorCode.none
    assert not ConfigEntry.objects.filter(name="retention.ms").exists()
    # BROKER by id, and the cluster default (empty name)
    (answer,) = wire_call(
        44, 1, inc_body(4, "1", ("min.insync.replicas", SET, "2")), tokens["admin"]
    ).responses
    assert answer.error_code is ErrorCode.none and answer.resource_name == "1"
    assert ConfigEntry.objects.get(resource_type="BROKER", resource_name="1").value == "2"
    asked = describe_body(4, "1", ["min.insync.replicas"])
    (result,) = wire_call(32, 4, asked, tokens["admin"]).results
    (entry,) = result.configs
    assert (entry.value, entry.config_source) == ("2", CONFIG_SOURCES["DYNAMIC_BROKER_CONFIG"])
    # BROKER_LOGGER by broker id
    (answer,) = wire_call(
        44, 1, inc_body(8, "0", ("kafka.controller", SET, "TRACE")), tokens["admin"]
    ).responses
    assert answer.error_code is ErrorCode.none and answer.resource_type == 8
    (result,) = wire_call(32, 4, describe_body(8, "0"), tokens["admin"]).results
    loggers = {c.name: (c.value, c.config_source) for c in result.configs}
    assert loggers["kafka.controller"] == ("TRACE", CONFIG_SOURCES["DYNAMIC_BROKER_LOGGER_CONFIG"])
    assert loggers["root"] == ("INFO", CONFIG_SOURCES["DEFAULT_CONFIG"])
    assert [as_rest(c) for c in result.configs] == rest_describe(
        api, tokens["admin"], "BROKER_LOGGER", "0"
    )["configs"]
    event = last_audit("IncrementalAlterConfigs")
    assert (event.principal, event.client_id) == ("User:admin", CLIENT_ID)


def test_alter_configs_refusals_match_rest(api: Any, tokens: dict[str, str], topic: str) -> None:
    SET = 0
    wire_body = inc_body(2, topic, ("retention.ms", SET, "1"))
    rest_body = {
        "resources": [
            {
                "resource_type": "TOPIC",
                "resource_name": topic,
                "configs": [{"name": "retention.ms", "config_operation": "SET", "value": "1"}],
            }
        ]
    }
    # alice has no ALTER_CONFIGS on the topic: refused per resource
    (answer,) = wire_call(44, 1, wire_body, tokens["alice"]).responses
    status, expected = rest(api, "incremental-alter-configs", rest_body, tokens["alice"])
    assert answer.error_code is ErrorCode.topic_authorization_failed
    assert (int(answer.error_code), answer.error_message) == (
        expected["responses"][0]["error_code"],
        expected["responses"][0]["error_message"],
    )
    event = last_audit("IncrementalAlterConfigs")
    assert (event.principal, event.outcome, event.error_code) == ("User:alice", "DENIED", 29)
    # a broker principal never writes through the public doors: the whole request is refused,
    # and the wire answers that error on every resource, as Kafka's getErrorResponse
    (answer,) = wire_call(44, 1, wire_body, tokens["broker"]).responses
    status, expected = rest(api, "incremental-alter-configs", rest_body, tokens["broker"])
    assert status != 200
    assert (int(answer.error_code), answer.error_message) == (
        expected["error_code"],
        expected["error_message"],
    )
    assert (answer.resource_type, answer.resource_name) == (2, topic)
    # an unknown operation id is the RPC's INVALID_REQUEST, nothing written
    (answer,) = wire_call(
        44, 1, inc_body(2, topic, ("retention.ms", 9, "1")), tokens["admin"]
    ).responses
    assert answer.error_code is ErrorCode.invalid_request
    assert not ConfigEntry.objects.filter(name="retention.ms").exists()


# --- ACLs --------------------------------------------------------------------------------------

RESOURCE_TOPIC, PATTERN_LITERAL, PATTERN_PREFIXED, PATTERN_ANY = 2, 3, 4, 1
OP_READ, OP_ANY, PERMISSION_ALLOW, PERMISSION_ANY, RESOURCE_ANY = 3, 1, 3, 1, 1


def creation(name: str, pattern: int = PATTERN_LITERAL) -> dict[str, Any]:
    return {
        "resource_type": RESOURCE_TOPIC,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": "User:bob",
        "host": "*",
        "operation": OP_READ,
        "permission_type": PERMISSION_ALLOW,
    }


ANY_FILTER = {
    "resource_type_filter": RESOURCE_ANY,
    "resource_name_filter": None,
    "pattern_type_filter": PATTERN_ANY,
    "principal_filter": "User:bob",
    "host_filter": None,
    "operation": OP_ANY,
    "permission_type": PERMISSION_ANY,
}


def test_create_describe_delete_acls_every_version(api: Any, tokens: dict[str, str]) -> None:
    for version, name in ((1, "a"), (2, "b"), (3, "c")):
        results = wire_call(30, version, {"creations": [creation(name)]}, tokens["admin"]).results
        assert [r.error_code for r in results] == [ErrorCode.none]
    wire_call(30, 3, {"creations": [creation("pre-", PATTERN_PREFIXED)]}, tokens["admin"])
    event = last_audit("CreateAcls")
    assert (event.principal, event.client_id, event.client_host) == (
        "User:admin",
        CLIENT_ID,
        CLIENT_HOST,
    )

    status, expected = rest(
        api,
        "describe-acls",
        {
            "resource_type": "ANY",
            "pattern_type": "ANY",
            "principal": "User:bob",
            "operation": "ANY",
            "permission_type": "ANY",
        },
        tokens["admin"],
    )
    assert status == 200 and len(expected["resources"]) == 4
    for version in (1, 2, 3):
        described = wire_call(29, version, ANY_FILTER, tokens["admin"])
        assert described.error_code is ErrorCode.none
        seen = [
            (
                r.resource_type,
                r.resource_name,
                r.pattern_type,
                [(a.operation, a.permission_type) for a in r.acls],
            )
            for r in described.resources
        ]
        assert seen == [
            (
                RESOURCE_TOPIC,
                r["resource_name"],
                PATTERN_PREFIXED if r["pattern_type"] == "PREFIXED" else PATTERN_LITERAL,
                [(OP_READ, PERMISSION_ALLOW)] * len(r["acls"]),
            )
            for r in expected["resources"]
        ]

    deleted = wire_call(
        31, 3, {"filters": [{**ANY_FILTER, "resource_name_filter": "a"}]}, tokens["admin"]
    )
    (result,) = deleted.filter_results
    assert result.error_code is ErrorCode.none
    assert [
        (m.resource_type, m.resource_name, m.pattern_type, m.operation)
        for m in result.matching_acls
    ] == [(RESOURCE_TOPIC, "a", PATTERN_LITERAL, OP_READ)]
    status, left = rest(
        api,
        "describe-acls",
        {
            "resource_type": "ANY",
            "pattern_type": "ANY",
            "operation": "ANY",
            "permission_type": "ANY",
        },
        tokens["admin"],
    )
    assert sorted(r["resource_name"] for r in left["resources"]) == ["b", "c", "pre-"]
    assert last_audit("DeleteAcls").principal == "User:admin"
    for version in (1, 2):
        (result,) = wire_call(
            31, version, {"filters": [ANY_FILTER]}, tokens["admin"]
        ).filter_results
        assert result.error_code is ErrorCode.none


def test_acl_refusals_match_rest(api: Any, tokens: dict[str, str]) -> None:
    # alice may not write ACLs: every creation carries the whole request's refusal
    results = wire_call(
        30, 3, {"creations": [creation("a"), creation("b")]}, tokens["alice"]
    ).results
    status, expected = rest(
        api,
        "create-acls",
        {"creations": [acl("TOPIC", "a", "READ", "User:bob")]},
        tokens["alice"],
    )
    assert status == 403
    assert [(int(r.error_code), r.error_message) for r in results] == [
        (expected["error_code"], expected["error_message"])
    ] * 2
    assert results[0].error_code is ErrorCode.cluster_authorization_failed
    assert last_audit("CreateAcls").principal == "User:alice"
    # nor describe them
    described = wire_call(29, 3, ANY_FILTER, tokens["alice"])
    assert described.error_code is ErrorCode.cluster_authorization_failed
    assert described.resources == ()
    # nor delete them
    (result,) = wire_call(31, 3, {"filters": [ANY_FILTER]}, tokens["alice"]).filter_results
    assert result.error_code is ErrorCode.cluster_authorization_failed
    # an unknown filter (UNKNOWN resource type) is the RPC's INVALID_REQUEST
    described = wire_call(29, 3, {**ANY_FILTER, "resource_type_filter": 0}, tokens["admin"])
    status, expected = rest(
        api,
        "describe-acls",
        {
            "resource_type": "UNKNOWN",
            "pattern_type": "ANY",
            "operation": "ANY",
            "permission_type": "ANY",
        },
        tokens["admin"],
    )
    assert (int(described.error_code), described.error_message) == (
        expected["error_code"],
        expected["error_message"],
    )
    # a creation with an invalid pattern is answered per item, as REST does
    bad = {**creation("x"), "resource_pattern_type": PATTERN_ANY}
    results = wire_call(30, 3, {"creations": [creation("ok"), bad]}, tokens["admin"]).results
    status, expected = rest(
        api,
        "create-acls",
        {
            "creations": [
                acl("TOPIC", "ok2", "READ", "User:bob"),
                {**acl("TOPIC", "x", "READ", "User:bob"), "pattern_type": "ANY"},
            ]
        },
        tokens["admin"],
    )
    assert [int(r.error_code) for r in results] == [r["error_code"] for r in expected["results"]]
    assert [r.error_message for r in results] == [r["error_message"] for r in expected["results"]]


# --- client quotas -----------------------------------------------------------------------------

EXACT, DEFAULT, ANY = 0, 1, 2


def test_alter_and_describe_client_quotas(api: Any, tokens: dict[str, str]) -> None:
    body = {
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "bob"}],
                "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
            },
            {
                "entity": [{"entity_type": "client-id", "entity_name": None}],
                "ops": [{"key": "request_percentage", "value": 50.0, "remove": False}],
            },
        ],
        "validate_only": False,
    }
    for version in (0, 1):
        entries = wire_call(49, version, body, tokens["admin"]).entries
        assert [e.error_code for e in entries] == [ErrorCode.none, ErrorCode.none]
    assert ClientQuota.objects.count() == 2
    event = last_audit("AlterClientQuotas")
    assert (event.principal, event.client_id) == ("User:admin", CLIENT_ID)

    components = [{"entity_type": "user", "match_type": ANY, "match": None}]
    status, expected = rest(
        api,
        "describe-client-quotas",
        {"components": [{"entity_type": "user", "match_type": "ANY"}], "strict": False},
        tokens["admin"],
    )
    assert status == 200 and expected["entries"]
    for version in (0, 1):
        described = wire_call(
            48, version, {"components": components, "strict": False}, tokens["admin"]
        )
        assert described.error_code is ErrorCode.none
        assert to_data(described)["entries"] == expected["entries"]
    exact = wire_call(
        48,
        1,
        {
            "components": [{"entity_type": "user", "match_type": EXACT, "match": "bob"}],
            "strict": True,
        },
        tokens["admin"],
    )
    assert [(v.key, v.value) for e in exact.entries for v in e.values] == [
        ("producer_byte_rate", 1024.0)
    ]
    # remove
    removal = {
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "bob"}],
                "ops": [{"key": "producer_byte_rate", "value": 0.0, "remove": True}],
            }
        ],
        "validate_only": False,
    }
    (entry,) = wire_call(49, 1, removal, tokens["admin"]).entries
    assert entry.error_code is ErrorCode.none and ClientQuota.objects.count() == 1


def test_client_quota_refusals_match_rest(api: Any, tokens: dict[str, str]) -> None:
    body = {
        "entries": [
            {
                "entity": [{"entity_type": "user", "entity_name": "bob"}],
                "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}],
            }
        ],
        "validate_only": False,
    }
    (entry,) = wire_call(49, 1, body, tokens["alice"]).entries
    status, expected = rest(api, "alter-client-quotas", body, tokens["alice"])
    assert status == 403
    assert (int(entry.error_code), entry.error_message) == (
        expected["error_code"],
        expected["error_message"],
    )
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("user", "bob")]
    assert not ClientQuota.objects.exists()
    assert last_audit("AlterClientQuotas").principal == "User:alice"
    described = wire_call(48, 1, {"components": [], "strict": False}, tokens["alice"])
    assert described.error_code is ErrorCode.cluster_authorization_failed
    assert described.entries is None
    # an unknown match type: INVALID_REQUEST, as Kafka
    bad = {"components": [{"entity_type": "user", "match_type": 7, "match": None}], "strict": False}
    assert wire_call(48, 1, bad, tokens["admin"]).error_code is ErrorCode.invalid_request


# --- delegation tokens -------------------------------------------------------------------------


def set_secret(settings: Any) -> None:
    """The node's delegation-token key (a setting, never a record), from now on in this test."""
    settings.CP_STATIC_BROKER_CONFIGS = with_token_secret_key(settings.CP_STATIC_BROKER_CONFIGS)


def user(name: str) -> dict[str, str]:
    return {"principal_type": "User", "principal_name": name}


CREATE_BODY = {
    "owner_principal_type": None,
    "owner_principal_name": None,
    "renewers": [user("admin")],
    "max_lifetime": -1,
}


def test_delegation_tokens_create_renew_expire_describe(
    api: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    set_secret(settings)
    created = wire_call(38, 3, CREATE_BODY, tokens["alice"])
    assert created.error_code is ErrorCode.none
    assert (created.principal_type, created.principal_name) == ("User", "alice")
    assert (created.token_requester_principal_type, created.token_requester_principal_name) == (
        "User",
        "alice",
    )
    assert created.hmac and created.token_id
    lifetime = created.expiry_timestamp - created.issue_timestamp
    assert lifetime.total_seconds() == 86_400
    event = last_audit("CreateDelegationToken")
    assert (event.principal, event.client_id, event.client_host) == (
        "User:alice",
        CLIENT_ID,
        CLIENT_HOST,
    )

    status, described_rest = rest(
        api, "describe-delegation-token", {"owners": None}, tokens["alice"]
    )
    assert status == 200, described_rest
    (seen,) = described_rest["tokens"]
    assert seen["token_id"] == created.token_id
    for version in (1, 2, 3):
        described = wire_call(41, version, {"owners": None}, tokens["alice"])
        assert described.error_code is ErrorCode.none
        (token,) = described.tokens
        assert (token.token_id, token.hmac) == (created.token_id, b"")
        assert token.expiry_timestamp == seen["expiry_timestamp"]
        assert [(r.principal_type, r.principal_name) for r in token.renewers] == [("User", "admin")]

    renewed = wire_call(39, 2, {"hmac": created.hmac, "renew_period": 3_600_000}, tokens["admin"])
    assert renewed.error_code is ErrorCode.none
    assert renewed.expiry_timestamp < created.expiry_timestamp
    assert last_audit("RenewDelegationToken").principal == "User:admin"
    # carol neither owns nor renews it: the RPC's answer, through either door
    carol = principal_create(name="carol")
    refused = wire_call(39, 1, {"hmac": created.hmac, "renew_period": -1}, carol)
    _, expected = rest(
        api,
        "renew-delegation-token",
        {"hmac": base64.b64encode(created.hmac).decode(), "renew_period_ms": -1},
        carol,
    )
    assert refused.error_code is not ErrorCode.none
    assert int(refused.error_code) == expected["error_code"]
    expired = wire_call(40, 2, {"hmac": created.hmac, "expiry_time_period": -1}, tokens["alice"])
    assert expired.error_code is ErrorCode.none
    assert wire_call(41, 3, {"owners": None}, tokens["alice"]).tokens == ()
    # a wrong HMAC is the RPC's DELEGATION_TOKEN_NOT_FOUND, as through REST
    missing = wire_call(40, 1, {"hmac": b"\x00" * 32, "expiry_time_period": -1}, tokens["alice"])
    _, expected = rest(
        api,
        "expire-delegation-token",
        {"hmac": base64.b64encode(b"\x00" * 32).decode(), "expiry_time_period_ms": -1},
        tokens["alice"],
    )
    assert int(missing.error_code) == expected["error_code"] != 0

    hmac_texts = (base64.b64encode(created.hmac).decode(), created.hmac.hex())
    logged = caplog.text + " ".join(str(e.resources) for e in AuditEvent.objects.all())
    assert not any(text in logged for text in hmac_texts)


def test_token_authenticated_principals_cannot_create_tokens(
    api: Any, tokens: dict[str, str], settings: Any
) -> None:
    set_secret(settings)
    for version in (1, 2, 3):
        refused = wire_call(38, version, CREATE_BODY, tokens["alice"], token_authenticated=True)
        assert refused.error_code is ErrorCode.delegation_token_request_not_allowed
        assert refused.hmac == b"" and refused.token_id == ""
    event = last_audit("CreateDelegationToken")
    assert (event.principal, event.error_code) == ("User:alice", 64)


def test_tokens_disabled_and_broker_refusals_match_rest(
    api: Any, tokens: dict[str, str], settings: Any
) -> None:
    # no secret key: DELEGATION_TOKEN_AUTH_DISABLED from every token RPC, as REST answers
    assert wire_call(38, 3, CREATE_BODY, tokens["alice"]).error_code == ErrorCode(61)
    assert wire_call(41, 3, {"owners": None}, tokens["alice"]).error_code == ErrorCode(61)
    set_secret(settings)
    # a broker principal never writes through the public doors
    refused = wire_call(38, 3, CREATE_BODY, tokens["broker"])
    status, expected = rest(
        api,
        "create-delegation-token",
        {"renewers": [user("admin")], "max_lifetime_ms": -1},
        tokens["broker"],
    )
    assert status != 200
    assert int(refused.error_code) == expected["error_code"] != 0
    assert refused.hmac == b""


# --- Envelope ----------------------------------------------------------------------------------


def inner_bytes(api_key: int, version: int, body: dict[str, Any], client_id: str) -> bytes:
    """An inner request as a forwarding broker sends it: request header, then the request."""
    request_class = load_request_schema(api_key, version)
    header_class: Any = request_class.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header_class)(
        buffer,
        header_class(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=7,
            client_id=client_id,
        ),
    )
    entity_writer(request_class)(buffer, from_data(request_class, body))
    return buffer.getvalue()


def envelope_body(
    inner: bytes, principal: bytes | None = None, address: bytes = bytes([10, 1, 2, 3])
) -> dict[str, Any]:
    return {
        "request_data": inner,
        "request_principal": encode_principal("User:alice") if principal is None else principal,
        "client_host_address": address,
    }


def inner_response(api_key: int, version: int, data: bytes) -> tuple[int, Any]:
    response_class = load_response_schema(api_key, version)
    header_class: Any = response_class.__header_schema__
    header, offset = entity_reader(header_class)(memoryview(data), 0)
    response, size = entity_reader(response_class)(memoryview(data), offset)
    assert offset + size == len(data)
    return header.correlation_id, response


def test_envelope_runs_the_inner_request_as_the_original_principal(
    api: Any, tokens: dict[str, str], topic: str
) -> None:
    grant(api, tokens, acl("TOPIC", topic, "ALTER_CONFIGS"))
    inner = inner_bytes(44, 1, inc_body(2, topic, ("retention.ms", 0, "60000")), "legacy-admin")
    answer = wire_call(58, 0, envelope_body(inner), tokens["broker"], client_id="broker-1")
    assert answer.error_code is ErrorCode.none
    correlation_id, response = inner_response(44, 1, answer.response_data)
    assert correlation_id == 7
    assert [r.error_code for r in response.responses] == [ErrorCode.none]
    assert ConfigEntry.objects.get(resource_name=topic, name="retention.ms").value == "60000"
    event = last_audit("IncrementalAlterConfigs")
    assert (event.principal, event.client_id, event.client_host) == (
        "User:alice",
        "legacy-admin",
        "10.1.2.3",
    )
    assert (event.forwarding_principal, event.forwarding_host) == ("User:broker-a", CLIENT_HOST)
    assert event.outcome == "SUCCESS" and event.first_offset is not None
    assert not AuditEvent.objects.filter(api="Envelope").exists()

    # without the ACL alice is refused inside the response, as the REST Envelope answers it
    inner = inner_bytes(44, 0, inc_body(2, "other", ("retention.ms", 0, "1")), "legacy-admin")
    answer = wire_call(58, 0, envelope_body(inner, address=bytes(15) + b"\x01"), tokens["broker"])
    _, response = inner_response(44, 0, answer.response_data)
    assert response.responses[0].error_code is ErrorCode.topic_authorization_failed
    assert last_audit("IncrementalAlterConfigs").client_host == "::1"


def test_envelope_carries_other_forwardable_apis(
    api: Any, tokens: dict[str, str], settings: Any
) -> None:
    # CreateAcls forwarded for the admin; a token-authenticated principal's CreateDelegationToken
    inner = inner_bytes(30, 3, {"creations": [creation("fwd")]}, "acl-tool")
    principal = encode_principal("User:admin")
    answer = wire_call(58, 0, envelope_body(inner, principal), tokens["broker"])
    _, response = inner_response(30, 3, answer.response_data)
    assert [r.error_code for r in response.results] == [ErrorCode.none]
    assert last_audit("CreateAcls").client_id == "acl-tool"
    set_secret(settings)
    inner = inner_bytes(38, 3, CREATE_BODY, "token-tool")
    principal = encode_principal("User:alice", token_authenticated=True)
    answer = wire_call(58, 0, envelope_body(inner, principal), tokens["broker"])
    _, response = inner_response(38, 3, answer.response_data)
    assert response.error_code is ErrorCode.delegation_token_request_not_allowed


def test_envelope_refusals(api: Any, tokens: dict[str, str], topic: str) -> None:
    inner = inner_bytes(44, 1, inc_body(2, topic, ("retention.ms", 0, "1")), "legacy-admin")
    # only brokers (CLUSTER_ACTION) send an Envelope: refused, audited as the Envelope
    answer = wire_call(58, 0, envelope_body(inner), tokens["alice"])
    assert answer.error_code is ErrorCode.cluster_authorization_failed
    assert answer.response_data is None
    event = last_audit("Envelope")
    assert (event.principal, event.outcome, event.error_code) == ("User:alice", "DENIED", 31)
    assert event.resources == [
        {"resource_type": "API", "resource_name": "IncrementalAlterConfigs", "error_code": 31}
    ]
    cases = [
        (envelope_body(inner, principal=b"\x00"), ErrorCode.principal_deserialization_failure),
        (
            envelope_body(inner, principal=b"\x00\x07junk"),
            ErrorCode.principal_deserialization_failure,
        ),
        (
            envelope_body(inner, principal=encode_principal("Group:x")),
            ErrorCode.principal_deserialization_failure,
        ),
        (envelope_body(inner, address=b"\x01\x02"), ErrorCode.invalid_request),
        (envelope_body(inner[:6]), ErrorCode.invalid_request),  # truncated inner request
        (
            envelope_body(inner_bytes(32, 4, describe_body(2, topic), "x")),
            ErrorCode.invalid_request,
        ),
    ]
    for body, code in cases:
        answer = wire_call(58, 0, body, tokens["broker"])
        assert (answer.error_code, answer.response_data) == (code, None), body
    assert not ConfigEntry.objects.filter(name="retention.ms").exists()
    assert AuditEvent.objects.filter(api="Envelope").count() == 1 + len(cases)


def test_an_inner_not_controller_is_the_envelopes_own_error() -> None:
    """The broker retries an Envelope answered NOT_CONTROLLER or REQUEST_TIMED_OUT: the inner
    request's whole-request error (on every item) becomes the Envelope's."""
    from kio.schema.incremental_alter_configs.v1 import response as inc

    def answered(*codes: ErrorCode) -> Any:
        return inc.IncrementalAlterConfigsResponse(
            throttle_time=datetime.timedelta(0),
            responses=tuple(
                inc.AlterConfigsResourceResponse(
                    error_code=code, error_message=None, resource_type=2, resource_name="t"
                )
                for code in codes
            ),
        )

    retried = wire.apis.controller.envelope._retried_by_the_sender
    assert retried(answered(ErrorCode.not_controller, ErrorCode.not_controller)) == 41
    assert retried(answered(ErrorCode.request_timed_out)) == 7
    assert retried(answered(ErrorCode.not_controller, ErrorCode.none)) is None
    assert retried(answered(ErrorCode.topic_authorization_failed)) is None
    # Two different retried codes are no whole-request error; no item, no error either.
    assert retried(answered(ErrorCode.not_controller, ErrorCode.request_timed_out)) is None
    assert retried(answered()) is None
    # Answered at its first item, whatever its size.
    assert retried(answered(ErrorCode.none, *[ErrorCode.not_controller] * 10_000)) is None


def test_house_error_codes_are_answered_unknown_server_error_however_deep() -> None:
    """A house error code Kafka does not define is UNKNOWN_SERVER_ERROR (-1) in the response
    entity, however deep; Kafka's own codes stay as they are."""
    from wire.apis.common import kafka_code, respond

    house = max(int(code) for code in ErrorCode) + 1000
    answer = {
        "error_code": 0,
        "error_message": None,
        "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]},
        ],
    }
    request = WireRequest(46, 0, 1, None, caller=None, advertised=ADVERTISED, listener="PLAINTEXT")  # type: ignore[arg-type]
    assert respond(request, {**answer, "error_code": house}).error_code is (
        ErrorCode.unknown_server_error
    )
    assert respond(request, {**answer, "error_code": 36}).error_code is ErrorCode(36)
    altered = WireRequest(45, 0, 1, None, caller=None, advertised=ADVERTISED, listener="PLAINTEXT")  # type: ignore[arg-type]
    deep = respond(
        altered,
        {
            "error_code": 0,
            "responses": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "error_code": house},
                        {"partition_index": 1, "error_code": 36},
                    ],
                }
            ],
        },
    )
    assert [p.error_code for p in deep.responses[0].partitions] == [
        ErrorCode.unknown_server_error,
        ErrorCode(36),
    ]
    assert [kafka_code(code) for code in (house, 36, 0, None)] == [-1, 36, 0, -1]
