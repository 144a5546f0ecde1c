"""Kafka's flexible message encoding (controlplane.controller.kraft.codec, schemas, frames):
every record type at every version comes back as it went in; the bytes are Kafka's (checked
by hand against Kafka's rules for a few); anything malformed is refused with MalformedRecords
and nothing else."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.kraft import codec, frames, schemas
from controlplane.controller.kraft.codec import (
    Array,
    Field,
    MalformedRecords,
    Primitive,
    Reader,
    Struct,
)

RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def values_of(field_type: Primitive | Struct | Array, version: int) -> st.SearchStrategy[Any]:
    if isinstance(field_type, Array):
        return st.lists(values_of(field_type.element, version), max_size=3)
    if isinstance(field_type, Struct):
        return fields_of(field_type.fields, version)
    name = field_type.name
    if name in RANGES:
        return st.integers(*RANGES[name])
    return {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "string": st.text(max_size=8),
        "bytes": st.binary(max_size=80),
        "uuid": st.uuids(),
    }[name]


def fields_of(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Values for every field the struct has at `version` (null where it may be)."""
    strategies = {}
    for field in fields:
        if version < field.since:
            continue
        values = values_of(field.type, version)
        strategies[field.name] = st.none() | values if field.nullable(version) else values
    return st.fixed_dictionaries(strategies)


SPEC_VERSIONS = [
    (spec, version)
    for spec in schemas.METADATA_RECORDS.values()
    for version in range(spec.min_version, spec.max_version + 1)
]


def spec_id(case: tuple[schemas.MessageSpec, int]) -> str:
    return f"{case[0].name}-v{case[1]}"


@pytest.mark.parametrize("case", SPEC_VERSIONS, ids=spec_id)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_metadata_record_at_every_version_round_trips(
    case: tuple[schemas.MessageSpec, int], data: st.DataObject
) -> None:
    spec, version = case
    values = data.draw(fields_of(spec.fields, version))
    record = frames.metadata_record(spec.key, version, values)
    decoded = frames.decode_metadata_value(record.value)
    assert (decoded.name, decoded.api_key, decoded.version) == (spec.name, spec.key, version)
    assert decoded.fields == values


