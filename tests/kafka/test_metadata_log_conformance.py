"""Kafka's own decoder reads the metadata log this controller writes (issue 35, point 1).

`DumpLogSegments --cluster-metadata-decoder` (kafka-dump-log.sh) from the pinned
jars reads a segment of every record type we map, every batch's CRC valid, every record decoded
(none unknown, no error) into the same type, version and fields our decoder reads; then the same
for the log of a controller with a real workload, exported by `manage.py export_metadata_log`.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.kraft import (
    METADATA_PARTITION_DIR,
    BrokerDirectories,
    DecodedRecord,
    KafkaLogEncoder,
    LogEntry,
    control_record,
    decode_batches,
    decode_records,
    encode_batch,
    segment_file_name,
)
from controlplane.controller.kraft.codec import Array, Field, Struct
from controlplane.controller.kraft.schemas import CONTROL_RECORDS, METADATA_RECORDS
from controlplane.controller.kraft.snapshot import checkpoint_file_name, kafka_snapshot
from controlplane.controller.kraft.twins import TWINNED_RECORD_TYPES
from controlplane.controller.mirror_records import MirrorMakerConfigRecord
from controlplane.controller.quorum_records import (
    KRaftVersionRecord,
    Voter,
    VoterEndpoint,
    VotersRecord,
)
from controlplane.controller.records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    Listener,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    Record,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)
from controlplane.controller.scram.formatter import b64
from controlplane.controller.scram_records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BATCH_LINE = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*")
RECORD_LINE = re.compile(r"^\| offset: (\d+) .*?(?: payload: | (\w+):? )(\{.*\})$")
# A control record whose payload the release's tool does not print (4.0's DumpLogSegments shows
# a LeaderChange by its type alone): its type id, checked against ours.
CONTROL_TYPE_LINE = re.compile(r"^\| offset: (\d+) .* controlType: \w+\((\d+)\)$")
CONTROL_NAMES = {
    "LeaderChangeMessage": "LeaderChange",
    "SnapshotHeaderRecord": "SnapshotHeader",
    "SnapshotFooterRecord": "SnapshotFooter",
    "KRaftVersionRecord": "KRaftVersion",
    "VotersRecord": "KRaftVoters",
}


def every_record_type() -> list[Record]:
    """A log with each house record type that has a Kafka twin, and one that has none."""
    topic, token, acl = (str(uuid.uuid4()) for _ in range(3))
    dirs = (str(uuid.uuid4()), str(uuid.uuid4()))
    listeners = (
        Listener("PLAINTEXT", "b1.local", 9092, "PLAINTEXT"),
        Listener("SECURE", "b1.local", 9093, "SASL_SSL"),
    )
    return [
        FeatureLevelRecord("metadata.version", 25),
        FeatureLevelRecord("kraft.version", 0),
        RegisterBrokerRecord(1, str(uuid.uuid4()), 2, listeners, "rack-a", "broker", dirs),
        BrokerRegistrationChangeRecord(1, 2, fenced=-1),
        BrokerRegistrationChangeRecord(1, 2, offline_log_dirs=(dirs[1],)),
        BrokerRegistrationChangeRecord(1, 2, in_controlled_shutdown=1),
        TopicRecord("orders", topic),
        PartitionRecord(0, topic, (1,), (1,), 1, offline_replicas=(1,), is_canary=True),
        PartitionChangeRecord(0, topic, isr=(1,), leader=1),
        PartitionChangeRecord(0, topic, replicas=(1,), canary_isolated=False),
        PartitionChangeRecord(0, topic, directories=(dirs[0],)),  # AssignReplicasToDirs
        PartitionRecord(1, topic, (1,), (1,), 1, directories=(dirs[1],)),
        ConfigRecord("TOPIC", "orders", "retention.ms", "1000"),
        ConfigRecord("BROKER", "", "log.retention.ms", None),
        ClientQuotaRecord((("client-id", None), ("user", "alice")), "producer_byte_rate", 1e6),
        DelegationTokenRecord(token, "User:alice", "User:alice", ("User:bob",), 1, 3, 2),
        RemoveDelegationTokenRecord(token),
        ProducerIdsRecord(1, 2, 1000),
        AccessControlEntryRecord(
            acl, "TOPIC", "orders", "PREFIXED", "User:alice", "*", "READ", "ALLOW"
        ),
        RemoveAccessControlEntryRecord(acl),
        UserScramCredentialRecord(
            "alice", "SCRAM-SHA-512", b64(b"salt"), b64(b"s" * 64), b64(b"k" * 64), 8192
        ),
        RemoveUserScramCredentialRecord("alice", "SCRAM-SHA-512"),
        MirrorMakerConfigRecord("clusters = a, b"),
        RemoveTopicRecord(topic),
        UnregisterBrokerRecord(1, 2),
        # KIP-853: the quorum's records, Kafka's control records in batches of their own.
        KRaftVersionRecord(1),
        VotersRecord((Voter(3000, str(uuid.uuid4()), (VoterEndpoint("CONTROLLER", "c", 9093),)),)),
        FeatureLevelRecord("group.version", 1),
    ]


def control_records_batches(base: int) -> bytes:
    voter = {"VoterId": 3000, "VoterDirectoryId": uuid.uuid4()}
    endpoint = {"Name": "CONTROLLER", "Host": "localhost", "Port": 9093}
    versions = {"MinSupportedVersion": 0, "MaxSupportedVersion": 1}
    records = [
        control_record(2, {"LeaderId": 3000, "Voters": [{"VoterId": 3000}], "GrantingVoters": []}),
        control_record(5, {"KRaftVersion": 1}),
        control_record(
            6, {"Voters": [voter | {"Endpoints": [endpoint], "KRaftVersionFeature": versions}]}
        ),
        control_record(3, {"LastContainedLogTimestamp": 5}),
        control_record(4, {}),
    ]
    return b"".join(
        encode_batch(base + i, [record], epoch=7, timestamp_ms=4000)
        for i, record in enumerate(records)
    )


DUMP_LOG = ["tool", "DumpLogSegments", "--cluster-metadata-decoder", "--files"]


def dump(segment: Path) -> str:
    """What kafka-dump-log.sh --cluster-metadata-decoder prints for the segment."""
    result = subprocess.run(
        [sys.executable, "-m", "stock_kafka", *DUMP_LOG, str(segment)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    for failure in ("Exception", "Error at", "isvalid: false", "nknown", "invalid bytes"):
        assert failure not in result.stdout + result.stderr, result.stdout + result.stderr
    return result.stdout


def kafka_json(fields: tuple[Field, ...], version: int, values: dict[str, Any]) -> dict[str, Any]:
    """Our decoded fields as Kafka's generated JSON converters write them: camelCase names,
    Uuids in base64, tagged fields only when they are not their default."""
    out = {}
    for field in fields:
        if version < field.since:
            continue
        value = values[field.name]
        if field.tag is not None and value == field.default_value():
            continue
        out[field.name[0].lower() + field.name[1:]] = _json_value(field.type, version, value)
    return out


def _json_value(field_type: Any, version: int, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(field_type, Array):
        return [_json_value(field_type.element, version, item) for item in value]
    if isinstance(field_type, Struct):
        return kafka_json(field_type.fields, version, value)
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def kafka_type_name(name: str) -> str:
    """Kafka's MetadataRecordType name: FeatureLevelRecord -> FEATURE_LEVEL_RECORD."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def assert_kafka_reads_what_we_read(data: bytes, output: str) -> list[DecodedRecord]:
    ours = dict(decode_records(data))
    batches = decode_batches(data)
    kafka_batches = [BATCH_LINE.match(line) for line in output.splitlines()]
    assert [(int(m[1]), int(m[2]), int(m[3])) for m in kafka_batches if m] == [
        (b.base_offset, b.last_offset, len(b.records)) for b in batches
    ]
    assert output.count("isvalid: true") == len(batches)
    read: dict[int, tuple[Any, Any]] = {}
    type_only: dict[int, int] = {}
    for line in output.splitlines():
        match = RECORD_LINE.match(line)
        if line.startswith("| offset:"):
            if match is None and (control := CONTROL_TYPE_LINE.match(line)):
                type_only[int(control[1])] = int(control[2])
                continue
            assert match, line
            read[int(match[1])] = (match[2], json.loads(match[3]))
    assert sorted([*read, *type_only]) == sorted(ours)
    for offset, record in ours.items():
        if offset in type_only:
            assert record.is_control and type_only[offset] == record.api_key, (offset, record)
            continue
        control_name, payload = read[offset]
        if record.is_control:
            spec = CONTROL_RECORDS[record.api_key]
            assert control_name == CONTROL_NAMES[record.name]
            assert payload == kafka_json(spec.fields, 0, record.fields)
            continue
        spec = METADATA_RECORDS[record.api_key]
        assert payload["type"] == kafka_type_name(record.name)
        assert payload["version"] == record.version
        assert payload["data"] == kafka_json(spec.fields, record.version, record.fields)
    return list(ours.values())


