"""Record batches, magic 2 (controlplane.controller.kraft.batches): Kafka's layout and CRC-32C,
round trips, and refusal of anything damaged with MalformedRecords alone."""

from __future__ import annotations

import contextlib
import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.kraft import batches, frames
from controlplane.controller.kraft.batches import MalformedRecords, decode_batches, encode_batch
from controlplane.controller.kraft.codec import write_varint
from controlplane.controller.kraft.frames import KafkaRecord
from controlplane.controller.kraft.log import decode_records

METADATA_RECORDS = st.builds(
    lambda name, level: frames.metadata_record(12, 0, {"Name": name, "FeatureLevel": level}),
    st.text(max_size=30),
    st.integers(0, 2**15 - 1),
)
CONTROL_RECORDS = st.builds(
    lambda leader: frames.control_record(
        2, {"Version": 0, "LeaderId": leader, "Voters": [], "GrantingVoters": []}
    ),
    st.integers(-1, 2**31 - 1),
)
BATCH_ARGS = st.tuples(
    st.integers(0, 2**62),  # base offset
    st.lists(METADATA_RECORDS, min_size=1, max_size=20) | st.lists(CONTROL_RECORDS, min_size=1),
    st.integers(0, 2**31 - 1),  # epoch
    st.integers(0, 2**50),  # timestamp
)


def build(args: tuple[int, list[KafkaRecord], int, int]) -> bytes:
    base, records, epoch, timestamp = args
    return encode_batch(base, records, epoch=epoch, timestamp_ms=timestamp)


@settings(max_examples=200, deadline=None)
@given(st.lists(BATCH_ARGS, min_size=1, max_size=4))
def test_batches_round_trip(batch_args: list[tuple[int, list[KafkaRecord], int, int]]) -> None:
    data = b"".join(build(args) for args in batch_args)
    decoded = decode_batches(data)
    assert len(decoded) == len(batch_args)
    for batch, (base, records, epoch, timestamp) in zip(decoded, batch_args, strict=True):
        assert (batch.base_offset, batch.last_offset) == (base, base + len(records) - 1)
        assert batch.partition_leader_epoch == epoch
        assert batch.base_timestamp_ms == batch.max_timestamp_ms == timestamp
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
        assert batch.is_control == records[0].is_control
        assert not batch.is_transactional
        assert [(r.offset, r.timestamp_ms) for r in batch.records] == [
            (base + i, timestamp) for i in range(len(records))
        ]
        assert [(r.key, r.value, r.headers) for r in batch.records] == [
            (record.key, record.value, ()) for record in records
        ]
    assert sum(batch.size_bytes for batch in decoded) == len(data)


def test_the_layout_is_kafkas() -> None:
    record = frames.metadata_record(20, 0, {})  # NoOpRecord: 1, 20, 0, no tags
    data = encode_batch(7, [record], epoch=3, timestamp_ms=1000)
    base, length, epoch, magic, crc = struct.unpack_from(">qiibI", data)
    assert (base, length, epoch, magic) == (7, len(data) - 12, 3, 2)
    assert crc == crc32c.crc32c(data[21:])  # CRC-32C from the attributes to the end
    header = struct.unpack_from(">hiqqqhii", data, 21)
    assert header == (0, 0, 1000, 1000, -1, -1, -1, 1)  # attributes 0: not transactional
    # length 10 (zigzag 20), attributes, ts delta 0, offset delta 0, null key (zigzag -1 = 1),
    # value length 4 (zigzag 8) and the frame, no headers
    assert data[61:] == bytes([20, 0, 0, 0, 1, 8, 1, 20, 0, 0, 0])
    assert batches.BATCH_OVERHEAD == 61


def test_a_control_batch_sets_the_control_bit_alone() -> None:
    record = frames.control_record(4, {"Version": 0})
    data = encode_batch(0, [record], epoch=1, timestamp_ms=5)
    assert struct.unpack_from(">h", data, 21)[0] == 0x20
    (batch,) = decode_batches(data)
    assert batch.is_control and batch.records[0].key == bytes([0, 0, 0, 4])


