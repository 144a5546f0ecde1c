"""The controller keeps each commit's records in Kafka's batch format (cp_kafka_batch); the Kafka
protocol listener serves those bytes, and encodes from the rows any range kept without them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import override_settings

from controlplane.controller.config_schema import ConfigView
from controlplane.controller.kraft import (
    DEFAULT_METADATA_VERSION,
    EncodedBatch,
    KafkaLogEncoder,
    decode_records,
    kafka_uuid,
)
from controlplane.models import Cluster, KafkaBatch
from controlplane.runtime import snapshots
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.kraft_log import KraftLog, log_entries
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.replay import metadata_verify
from controlplane.runtime.single_writer import projection_writes_allowed
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db

# Retention keeps only the latest snapshot and cuts the log at it.
KEEP_ONE = ConfigView(
    lambda _type, _name, key: "0" if key == "metadata.max.retention.bytes" else None, {}
)
DIRS = {broker: str(uuid.uuid4()) for broker in (1, 2, 3)}


def write(runtime: ControllerRuntime, api: str, payload: dict[str, Any]) -> dict[str, Any]:
    context = RequestContext(principal="User:admin", request_id=str(uuid.uuid4()))
    response: dict[str, Any] = runtime.handle(ControllerEvent(api, payload, context)).response
    return response


def log_end() -> int:
    return Cluster.objects.get(pk=1).last_offset


def a_working_cluster(runtime: ControllerRuntime) -> None:
    """Registrations (one log dir each: new replicas are placed in it), heartbeats that unfence,
    topics, a configuration change, a controlled shutdown: commits of many record types."""
    cluster_id = cluster_get_or_create().cluster_id
    epochs = {}
    for broker, directory in DIRS.items():
        body = registration_body(broker, cluster_id, log_dirs=[directory])
        epochs[broker] = write(runtime, "BrokerRegistration", body)["broker_epoch"]
        beat = {
            "broker_id": broker,
            "broker_epoch": epochs[broker],
            "current_metadata_offset": 10**9,
        }
        write(runtime, "BrokerHeartbeat", beat)
    topics = [{"name": f"kept-{n}", "num_partitions": 6, "replication_factor": 2} for n in range(3)]
    created = write(runtime, "CreateTopics", {"topics": topics})
    assert all(t["error_code"] == 0 for t in created["topics"]), created
    configs = {
        "resource_type": "TOPIC",
        "resource_name": "kept-0",
        "configs": [{"name": "retention.ms", "config_operation": "SET", "value": "60000"}],
    }
    changed = write(runtime, "IncrementalAlterConfigs", {"resources": [configs]})
    assert changed["responses"][0]["error_code"] == 0, changed
    shutdown = {
        "broker_id": 1,
        "broker_epoch": epochs[1],
        "current_metadata_offset": 10**9,
        "want_shut_down": True,
    }
    write(runtime, "BrokerHeartbeat", shutdown)


def stored() -> list[EncodedBatch]:
    rows = KafkaBatch.objects.order_by("base_offset").values_list(
        "base_offset", "last_offset", "epoch", "data"
    )
    return [EncodedBatch(base, last, epoch, bytes(data)) for base, last, epoch, data in rows]


def served(log: KraftLog) -> list[tuple[int, Any]]:
    return list(decode_records(log.read(log.start_offset, 1 << 30)))


def test_each_commit_is_kept_as_the_listener_encodes_its_rows() -> None:
    """Byte for byte: every stored batch equals the rows of its offsets encoded by one encoder
    that read the whole log in order (the listener's way), and the batches cover the log."""
    runtime = get_runtime()
    a_working_cluster(runtime)
    end = log_end()
    batches = stored()
    assert batches and batches[-1].last_offset == end
    assert [b.base_offset for b in batches[1:]] == [b.last_offset + 1 for b in batches[:-1]]
    encoder = KafkaLogEncoder(DEFAULT_METADATA_VERSION)
    first = batches[0].base_offset
    if first > 0:  # written before the runtime's first commit (none are expected)
        list(encoder.batches(e for e, _ in log_entries(0, first - 1)))
    for batch in batches:
        entries = [e for e, _ in log_entries(batch.base_offset, batch.last_offset)]
        assert list(encoder.batches(entries)) == [batch]
    types = {r.name for b in batches for _, r in decode_records(b.data)}
    assert {"RegisterBrokerRecord", "PartitionRecord", "ConfigRecord"} <= types
    assert "PartitionChangeRecord" in types  # the shutdown moved broker 1's leaderships
    assert metadata_verify() == []


def test_a_large_batch_is_stored_compressed_with_lz4_where_the_server_has_it() -> None:
    """PostgreSQL compresses a large batch as it stores it: with lz4 (a third of pglz's time in
    the log's transaction, the same size), read back byte for byte."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("TOAST compression is PostgreSQL's (make test runs it there)")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        (lz4,) = cursor.fetchone()
    runtime = get_runtime()
    a_working_cluster(runtime)
    topics = [
        {"name": f"large-{n}", "num_partitions": 50, "replication_factor": 2} for n in range(4)
    ]
    created = write(runtime, "CreateTopics", {"topics": topics})
    assert all(t["error_code"] == 0 for t in created["topics"]), created
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT octet_length(data), pg_column_size(data), pg_column_compression(data)"
            " FROM cp_kafka_batch ORDER BY base_offset DESC LIMIT 1"
        )
        length, stored_size, method = cursor.fetchone()
    assert length > 2048 and stored_size < length  # large enough to be compressed, and it was
    assert method == ("lz4" if lz4 else "pglz")
    names = [r.name for b in stored() for _, r in decode_records(b.data)]
    assert names.count("PartitionRecord") == 4 * 50 + 3 * 6


def test_the_listener_serves_the_stored_batches_and_encodes_a_gap_from_the_rows() -> None:
    """A range without its batch (the topics' creation, whose replicas' dirs come from the
    registrations in the batches before it) is encoded from the rows with the state the
    stored batches carried: what the brokers fetch is the same either way."""
    runtime = get_runtime()
    a_working_cluster(runtime)
    end = log_end()
    from_batches = KraftLog(0)
    from_batches.extend_to(end)
    assert from_batches.stored_records == end + 1

    creation = next(
        b for b in stored() if any(r.name == "PartitionRecord" for _, r in decode_records(b.data))
    )
    with projection_writes_allowed():
        KafkaBatch.objects.filter(base_offset=creation.base_offset).delete()
    mixed = KraftLog(0)
    mixed.extend_to(end)
    gap = creation.last_offset + 1 - creation.base_offset
    assert mixed.stored_records == end + 1 - gap

    with projection_writes_allowed():
        KafkaBatch.objects.all().delete()
    from_rows = KraftLog(0)
    from_rows.extend_to(end)
    assert from_rows.stored_records == 0

    assert served(mixed) == served(from_rows) == served(from_batches)
    placed = {
        r.fields["Replicas"][0]: r.fields["Directories"][0]
        for _, r in served(mixed)
        if r.name == "PartitionRecord"
    }
    assert placed == {broker: kafka_uuid(directory) for broker, directory in DIRS.items()}


def test_the_listener_takes_in_each_commit_as_it_comes() -> None:
    """Extended commit by commit, the listener's log is the same as read at once."""
    runtime = get_runtime()
    log = KraftLog(0)
    cluster_id = cluster_get_or_create().cluster_id
    for broker in (1, 2, 3):
        write(runtime, "BrokerRegistration", registration_body(broker, cluster_id))
        log.extend_to(log_end())
    write(runtime, "CreateTopics", {"topics": [{"name": "one", "num_partitions": 3}]})
    log.extend_to(log_end())
    at_once = KraftLog(0)
    at_once.extend_to(log_end())
    assert log.stored_records == at_once.stored_records == log_end() + 1
    assert served(log) == served(at_once)


@override_settings(CP_STORE_KAFKA_BATCHES=False)
def test_without_stored_batches_the_listener_encodes_every_record() -> None:
    runtime = get_runtime()
    a_working_cluster(runtime)
    assert not KafkaBatch.objects.exists()
    log = KraftLog(0)
    log.extend_to(log_end())
    assert log.stored_records == 0
    assert [offset for offset, _ in served(log)] == list(range(log_end() + 1))


def test_retention_deletes_the_batches_with_their_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """The log cut at a snapshot takes the batches before it; the listener then serves the
    log from the new start, stored batches and all, as it serves the rows."""
    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [])
    snapshots.snapshot_state_reset()
    runtime = get_runtime()
    a_working_cluster(runtime)
    cut = log_end() + 1
    assert KafkaBatch.objects.filter(base_offset__lt=cut).exists()
    made = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert made is not None and made.end_offset == cut
    write(runtime, "CreateTopics", {"topics": [{"name": "after-the-cut", "num_partitions": 4}]})
    again = snapshots.metadata_snapshot_create(config=KEEP_ONE)  # the first one goes: cut there
    assert again is not None
    start = Cluster.objects.get(pk=1).log_start_offset
    assert start == again.end_offset
    assert not KafkaBatch.objects.filter(base_offset__lt=start).exists()
    write(runtime, "CreateTopics", {"topics": [{"name": "after-again", "num_partitions": 4}]})
    (kept,) = stored()
    assert (kept.base_offset, kept.last_offset) == (start, log_end())
    log = KraftLog(start)
    log.extend_to(log_end())
    assert log.stored_records == log_end() + 1 - start
    with projection_writes_allowed():
        KafkaBatch.objects.all().delete()
    from_rows = KraftLog(start)
    from_rows.extend_to(log_end())
    assert served(log) == served(from_rows)
    snapshots.snapshot_state_reset()
