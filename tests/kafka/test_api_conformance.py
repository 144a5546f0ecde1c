"""The conformance table (devtools.kafka_conformance): from Kafka's own message schemas in the
jars (the pinned release and the newest installed), every API a Kafka controller serves or a
broker forwards to its controller is either served here or answered as Kafka answers an API it
does not serve: absent from ApiVersions on both doors, and inside an Envelope UNSUPPORTED_VERSION
in the inner response. Never UNKNOWN_SERVER_ERROR, never a closed connection. The reference
page shows the table as the jars give it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.envelope.v0 import request as envelope_v0
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from devtools import kafka_conformance as conformance
from tests.kafka.conftest import need_kafka_jars
from tests.wire.conftest import RunningListener, start_listener
from tests.wire.rawclient import RawClient
from tests.wire.test_server import authenticate, served
from wire.apis.controller.envelope import encode_principal
from wire.apis.unsupported import answered_unsupported
from wire.convert import from_data
from wire.listeners import CLIENT, CONTROLLER

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def wire_listener(transactional_db: None) -> Iterator[RunningListener]:
    runner, running = start_listener()
    try:
        yield running
    finally:
        runner.stop()


@pytest.fixture
def releases() -> list[str]:
    need_kafka_jars()
    versions = conformance.table_versions()
    assert conformance.jars.pinned_version() in versions
    return versions


def test_the_reference_page_shows_the_table_the_jars_give(releases: list[str]) -> None:
    table = conformance.render(conformance.rows(releases), releases)
    page = conformance.PAGE.read_text()
    assert conformance.page_with(table, page) == page, (
        "docs/reference/kafka-protocol.md: the conformance table is out of date; "
        "python -m devtools.kafka_conformance --write"
    )


def test_the_forwardable_apis_are_kafkas(releases: list[str]) -> None:
    from controlplane.controller.api_keys import KAFKA_FORWARDABLE

    forwarded = {
        key: api.name
        for version in releases
        for key, api in conformance.message_specs(version).items()
        if api.forwardable
    }
    assert forwarded == KAFKA_FORWARDABLE


def newest_readable(api_key: int, kafka_versions: tuple[int, int]) -> int | None:
    """The newest version of the API both Kafka and kio know."""
    for version in range(kafka_versions[1], kafka_versions[0] - 1, -1):
        try:
            load_request_schema(api_key, version)
            load_response_schema(api_key, version)
        except Exception:
            continue
        return version
    return None


# Bodies for the APIs whose answers carry errors per item only (an empty request would answer
# no error at all): one item each.
BODIES: dict[int, dict[str, Any]] = {
    51: {"deletions": [{"name": "alice", "mechanism": 1}], "upsertions": []},
}


def inner_request(api_key: int, version: int) -> bytes:
    request_class = load_request_schema(api_key, version)
    header_class: Any = request_class.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header_class)(
        buffer,
        header_class(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=5,
            client_id="conformance",
        ),
    )
    entity_writer(request_class)(buffer, from_data(request_class, BODIES.get(api_key, {})))
    return buffer.getvalue()


def inner_answer(api_key: int, version: int, data: bytes) -> Any:
    response_class = load_response_schema(api_key, version)
    _header, offset = entity_reader(response_class.__header_schema__)(memoryview(data), 0)
    response, _ = entity_reader(response_class)(memoryview(data), offset)
    return response


def error_codes(entity: Any) -> set[int]:
    from wire.convert import to_data

    codes: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "error_code" and isinstance(item, int):
                    codes.add(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(to_data(entity))
    return codes


def test_every_controller_api_is_served_or_answered_as_kafka_answers(
    releases: list[str], wire_listener: RunningListener, tokens: dict[str, str]
) -> None:
    with RawClient(wire_listener.host, wire_listener.port) as client:
        client_door = served(client)
    with RawClient(wire_listener.host, wire_listener.controller_port) as broker:
        assert authenticate(broker, "broker-a", tokens["broker"]) == ErrorCode.none
        controller_door = served(broker)
        assert client_door == conformance.served_on(CLIENT)
        assert controller_door == conformance.served_on(CONTROLLER)
        checked_envelopes = 0
        for row in conformance.rows(releases):
            for release, (low, high) in row.kafka_versions.items():
                for door in (row.client_door, row.controller_door):
                    if door is not None:  # what is served, Kafka's release knows
                        assert low <= door[0] and door[1] <= max(high, door[1]), (row, release)
            if not row.served:
                assert row.api_key not in client_door and row.api_key not in controller_door
            if not row.forwardable:
                continue
            kafka_range = row.kafka_versions[max(row.kafka_versions, key=_release_key)]
            version = newest_readable(row.api_key, kafka_range)
            if version is None:
                continue  # kio cannot write it: the Envelope's own UNSUPPORTED_VERSION (unit)
            if row.served:
                door = row.controller_door or row.client_door
                assert door is not None
                version = min(version, door[1])
            answer = broker.request(
                envelope_v0.EnvelopeRequest(
                    request_data=inner_request(row.api_key, version),
                    request_principal=encode_principal("User:admin"),
                    client_host_address=bytes([10, 0, 0, 9]),
                )
            )
            assert answer.error_code != ErrorCode.unknown_server_error, row
            checked_envelopes += 1
            if row.served:
                if answer.error_code == ErrorCode.none:
                    inner = inner_answer(row.api_key, version, answer.response_data)
                    assert int(ErrorCode.unknown_server_error) not in error_codes(inner), row
                continue
            assert answer.error_code == ErrorCode.none, (row, answer)
            inner = inner_answer(row.api_key, version, answer.response_data)
            assert answered_unsupported(inner), (row, inner)
        assert checked_envelopes >= 15
        assert served(broker) == controller_door  # the connection is still open


def _release_key(version: str) -> tuple[int, int, int]:
    return conformance.jars.version_tuple(version)
