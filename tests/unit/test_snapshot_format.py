"""The snapshot's bytes (controlplane.runtime.snapshot_format): any records come back as they
went in, whatever the chunk size; bytes damaged anywhere (a flipped byte, a cut) are refused,
never decoded into other records; equal records, equal checksums."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.image import MetadataImage
from controlplane.controller.records import (
    ClientQuotaRecord,
    ConfigRecord,
    Listener,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    TopicRecord,
)
from controlplane.runtime import snapshot_format as sf

TEXT = st.text(max_size=12)
LISTENERS = st.builds(Listener, TEXT, TEXT, st.integers(0, 65535), st.just("PLAINTEXT"))
BROKER_IDS = st.lists(st.integers(-1, 2**31), max_size=4).map(tuple)
# Runs of them are decoded at once (nine in ten records of a large snapshot).
PARTITIONS = st.builds(
    PartitionRecord,
    partition_id=st.integers(0, 2**31),
    topic_id=TEXT,
    replicas=BROKER_IDS,
    isr=BROKER_IDS,
    leader=st.integers(-2, 2**31),
    leader_epoch=st.integers(0, 2**62),
    partition_epoch=st.integers(0, 2**62),
    offline_replicas=BROKER_IDS,
    is_canary=st.booleans(),
    canary_isolated=st.booleans(),
)
RECORDS: st.SearchStrategy[Record | tuple[Record, ...]] = st.one_of(
    st.builds(TopicRecord, name=TEXT, topic_id=TEXT),
    PARTITIONS,
    st.lists(PARTITIONS, min_size=2, max_size=5).map(tuple),  # a run, flattened below
    st.builds(
        ConfigRecord,
        resource_type=st.sampled_from(["TOPIC", "BROKER"]),
        resource_name=TEXT,
        name=TEXT,
        value=st.none() | TEXT,
    ),
    st.builds(
        ClientQuotaRecord,
        entity=st.tuples(st.tuples(st.sampled_from(["user", "client-id"]), st.none() | TEXT)),
        key=TEXT,
        value=st.floats(allow_nan=False, allow_infinity=False),
        remove=st.booleans(),
    ),
    st.builds(
        RegisterBrokerRecord,
        broker_id=st.integers(0, 10**6),
        incarnation_id=TEXT,
        broker_epoch=st.integers(0, 2**62),
        listeners=st.lists(LISTENERS, max_size=3).map(tuple),
        rack=st.none() | TEXT,
        pod=st.sampled_from(["broker", "canary-broker"]),
        log_dirs=st.lists(TEXT, max_size=3).map(tuple),
        fenced=st.booleans(),
        controlled_shutdown_offset=st.integers(-1, 2**40),
    ),
)


def flattened(drawn: list[Record | tuple[Record, ...]]) -> list[Record]:
    return [r for item in drawn for r in (item if isinstance(item, tuple) else (item,))]


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(RECORDS, max_size=40).map(flattened),
    end_offset=st.integers(0, 2**62),
    chunk=st.integers(1, 300),
)
def test_records_come_back_as_they_went_in_whatever_the_chunk_size(records, end_offset, chunk):
    encoded = sf.records_encode(
        cluster_id="c1", end_offset=end_offset, records=records, chunk_bytes=chunk
    )
    assert all(len(c) == chunk for c in encoded.chunks[:-1]) and len(encoded.chunks[-1]) <= chunk
    assert encoded.record_count == len(records)
    decoded = sf.snapshot_decode(encoded.chunks, checksum=encoded.checksum)
    assert decoded.records == records
    assert (decoded.cluster_id, decoded.end_offset) == ("c1", end_offset)
    # The same records encode to the same bytes: the checksum names the content.
    again = sf.records_encode(
        cluster_id="c1", end_offset=end_offset, records=records, chunk_bytes=chunk
    )
    assert again.data == encoded.data and again.checksum == encoded.checksum


@settings(max_examples=200, deadline=None)
@given(records=st.lists(RECORDS, min_size=1, max_size=20).map(flattened), data=st.data())
def test_damaged_bytes_are_refused_never_read_as_other_records(records, data):
    encoded = sf.records_encode(cluster_id="c1", end_offset=7, records=records)
    whole = bytearray(encoded.data)
    how = data.draw(st.sampled_from(["flip", "cut", "extra"]))
    if how == "flip":
        at = data.draw(st.integers(0, len(whole) - 1))
        whole[at] ^= data.draw(st.integers(1, 255))
    elif how == "cut":
        del whole[data.draw(st.integers(0, len(whole) - 1)) :]
    else:
        whole += data.draw(st.binary(min_size=1, max_size=20))
    try:
        decoded = sf.snapshot_decode(bytes(whole), checksum=encoded.checksum)
    except sf.SnapshotDamaged:
        return
    assert decoded.records == records  # a change that changed nothing (zstd's padding)


def test_a_wrong_checksum_is_refused():
    encoded = sf.records_encode(cluster_id="c1", end_offset=3, records=[TopicRecord("a", "b")])
    with pytest.raises(sf.SnapshotDamaged, match="checksum"):
        sf.snapshot_decode(encoded.chunks, checksum="0" * 64)
    with pytest.raises(sf.SnapshotDamaged):
        sf.snapshot_verify(encoded.chunks, checksum="0" * 64)
    sf.snapshot_verify(encoded.chunks, checksum=encoded.checksum)


def test_not_a_snapshot_is_refused():
    with pytest.raises(sf.SnapshotDamaged):
        sf.snapshot_decode(b"not zstd at all", checksum="")
    with pytest.raises(sf.SnapshotDamaged):
        sf.snapshot_decode([], checksum="")


def test_an_image_and_its_snapshot_share_a_checksum():
    image = MetadataImage(cluster_id="c1", last_offset=41)
    encoded = sf.snapshot_encode(image)
    assert encoded.end_offset == 42
    assert sf.image_checksum(image) == encoded.checksum
    other = MetadataImage(cluster_id="c1", last_offset=42)
    assert sf.image_checksum(other) != encoded.checksum  # the offset is part of what it names


@pytest.mark.parametrize(
    "records",
    [
        [TopicRecord("a", "id-a"), PartitionRecord(1, "id-a", (1,), (1,), 1)],  # 0 is missing
        [TopicRecord("a", "id-a"), TopicRecord("a", "id-b")],  # one name, two topics
        [PartitionRecord(0, "id-x", (1,), (1,), 1)],  # of no topic
    ],
)
def test_records_that_make_no_image_are_refused_whole(records):
    """Intact bytes (a snapshot no image wrote) whose records do not replay: refused as damaged,
    never a part of an image."""
    encoded = sf.records_encode(cluster_id="c1", end_offset=9, records=records)
    decoded = sf.snapshot_decode(encoded.chunks, checksum=encoded.checksum)
    assert decoded.records == records
    with pytest.raises(sf.SnapshotDamaged, match="do not replay"):
        decoded.image()
