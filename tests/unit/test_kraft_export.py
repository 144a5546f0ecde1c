"""`manage.py export_metadata_log DIR`: the database's metadata log as one Kafka segment, one
record per offset (our decoder reads it here; Kafka's in tests/kafka)."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from controlplane.controller.kraft import METADATA_PARTITION_DIR, decode_batches, decode_records
from controlplane.models import MetadataRecord
from controlplane.runtime.single_writer import projection_writes_allowed


def export(directory: Path, *args: str) -> tuple[Path, str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("export_metadata_log", str(directory), *args, stdout=out, stderr=err)
    (segment,) = (directory / METADATA_PARTITION_DIR).iterdir()
    return segment, out.getvalue(), err.getvalue()


def workload(api: Any, tokens: dict[str, str], register: Any) -> None:
    register(1, unfence=True)
    body = {"topics": [{"name": "orders", "num_partitions": 4, "replication_factor": 1}]}
    status, answer = api.post("/api/v1/create-topics", body, token=tokens["admin"])
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer


def test_the_export_has_every_offset_of_the_log_with_its_epoch_and_time(
    tmp_path: Path, api: Any, tokens: dict[str, str], register: Any
) -> None:
    workload(api, tokens, register)
    rows = list(
        MetadataRecord.objects.order_by("offset").values_list(
            "offset", "controller_epoch", "timestamp_ms", "record_type"
        )
    )
    segment, out, _ = export(tmp_path, "--max-batch-records", "2")
    assert segment.name == "00000000000000000000.log"
    assert f"{len(rows)} records" in out
    data = segment.read_bytes()
    batches = decode_batches(data)
    assert all(len(batch.records) <= 2 for batch in batches)
    served = {
        record.offset: (batch.partition_leader_epoch, record.timestamp_ms)
        for batch in batches
        for record in batch.records
    }
    assert served == {offset: (epoch, time) for offset, epoch, time, _ in rows}
    names = [record.name for _, record in decode_records(data)]
    assert names == [record_type for *_, record_type in rows]  # every one has its twin


@pytest.mark.django_db
def test_an_unknown_record_type_is_a_no_op_and_a_log_after_retention_starts_later(
    tmp_path: Path,
) -> None:
    def row(offset: int, record_type: str, data: dict[str, Any]) -> MetadataRecord:
        return MetadataRecord(
            offset=offset,
            record_type=record_type,
            controller_epoch=2,
            timestamp_ms=10,
            principal="User:admin",
            data=data,
        )

    topic_id = str(uuid.uuid4())
    with projection_writes_allowed():  # a log written by hand: a future type, a start after 0
        MetadataRecord.objects.bulk_create(
            [
                row(5, "TopicRecord", {"name": "t", "topic_id": topic_id}),
                row(6, "RecordOfTheFuture", {"x": 1}),
                row(7, "RemoveTopicRecord", {"topic_id": topic_id}),
            ]
        )
    segment, out, err = export(tmp_path, "--metadata-version", "21")
    assert segment.name == "00000000000000000005.log"
    assert "1 RecordOfTheFuture" in out
    assert "No snapshot ends at offset 5" in err
    assert [(o, r.name) for o, r in decode_records(segment.read_bytes())] == [
        (5, "TopicRecord"),
        (6, "NoOpRecord"),
        (7, "RemoveTopicRecord"),
    ]


@pytest.mark.django_db
def test_an_empty_log_is_said_plainly(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="empty"):
        call_command("export_metadata_log", str(tmp_path))