@pytest.mark.parametrize("spec", list(schemas.CONTROL_RECORDS.values()), ids=lambda s: s.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_control_record_round_trips(spec: schemas.MessageSpec, data: st.DataObject) -> None:
    values = data.draw(fields_of(spec.fields, 0))
    record = frames.control_record(spec.key, values)
    assert record.key == bytes([0, 0, 0, spec.key])  # key version 0, then the type
    decoded = frames.decode_control(record.key, record.value)
    assert (decoded.name, decoded.is_control, decoded.fields) == (spec.name, True, values)


def test_the_api_keys_are_kafkas() -> None:
    by_name = {spec.name: key for key, spec in schemas.METADATA_RECORDS.items()}
    assert by_name == {
        "RegisterBrokerRecord": 0,
        "UnregisterBrokerRecord": 1,
        "TopicRecord": 2,
        "PartitionRecord": 3,
        "ConfigRecord": 4,
        "PartitionChangeRecord": 5,
        "RemoveTopicRecord": 9,
        "DelegationTokenRecord": 10,
        "UserScramCredentialRecord": 11,
        "FeatureLevelRecord": 12,
        "ClientQuotaRecord": 14,
        "ProducerIdsRecord": 15,
        "BrokerRegistrationChangeRecord": 17,
        "AccessControlEntryRecord": 18,
        "RemoveAccessControlEntryRecord": 19,
        "NoOpRecord": 20,
        "RemoveUserScramCredentialRecord": 22,
        "BeginTransactionRecord": 23,
        "EndTransactionRecord": 24,
        "AbortTransactionRecord": 25,
        "RemoveDelegationTokenRecord": 26,
        "RegisterControllerRecord": 27,
    }


def test_a_record_is_framed_as_kafka_frames_it() -> None:
    topic_id = uuid.UUID("00000000-0000-0001-0000-000000000002")
    record = frames.metadata_record(2, 0, {"Name": "ab", "TopicId": topic_id})
    # frame version 1, apiKey 2, version 0; compact string "ab" (length + 1); 16 bytes; no tags
    assert record.value == bytes([1, 2, 0, 3]) + b"ab" + topic_id.bytes + bytes([0])


def test_tagged_fields_are_written_by_tag_and_only_when_not_default() -> None:
    topic_id = uuid.UUID(int=7)
    plain = frames.metadata_record(5, 2, {"PartitionId": 1, "TopicId": topic_id})
    assert plain.value == bytes([1, 5, 2]) + bytes([0, 0, 0, 1]) + topic_id.bytes + bytes([0])
    changed = frames.metadata_record(
        5, 2, {"PartitionId": 1, "TopicId": topic_id, "Leader": 3, "Isr": [3]}
    )
    tags = changed.value[3 + 4 + 16 :]
    # two tags: Isr (tag 0: compact array [3]) before Leader (tag 1: int32 3)
    assert tags == bytes([2, 0, 5, 2, 0, 0, 0, 3, 1, 4, 0, 0, 0, 3])


def test_unknown_tags_are_skipped_and_known_ones_read() -> None:
    record = frames.metadata_record(20, 0, {})
    with_tags = record.value[:-1] + bytes([2, 9, 2, 0xAA, 0xBB, 12, 0])
    assert frames.decode_metadata_value(with_tags).fields == {}


def test_a_field_a_version_does_not_have_is_refused_unless_default() -> None:
    fields = {"BrokerId": 1, "BrokerEpoch": 2, "LogDirs": [uuid.uuid4()]}
    with pytest.raises(ValueError, match="LogDirs"):
        frames.metadata_record(17, 1, fields)
    frames.metadata_record(17, 1, {**fields, "LogDirs": []})  # the default: nothing to say


def test_unknown_field_names_and_nulls_where_kafka_has_none_are_refused() -> None:
    with pytest.raises(ValueError, match="Nmae"):
        frames.metadata_record(2, 0, {"Nmae": "x"})
    with pytest.raises(ValueError, match=r"TopicRecord\.Name"):
        frames.metadata_record(2, 0, {"Name": None, "TopicId": uuid.uuid4()})
    with pytest.raises(ValueError, match="longer than"):
        frames.metadata_record(2, 0, {"Name": "x" * 40_000, "TopicId": uuid.uuid4()})
    with pytest.raises(ValueError, match="int16"):
        frames.metadata_record(12, 0, {"Name": "x", "FeatureLevel": 2**15})


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02")],
)
def test_unsigned_varints(value: int, encoded: bytes) -> None:
    out = bytearray()
    codec.write_uvarint(out, value)
    assert bytes(out) == encoded
    assert Reader(encoded).uvarint() == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_zigzag_varints_round_trip(value: int) -> None:
    out = bytearray()
    codec.write_varint(out, value)
    assert Reader(bytes(out)).varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_zigzag_varlongs_round_trip(value: int) -> None:
    out = bytearray()
    codec.write_varlong(out, value)
    assert Reader(bytes(out)).varlong() == value


def test_zigzag_is_kafkas() -> None:
    out = bytearray()
    for value in (0, -1, 1, -2):
        codec.write_varint(out, value)
    assert bytes(out) == bytes([0, 1, 2, 3])


@pytest.mark.parametrize(
    "data",
    [
        b"",  # nothing
        b"\x00\x02\x00",  # frame version 0
        b"\x01\x63\x00",  # apiKey 99
        b"\x01\x02\x05",  # TopicRecord v5
        b"\x01\x02\x00\x05ab",  # a string cut short
        b"\x01\x14\x00\x00\x00",  # a byte after the NoOpRecord
        b"\x01\x14\x00\xff\xff\xff\xff\xff\xff",  # a varint of 6 bytes
        b"\x01\x14\x00\x01\x00\x05\x00",  # a tag claiming 5 bytes of 1
        b"\x01\x02\x00\x00" + bytes(17),  # a null non-nullable string
    ],
)
def test_malformed_values_are_refused(data: bytes) -> None:
    with pytest.raises(MalformedRecords):
        frames.decode_metadata_value(data)


@settings(max_examples=2000, deadline=None)  # a loaded machine: no per-example deadline
@given(st.binary(max_size=200))
def test_random_bytes_never_crash_the_record_decoder(data: bytes) -> None:
    with contextlib.suppress(MalformedRecords):
        frames.decode_metadata_value(data)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(sorted(schemas.METADATA_RECORDS)), st.binary(max_size=120))
def test_random_bodies_of_every_record_type_never_crash_the_decoder(
    api_key: int, body: bytes
) -> None:
    spec = schemas.METADATA_RECORDS[api_key]
    with contextlib.suppress(MalformedRecords):
        frames.decode_metadata_value(bytes([1, api_key, spec.max_version]) + body)


@settings(max_examples=300)
@given(st.binary(min_size=0, max_size=6), st.binary(max_size=80))
def test_random_control_records_never_crash_the_decoder(key: bytes, value: bytes) -> None:
    with contextlib.suppress(MalformedRecords):
        frames.decode_control(key, value)
