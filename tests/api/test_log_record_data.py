"""The log's record data and the writes' stored answers are stored as json on PostgreSQL (the
text as written) and still filter as any JSONField: by a key's value, a nested key, a key's
presence."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from controlplane.models import AppliedRequest, MetadataRecord
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db


def a_topic_and_a_fenced_broker() -> None:
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    for broker in (1, 2):
        epoch = runtime.handle(
            ControllerEvent("BrokerRegistration", registration_body(broker, cluster_id))
        ).response["broker_epoch"]
        beat = {"broker_id": broker, "broker_epoch": epoch, "current_metadata_offset": 10**9}
        runtime.handle(ControllerEvent("BrokerHeartbeat", beat))
    topics = [{"name": "kept", "num_partitions": 2, "replication_factor": 2}]
    context = RequestContext(principal="User:admin", request_id="create-kept")
    answer = runtime.handle(ControllerEvent("CreateTopics", {"topics": topics}, context))
    assert answer.response["topics"][0]["error_code"] == 0, answer.response
    runtime.handle(ControllerEvent("UnregisterBroker", {"broker_id": 2}))


def test_the_data_filters_by_a_key_a_nested_key_and_a_keys_presence() -> None:
    a_topic_and_a_fenced_broker()
    everything = list(
        MetadataRecord.objects.order_by("offset").values_list("offset", "record_type", "data")
    )
    assert all(isinstance(data, dict) for _, _, data in everything)  # decoded, whatever the type

    def offsets(predicate, record_type: str = "") -> list[int]:  # type: ignore[no-untyped-def]
        return [
            offset
            for offset, kind, data in everything
            if record_type in ("", kind) and predicate(data)
        ]

    topic = MetadataRecord.objects.get(record_type="TopicRecord", data__name="kept")
    assert topic.data["name"] == "kept"
    by_partition = MetadataRecord.objects.filter(
        record_type="PartitionRecord", data__partition_id=1
    ).values_list("offset", flat=True)
    assert list(by_partition) == offsets(lambda d: d["partition_id"] == 1, "PartitionRecord")
    assert len(by_partition) == 1
    with_leader_epoch = MetadataRecord.objects.filter(data__has_key="leader_epoch")
    assert sorted(with_leader_epoch.values_list("offset", flat=True)) == offsets(
        lambda d: "leader_epoch" in d
    )
    first_replica = MetadataRecord.objects.filter(data__replicas__0=1).values_list(
        "offset", flat=True
    )
    assert sorted(first_replica) == offsets(lambda d: (d.get("replicas") or [None])[0] == 1)
    assert first_replica


def test_postgresql_keeps_the_data_as_the_text_written() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the column's type is PostgreSQL's (make test runs it there)")
    a_topic_and_a_fenced_broker()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_name = 'cp_metadata_record' AND column_name = 'data'"
        )
        assert cursor.fetchone() == ("json",)
        cursor.execute(
            "SELECT data FROM cp_metadata_record WHERE record_type = 'TopicRecord' LIMIT 1"
        )
        (text,) = cursor.fetchone()
    assert isinstance(text, str)  # read as text, as jsonb was: the readers decode it
    assert json.loads(text)["name"] == "kept"


def test_a_stored_answer_reads_back_whole_and_filters_by_its_keys() -> None:
    a_topic_and_a_fenced_broker()
    stored = AppliedRequest.objects.get(principal="User:admin", request_id="create-kept")
    assert stored.api == "CreateTopics"
    assert isinstance(stored.response, dict) and isinstance(stored.notes, dict)
    assert [t["name"] for t in stored.response["topics"]] == ["kept"]
    assert stored.response["topics"][0]["num_partitions"] == 2
    by_name = AppliedRequest.objects.filter(response__topics__0__name="kept")
    assert list(by_name.values_list("request_id", flat=True)) == ["create-kept"]
    assert not AppliedRequest.objects.filter(response__topics__0__name="other").exists()
    assert list(by_name.values_list("response__topics__0__error_code", flat=True)) == [0]
    # A retry of the same request id is answered from what was stored, not applied again.
    retried = get_runtime().handle(
        ControllerEvent(
            "CreateTopics",
            {"topics": [{"name": "kept", "num_partitions": 2, "replication_factor": 2}]},
            RequestContext(principal="User:admin", request_id="create-kept"),
        )
    )
    assert retried.response["topics"] == stored.response["topics"]
    assert MetadataRecord.objects.filter(record_type="TopicRecord").count() == 1


def test_postgresql_keeps_the_stored_answers_as_text_compressed_with_lz4() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the column's type is PostgreSQL's (make test runs it there)")
    a_topic_and_a_fenced_broker()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_name = 'cp_applied_request' AND column_name IN ('response', 'notes')"
            " ORDER BY column_name"
        )
        assert cursor.fetchall() == [("notes", "json"), ("response", "json")]
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        (lz4,) = cursor.fetchone()
        cursor.execute(
            "SELECT attcompression FROM pg_attribute"
            " WHERE attrelid = 'cp_applied_request'::regclass AND attname = 'response'"
        )
        assert cursor.fetchone() == ("l" if lz4 else "\0",)
        cursor.execute("SELECT response FROM cp_applied_request WHERE request_id = 'create-kept'")
        (text,) = cursor.fetchone()
    assert isinstance(text, str)
    assert json.loads(text)["topics"][0]["name"] == "kept"