def test_kafka_reads_every_record_type_we_write(kafka_jars: None, tmp_path: Path) -> None:
    records = every_record_type()
    log = [LogEntry(offset, 3, 1000 + offset // 4, r) for offset, r in enumerate(records)]
    encoder = KafkaLogEncoder(directories=BrokerDirectories())
    data = b"".join(batch.data for batch in encoder.batches(log))
    data += control_records_batches(len(records))
    segment = tmp_path / METADATA_PARTITION_DIR / segment_file_name(0)
    segment.parent.mkdir()
    segment.write_bytes(data)
    decoded = assert_kafka_reads_what_we_read(data, dump(segment))
    names = {record.name for record in decoded}
    assert {type(r).TYPE for r in records} - {"MirrorMakerConfigRecord"} == TWINNED_RECORD_TYPES
    assert names >= TWINNED_RECORD_TYPES | {"NoOpRecord"} | set(CONTROL_NAMES)
    by_offset = dict(enumerate(decoded))
    assert by_offset[4].fields["LogDirs"] == [uuid.UUID(records[2].log_dirs[0])]  # type: ignore[attr-defined]
    assert by_offset[7].fields["Directories"] == [uuid.UUID(int=1)]  # two dirs: UNASSIGNED


@pytest.mark.django_db(transaction=True)
def test_kafka_reads_the_exported_log_of_a_real_workload(
    kafka_jars: None, tmp_path: Path, api: Any, tokens: dict[str, str], register: Any
) -> None:
    register(1, unfence=True)
    register(2, unfence=True, log_dirs=[str(uuid.uuid4()), str(uuid.uuid4())])
    admin = tokens["admin"]
    topics = {"topics": [{"name": "orders", "num_partitions": 3, "replication_factor": 2}]}
    status, answer = api.post("/api/v1/create-topics", topics, token=admin)
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer
    binding = {
        "resource_type": "TOPIC",
        "resource_name": "orders",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    status, answer = api.post("/api/v1/create-acls", {"creations": [binding]}, token=admin)
    assert status == 200, answer

    call_command("export_metadata_log", str(tmp_path))
    (segment,) = (tmp_path / METADATA_PARTITION_DIR).iterdir()
    assert segment.name == segment_file_name(0)
    data = segment.read_bytes()
    decoded = assert_kafka_reads_what_we_read(data, dump(segment))
    names = [record.name for record in decoded]
    assert names.count("RegisterBrokerRecord") == 2
    assert names.count("PartitionRecord") == 3
    assert {"TopicRecord", "AccessControlEntryRecord", "BrokerRegistrationChangeRecord"} <= set(
        names
    )


def test_kafka_reads_a_snapshot_we_serve(kafka_jars: None, tmp_path: Path) -> None:
    """The checkpoint FetchSnapshot serves (SnapshotHeader, the image's records, SnapshotFooter)
    is what DumpLogSegments reads from a `.checkpoint` file."""
    records = [
        r
        for r in every_record_type()
        if not isinstance(r, RemoveTopicRecord | UnregisterBrokerRecord)
        and not type(r).TYPE.startswith("Remove")
    ]
    image = MetadataImage(cluster_id="c")
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    image.apply(delta)
    data = kafka_snapshot(
        image.snapshot_records(), epoch=3, last_contained_timestamp_ms=1_700_000_000_000
    )
    checkpoint = tmp_path / METADATA_PARTITION_DIR / checkpoint_file_name(image.last_offset + 1, 3)
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(data)
    decoded = assert_kafka_reads_what_we_read(data, dump(checkpoint))
    names = [record.name for record in decoded]
    assert names[0] == "SnapshotHeaderRecord" and names[-1] == "SnapshotFooterRecord"
    # KIP-853: the quorum's records ride in the header's control batch, before the image's.
    assert names[1:3] == ["KRaftVersionRecord", "VotersRecord"]
    assert decode_batches(data)[0].is_control and len(decode_batches(data)[0].records) == 3
    assert names[3] == "FeatureLevelRecord" and "PartitionRecord" in names
