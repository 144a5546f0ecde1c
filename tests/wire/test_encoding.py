"""The listener's entity writer (wire.encoding) writes exactly the bytes kio's own writer
writes, for every request and response schema kio has, and reads back as the same entity."""

from __future__ import annotations

import datetime
import functools
import importlib
import io
import pkgutil
import uuid
from typing import Any

import kio.schema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.create_topics.v7.response import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsResponse,
)
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.serial import entity_writer as kio_entity_writer
from kio.serial.writers import write_unsigned_varlong
from kio.static.primitive import Records

from wire.encoding import encode, uvarint

# kio registers no strategy of its own for a batch's raw bytes (any bytes are some).
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


@functools.cache
def schemas() -> tuple[type, ...]:
    """Every request, response and header entity kio defines, by API and version."""
    found = []
    for module in pkgutil.walk_packages(kio.schema.__path__, "kio.schema."):
        name = module.name.rsplit(".", 1)[-1]
        if name not in ("request", "response", "header"):
            continue
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            if (
                isinstance(value, type)
                and value.__module__ == loaded.__name__
                and (hasattr(value, "__api_key__") or name == "header")
                and hasattr(value, "__flexible__")
                and hasattr(value, "__dataclass_fields__")
            ):
                found.append(value)
    return tuple(sorted(found, key=lambda c: (c.__module__, c.__name__)))


def kio_encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    kio_entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def test_every_schema_kio_has_is_found() -> None:
    found = schemas()
    assert len(found) > 500  # about 80 APIs, each in several versions, requests and responses
    names = {c.__name__ for c in found}
    assert {"CreateTopicsResponse", "MetadataResponse", "EnvelopeResponse"} <= names
    assert {"FetchRequest", "RequestHeader", "ResponseHeader"} <= names


def any_entity(examples: int) -> Any:
    """A test's decorators: `entity`, any entity of any schema kio has, `examples` of them."""

    def decorate(test: Any) -> Any:
        drawn = given(entity=st.sampled_from(schemas()).flatmap(st.from_type))(test)
        return settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )(drawn)

    return decorate


@any_entity(examples=1500)
def test_the_bytes_are_kios_for_any_entity_of_any_schema(entity: Any) -> None:
    schema = type(entity)
    try:
        expected = kio_encode(entity)
    except Exception as refused:  # a value kio cannot write (out of its type's range)
        with pytest.raises(type(refused)):
            encode(entity)
        return
    assert encode(entity) == expected
    try:
        _, size = entity_reader(schema)(memoryview(expected), 0)  # well-formed, whole
    except ValueError as unreadable:  # kio's reader takes no duration past its own range
        assert "timedelta" in str(unreadable)
        return
    assert size == len(expected)


def test_a_large_create_topics_answer_is_written_as_kio_writes_it() -> None:
    configs = tuple(
        CreatableTopicConfigs(
            name=f"config.{i}",
            value=None if i % 5 == 0 else "x" * i,
            read_only=i % 2 == 0,
            config_source=5,
            is_sensitive=i % 7 == 0,
        )
        for i in range(14)
    )
    answer = CreateTopicsResponse(
        throttle_time=datetime.timedelta(milliseconds=250),
        topics=tuple(
            CreatableTopicResult(
                name=f"bulk-{i:04d}-" + "é" * (i % 3),
                topic_id=uuid.UUID(int=i + 1),
                error_code=ErrorCode.none if i % 9 else ErrorCode.topic_already_exists,
                error_message=None if i % 9 else "exists",
                topic_config_error_code=ErrorCode.none,
                num_partitions=10,
                replication_factor=2,
                configs=configs,
            )
            for i in range(500)
        ),
    )
    written = encode(answer)
    assert written == kio_encode(answer)
    decoded, size = entity_reader(CreateTopicsResponse)(memoryview(written), 0)
    assert (decoded, size) == (answer, len(written))


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16_383, 16_384, 2**31 - 1, 2**35])
def test_an_unsigned_varint_is_kafkas(value: int) -> None:
    expected = io.BytesIO()

    write_unsigned_varlong(expected, value)
    assert uvarint(value) == expected.getvalue()


_BROKER_ID = st.integers(-(2**31), 2**31 - 1)
# Short lists, and now and then one whose length takes a two-byte varint.
_BROKER_IDS = st.lists(_BROKER_ID, max_size=5) | st.lists(_BROKER_ID, min_size=126, max_size=128)
_LISTINGS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.text(min_size=1, max_size=20),
            "partitions": st.lists(
                st.fixed_dictionaries(
                    {
                        "partition_index": st.integers(0, 2**31 - 1),
                        "replicas": _BROKER_IDS,
                        "adding_replicas": _BROKER_IDS,
                        "removing_replicas": _BROKER_IDS,
                    }
                ),
                max_size=6,
            ),
        }
    ),
    max_size=4,
)


