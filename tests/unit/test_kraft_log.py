"""The house log as Kafka's log (controlplane.controller.kraft.log): one record per offset, the
same offsets, batches per commit (one epoch and timestamp), the metadata.version the log sets,
whole batches within a fetch's bytes, and back."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.kraft import (
    BrokerDirectories,
    KafkaLogEncoder,
    LogEntry,
    decode_batches,
    decode_records,
    kafka_batch,
    records_within,
    segment_file_name,
)
from controlplane.controller.mirror_records import MirrorMakerConfigRecord
from controlplane.controller.records import (
    ConfigRecord,
    FeatureLevelRecord,
    Listener,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    TopicRecord,
)

TOPIC_ID = str(uuid.uuid4())
DIR = str(uuid.uuid4())


def broker(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    listener = Listener("PLAINTEXT", "h", 9092, "PLAINTEXT")
    return RegisterBrokerRecord(broker_id, str(uuid.uuid4()), epoch, (listener,), None, "b", (DIR,))


def entries(records: list[Record], *, epochs: list[int], times: list[int]) -> list[LogEntry]:
    return [
        LogEntry(offset, epoch, time, record)
        for offset, (record, epoch, time) in enumerate(zip(records, epochs, times, strict=True))
    ]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2)), min_size=1, max_size=40),
    st.integers(1, 7),
)
def test_every_offset_is_served_once_in_batches_of_one_epoch_and_timestamp(
    commits: list[tuple[int, int]], max_records: int
) -> None:
    log = [
        LogEntry(offset, epoch, 1000 + time, TopicRecord(f"t{offset}", TOPIC_ID))
        for offset, (epoch, time) in enumerate(commits)
    ]
    encoder = KafkaLogEncoder(max_batch_records=max_records)
    batches = list(encoder.batches(log))
    data = b"".join(batch.data for batch in batches)
    decoded = decode_batches(data)
    assert [r.offset for b in decoded for r in b.records] == list(range(len(log)))
    for batch, encoded in zip(decoded, batches, strict=True):
        assert (batch.base_offset, batch.last_offset) == (encoded.base_offset, encoded.last_offset)
        assert len(batch.records) <= max_records
        members = log[batch.base_offset : batch.last_offset + 1]
        assert {(e.epoch, e.timestamp_ms) for e in members} == {
            (batch.partition_leader_epoch, batch.base_timestamp_ms)
        }
    # a batch ends only where it must: a new commit or a full batch
    for before, after in itertools.pairwise(decoded):
        last, first = log[before.last_offset], log[after.base_offset]
        full = len(before.records) == max_records
        assert full or (last.epoch, last.timestamp_ms) != (first.epoch, first.timestamp_ms)
    names = [record.name for _, record in decode_records(data)]
    assert names == ["TopicRecord"] * len(log)


def test_house_records_without_a_twin_keep_their_offset_as_no_ops() -> None:
    log = entries(
        [TopicRecord("a", TOPIC_ID), MirrorMakerConfigRecord("x"), TopicRecord("b", TOPIC_ID)],
        epochs=[1, 1, 1],
        times=[5, 5, 5],
    )
    data = b"".join(b.data for b in KafkaLogEncoder().batches(log))
    assert [(o, r.name) for o, r in decode_records(data)] == [
        (0, "TopicRecord"),
        (1, "NoOpRecord"),
        (2, "TopicRecord"),
    ]


def test_the_log_carries_registrations_and_its_metadata_version_forward() -> None:
    encoder = KafkaLogEncoder(21)
    first = entries(
        [broker(1, 0), PartitionRecord(0, TOPIC_ID, (1,), (1,), 1)], epochs=[1, 1], times=[1, 1]
    )
    later = [
        LogEntry(2, 1, 2, FeatureLevelRecord("metadata.version", 25)),
        LogEntry(3, 1, 2, PartitionRecord(1, TOPIC_ID, (1,), (1,), 1)),
    ]
    data = b"".join(b.data for b in encoder.batches(first))
    data += b"".join(b.data for b in encoder.batches(later))  # a later call goes on
    records = [record for _, record in decode_records(data)]
    assert [(r.name, r.version) for r in records] == [
        ("RegisterBrokerRecord", 3),
        ("PartitionRecord", 1),  # 3.9-IV0: directories, no ELR
        ("FeatureLevelRecord", 0),
        ("PartitionRecord", 2),  # 4.0-IV3 from the FeatureLevelRecord on
    ]
    assert records[1].fields["Directories"] == records[3].fields["Directories"] == [uuid.UUID(DIR)]
    with pytest.raises(ValueError, match="offset 7 where 4 was next"):
        list(encoder.batches([LogEntry(7, 1, 2, TopicRecord("t", TOPIC_ID))]))


def test_kafka_batch_writes_one_batch_and_follows_the_registrations() -> None:
    dirs = BrokerDirectories()
    data = kafka_batch(
        [(10, broker(2, 9)), (11, PartitionRecord(0, TOPIC_ID, (2,), (2,), 2))], 4, 77, 25, dirs
    )
    (batch,) = decode_batches(data)
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (10, 11, 4)
    assert dirs.log_dirs(2) == (DIR,)
    with pytest.raises(ValueError, match="does not follow"):
        kafka_batch([(1, TopicRecord("a", TOPIC_ID)), (3, TopicRecord("b", TOPIC_ID))], 1, 1)


def test_a_fetch_answer_holds_whole_batches_within_its_bytes_and_one_at_least() -> None:
    log = entries(
        [TopicRecord(f"t{i}", TOPIC_ID) for i in range(6)], epochs=[1] * 6, times=[1, 1, 2, 2, 3, 3]
    )
    batches = list(KafkaLogEncoder().batches(log))
    size = len(batches[0].data)
    assert records_within(batches, 1) == batches[0].data
    assert records_within(batches, 2 * size + 1) == batches[0].data + batches[1].data
    assert records_within(batches, 10**6) == b"".join(b.data for b in batches)
    assert records_within([], 100) == b""


def test_segments_are_named_by_base_offset() -> None:
    assert segment_file_name(0) == "00000000000000000000.log"
    assert segment_file_name(1234) == "00000000000000001234.log"


def test_one_commit_is_one_batch_as_kafkas_controller_appends_it() -> None:
    """A controlled shutdown moving 1,500 leaders is one commit: one batch, so a broker's
    MetadataLoader publishes it as one image (cut at 1,000 records it took two, the second a
    second later under stock brokers)."""
    commit = [
        LogEntry(offset, 4, 77, TopicRecord(f"t{offset}", TOPIC_ID)) for offset in range(1500)
    ]
    (batch,) = KafkaLogEncoder().batches(commit)
    assert (batch.base_offset, batch.last_offset) == (0, 1499)


def test_batches_stay_under_the_largest_a_brokers_metadata_log_takes() -> None:
    """KafkaRaftClient.MAX_BATCH_SIZE_BYTES (8 MiB): a commit of large records is cut into
    batches each below it."""
    big = "x" * 2000
    commit = [
        LogEntry(offset, 4, 77, ConfigRecord("TOPIC", f"t{offset}", "k", big))
        for offset in range(8000)
    ]
    batches = list(KafkaLogEncoder().batches(commit))
    assert len(batches) > 1
    assert all(len(b.data) < 8 * 1024 * 1024 for b in batches)
    assert [b.base_offset for b in batches[1:]] == [b.last_offset + 1 for b in batches[:-1]]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(1, 5))
def test_a_commit_encodes_as_its_log_entries_do(commits: list[int], max_records: int) -> None:
    """`commit_batches` (one commit's (offset, record) pairs at one epoch and time) writes the
    bytes `batches` writes for the same records as LogEntries, commit after commit."""
    by_entries = KafkaLogEncoder(max_batch_records=max_records)
    by_commit = KafkaLogEncoder(max_batch_records=max_records)
    offset = 0
    for index, size in enumerate(commits):
        records = [
            (offset + i, broker(i, 0) if i % 2 else TopicRecord(f"t{offset + i}", TOPIC_ID))
            for i in range(size)
        ]
        offset += size
        log = [LogEntry(o, index + 1, 500 + index, r) for o, r in records]
        expected = list(by_entries.batches(log))
        assert list(by_commit.commit_batches(records, index + 1, 500 + index)) == expected
    with pytest.raises(ValueError, match="was next"):
        list(by_commit.commit_batches([(offset + 1, TopicRecord("gap", TOPIC_ID))], 9, 9))
