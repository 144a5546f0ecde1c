"""Features on the wire (KIP-584): ApiVersions tells the supported and finalized levels on both
doors, UpdateFeatures runs as its REST route runs, directly and forwarded in an Envelope; an API
a Kafka broker forwards that this controller does not serve is answered UNSUPPORTED_VERSION in
the inner response."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.api_versions.v4 import request as api_versions_v4
from kio.schema.errors import ErrorCode

import wire.apis.clients.features
import wire.apis.controller.envelope
from audit.models import AuditEvent
from controlplane.models import FinalizedFeature, MetadataRecord
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_admin_apis import envelope_body, inner_bytes, inner_response, wire_call
from tests.wire.test_server import authenticate
from wire.apis.controller.envelope import encode_principal
from wire.features import forget

assert wire.apis.clients.features and wire.apis.controller.envelope  # registered handlers
pytestmark = pytest.mark.django_db(transaction=True)
KAFKA_4_4 = [
    {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 33},
    {"name": "kraft.version", "min_supported_version": 0, "max_supported_version": 1},
    {"name": "group.version", "min_supported_version": 0, "max_supported_version": 1},
    {"name": "transaction.version", "min_supported_version": 0, "max_supported_version": 2},
    {"name": "share.version", "min_supported_version": 0, "max_supported_version": 2},
]


def features_of(client: RawClient, version: int = 4) -> tuple[dict, dict, int]:
    forget()
    module = api_versions_v4 if version == 4 else api_versions_v3
    answer = client.request(
        module.ApiVersionsRequest(client_software_name="raw", client_software_version="1")
    )
    assert answer.error_code == ErrorCode.none
    supported = {
        f.name: (int(f.min_version), int(f.max_version)) for f in answer.supported_features
    }
    finalized = {f.name: int(f.max_version_level) for f in answer.finalized_features}
    return supported, finalized, int(answer.finalized_features_epoch)


def update_body(*updates: tuple[str, int, int], validate_only: bool = False) -> dict[str, Any]:
    return {
        "timeout": 60000,
        "feature_updates": [
            {"feature": name, "max_version_level": level, "upgrade_type": kind}
            for name, level, kind in updates
        ],
        "validate_only": validate_only,
    }


def test_api_versions_tells_the_features_on_both_doors(
    wire_listener: RunningListener, register: Any, tokens: dict[str, str]
) -> None:
    register(1, features=KAFKA_4_4)
    with RawClient(wire_listener.host, wire_listener.port) as client:
        supported, finalized, epoch = features_of(client)
        assert supported["metadata.version"] == (7, 33)
        assert supported["eligible.leader.replicas.version"] == (0, 0)
        assert finalized == {"metadata.version": 25, "group.version": 1, "transaction.version": 2}
        assert epoch == MetadataRecord.objects.count() - 1
        v3_supported, _, _ = features_of(client, version=3)
        assert set(v3_supported) == {"metadata.version"}  # v3 lists no feature whose min is 0
    with RawClient(wire_listener.host, wire_listener.controller_port) as client:
        assert authenticate(client, "broker-a", tokens["broker"]) == ErrorCode.none
        assert features_of(client)[1]["metadata.version"] == 25


def test_update_features_on_the_wire_every_version(register: Any, tokens: dict[str, str]) -> None:
    register(1, features=KAFKA_4_4)
    answer = wire_call(
        57, 1, update_body(("metadata.version", 33, 1), validate_only=True), tokens["admin"]
    )
    assert answer.error_code == ErrorCode.none and [r.feature for r in answer.results] == [
        "metadata.version"
    ]
    assert FinalizedFeature.objects.get(name="metadata.version").level == 25
    answer = wire_call(57, 2, update_body(("metadata.version", 33, 1)), tokens["admin"])
    assert answer.error_code == ErrorCode.none and not hasattr(answer, "results")
    assert FinalizedFeature.objects.get(name="metadata.version").level == 33
    # v0: AllowDowngrade is a safe downgrade; 32 and 33 changed metadata: refused on every item
    body = {
        "timeout": 60000,
        "feature_updates": [
            {"feature": "metadata.version", "max_version_level": 31, "allow_downgrade": True}
        ],
    }
    answer = wire_call(57, 0, body, tokens["admin"])
    assert answer.error_code == ErrorCode.invalid_update_version
    assert [r.error_code for r in answer.results] == [ErrorCode.invalid_update_version]
    answer = wire_call(57, 2, update_body(("group.version", 1, 1)), tokens["alice"])
    assert answer.error_code == ErrorCode.cluster_authorization_failed


def test_kafka_features_through_a_broker_runs_in_an_envelope(
    register: Any, tokens: dict[str, str]
) -> None:
    register(1, features=KAFKA_4_4)
    inner = inner_bytes(57, 1, update_body(("share.version", 2, 1)), "kafka-features")
    answer = wire_call(
        58, 0, envelope_body(inner, encode_principal("User:admin")), tokens["broker"]
    )
    assert answer.error_code == ErrorCode.none
    _, response = inner_response(57, 1, answer.response_data)
    assert response.error_code == ErrorCode.none
    assert FinalizedFeature.objects.get(name="share.version").level == 2
    event = AuditEvent.objects.filter(api="UpdateFeatures").get()
    assert (event.principal, event.client_id) == ("User:admin", "kafka-features")


@pytest.mark.parametrize(
    ("api_key", "version", "body"),
    [
        (46, 0, {"timeout": 30000, "topics": None}),  # ListPartitionReassignments
        (
            80,
            0,
            {
                "cluster_id": "x",
                "timeout": 1000,
                "voter_id": 1,
                "voter_directory_id": "00000000-0000-0000-0000-000000000001",
                "listeners": [],
            },
        ),
    ],
)
def test_a_forwarded_api_not_served_is_unsupported_inside_the_envelope(
    tokens: dict[str, str], api_key: int, version: int, body: dict[str, Any]
) -> None:
    from wire.apis.base import WIRE_APIS

    if api_key in WIRE_APIS:
        pytest.skip(f"apiKey {api_key} is served now")
    inner = inner_bytes(api_key, version, body, "admin-tool")
    answer = wire_call(
        58, 0, envelope_body(inner, encode_principal("User:admin")), tokens["broker"]
    )
    assert answer.error_code == ErrorCode.none
    _, response = inner_response(api_key, version, answer.response_data)
    assert response.error_code == ErrorCode.unsupported_version