def test_control_and_metadata_records_never_share_a_batch() -> None:
    with pytest.raises(ValueError, match="separate"):
        encode_batch(
            0,
            [frames.metadata_record(20, 0, {}), frames.control_record(4, {"Version": 0})],
            epoch=1,
            timestamp_ms=1,
        )
    with pytest.raises(ValueError, match="one record"):
        encode_batch(0, [], epoch=1, timestamp_ms=1)


def valid_batch() -> bytes:
    records = [frames.metadata_record(12, 0, {"Name": "metadata.version", "FeatureLevel": 25})]
    return encode_batch(0, records * 3, epoch=2, timestamp_ms=99)


@settings(max_examples=400)
@given(st.data())
def test_any_flipped_bit_the_crc_covers_is_refused(data: st.DataObject) -> None:
    batch = bytearray(valid_batch())
    position = data.draw(st.integers(17, len(batch) - 1))  # the CRC and what it covers
    batch[position] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(MalformedRecords):
        decode_batches(bytes(batch))


@settings(max_examples=400)
@given(st.data())
def test_a_cut_batch_is_refused(data: st.DataObject) -> None:
    batch = valid_batch()
    with pytest.raises(MalformedRecords):
        decode_batches(batch[: data.draw(st.integers(1, len(batch) - 1))])


@settings(max_examples=2000)
@given(st.binary(max_size=300))
def test_random_bytes_never_crash_the_batch_decoder(data: bytes) -> None:
    with contextlib.suppress(MalformedRecords):
        decode_batches(data)


@settings(max_examples=1000)
@given(st.binary(min_size=1, max_size=120), st.integers(0, 4), st.sampled_from([0, 0x20]))
def test_random_records_under_a_valid_crc_never_crash_the_decoders(
    body: bytes, count: int, attributes: int
) -> None:
    """A corrupt body with a correct CRC (a buggy writer's) is refused, never a crash: the
    batch decoder's and the record decoders' (metadata frames, control keys and values)."""
    header = struct.pack(">hiqqqhii", attributes, count - 1, 0, 0, -1, -1, -1, count)
    prefix = struct.pack(">qiibI", 0, 49 + len(body), 0, 2, crc32c.crc32c(header + body))
    with contextlib.suppress(MalformedRecords):
        list(decode_records(prefix + header + body))


def test_compressed_and_other_magic_batches_are_refused() -> None:
    batch = bytearray(valid_batch())
    batch[16] = 1  # magic 1
    with pytest.raises(MalformedRecords, match="magic"):
        decode_batches(bytes(batch))
    batch = bytearray(valid_batch())
    batch[22] |= 0x04  # zstd
    batch[17:21] = struct.pack(">I", crc32c.crc32c(bytes(batch[21:])))
    with pytest.raises(MalformedRecords, match="compressed"):
        decode_batches(bytes(batch))


@given(st.integers(-(2**31), 2**31 - 1))
def test_a_records_framing_writes_varints_as_kafka_does(value: int) -> None:
    reference = bytearray()
    write_varint(reference, value)
    assert batches._varint(value) == bytes(reference)


def test_a_batch_of_ten_thousand_records_and_long_values_round_trips() -> None:
    """Offset deltas and lengths past one and two varint bytes (10,000 records, values of
    100 bytes to 20 kB): each record's framing reads back."""
    values = [b"x" * size for size in (100, 200, 16_000, 20_000)]
    records = [
        KafkaRecord("FeatureLevelRecord", 12, 0, values[i % len(values)]) for i in range(10_000)
    ]
    (batch,) = decode_batches(encode_batch(7, records, epoch=3, timestamp_ms=11))
    assert [(r.offset, r.key, r.value) for r in batch.records] == [
        (7 + i, None, record.value) for i, record in enumerate(records)
    ]