@given(listing=_LISTINGS, throttle_ms=st.integers(0, 2**31 - 1))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_a_reassignment_listing_written_straight_is_kios_bytes(
    listing: list[dict[str, Any]], throttle_ms: int
) -> None:
    """The listing's own writer (a tool's polls encode it anew after each commit) writes the
    bytes of the response entity kio's writer writes, and reads back as the listing."""
    from kio.schema.list_partition_reassignments.v0.response import (
        ListPartitionReassignmentsResponse,
    )

    from wire.apis.clients.reassignments import encoded_listing
    from wire.convert import from_data

    entity = from_data(
        ListPartitionReassignmentsResponse,
        {"throttle_time": throttle_ms, "error_code": 0, "error_message": None, "topics": listing},
    )
    written = encoded_listing(throttle_ms, listing)
    assert written == kio_encode(entity)
    read, size = entity_reader(ListPartitionReassignmentsResponse)(memoryview(written), 0)
    assert size == len(written)
    assert [
        (
            t.name,
            [
                (
                    p.partition_index,
                    list(p.replicas),
                    list(p.adding_replicas),
                    list(p.removing_replicas),
                )
                for p in t.partitions
            ],
        )
        for t in read.topics
    ] == [
        (
            t["name"],
            [
                (p["partition_index"], p["replicas"], p["adding_replicas"], p["removing_replicas"])
                for p in t["partitions"]
            ],
        )
        for t in listing
    ]


_ERROR_CODES = st.sampled_from([0, 36, 37, 38, 39, 40, 44, 29, -1, 9999, 1 << 40])
_CONFIG_ENTRIES = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["cleanup.policy", "retention.ms", "é" * 70, ""]),
            "value": st.none() | st.text(max_size=8) | st.text(min_size=130, max_size=140),
            "read_only": st.booleans(),
            "is_sensitive": st.booleans(),
        },
        optional={
            "config_source": st.sampled_from(["DEFAULT_CONFIG", "DYNAMIC_TOPIC_CONFIG", "NOPE", 5])
        },
    ),
    max_size=5,
) | st.lists(  # now and then an array whose length takes a two-byte varint
    st.just({"name": "x", "value": "1", "read_only": False, "is_sensitive": False}),
    min_size=127,
    max_size=128,
)
_CREATED_TOPICS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.text(min_size=1, max_size=20),
            "error_code": _ERROR_CODES,
            "error_message": st.none() | st.text(max_size=30),
        },
        optional={
            "topic_id": st.none() | st.uuids().map(str),
            "num_partitions": st.integers(-(2**31), 2**31 - 1),
            "replication_factor": st.integers(-(2**15), 2**15 - 1),
            "configs": st.none() | _CONFIG_ENTRIES,
            "topic_config_error_code": st.sampled_from([0, 0, 41, -1, 32767]),
            "canary_partitions": st.lists(st.integers(0, 9), max_size=3),  # not in Kafka's
        },
    ),
    max_size=4,
)


@pytest.mark.parametrize("version", [5, 6, 7])
@given(topics=_CREATED_TOPICS, throttle_ms=st.integers(0, 2**31 - 1))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_a_creation_answer_written_straight_is_kios_bytes(
    version: int, topics: list[dict[str, Any]], throttle_ms: int
) -> None:
    """CreateTopics v5+'s own writer (a creation of 500 topics answers 7,000 config entries)
    writes the bytes kio's writer writes for the entity `respond` builds from the same answer,
    error codes and config sources Kafka does not define, missing fields and null configs
    included, and names the
    topics' error codes as the listener's error counts name them from the entity."""
    from kio.index import load_response_schema

    from wire import metrics
    from wire.apis.clients.topics import _created, encoded_created_topics
    from wire.convert import from_data

    schema = load_response_schema(19, version)
    translated = [_created(topic) for topic in topics]
    entity = from_data(schema, {"throttle_time": throttle_ms, "topics": translated})
    written = encoded_created_topics(version, throttle_ms, topics)
    assert written == kio_encode(entity)
    assert list(written.error_names) == metrics.error_names(entity)
    read, size = entity_reader(schema)(memoryview(written), 0)
    assert size == len(written)
    assert [t.name for t in read.topics] == [t["name"] for t in topics]
