"""Metadata snapshots (controlplane.runtime.snapshots) on the real database: written at the log's
head, stored in chunks, served by FetchSnapshot, named by the metadata fetch to a broker whose
records retention deleted, refused when damaged, and the log's retention bounded by the latest
snapshot and the audit export's watermark."""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest
from django.db import connection, connections
from django.test import override_settings

from controlplane import metrics
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data
from controlplane.models import Cluster, MetadataRecord, MetadataSnapshot, MetadataSnapshotChunk
from controlplane.runtime import fetch_cache as fc
from controlplane.runtime import snapshots
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.replay import metadata_verify
from controlplane.runtime.snapshot_format import image_checksum, snapshot_decode
from devtools.stack import wait_for
from simulator.client import ControllerClient
from simulator.snapshot import bootstrap_from_snapshot
from simulator.state import SimulatorCounters
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db

SNAPSHOT = "/internal/v1/metadata/snapshot"
SNAPSHOTS = "/internal/v1/metadata/snapshots/"
FETCH = "/internal/v1/metadata"


@pytest.fixture(autouse=True)
def _clean_snapshot_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    snapshots.snapshot_state_reset()
    fc.fetch_cache().clear()
    # No audit export bounds retention unless a test says so (audit.apps registers one).
    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [])
    yield
    snapshots.snapshot_state_reset()


def config(**values: str) -> ConfigView:
    """The broker defaults, with `values` (dots as underscores) set on BROKER ""."""
    given = {name.replace("_", "."): value for name, value in values.items()}
    return ConfigView(lambda _type, _name, key: given.get(key), {})


KEEP_ONE = config(metadata_max_retention_bytes="0")  # every snapshot but the latest goes


def write(runtime: ControllerRuntime, api: str, payload: dict[str, Any]) -> dict[str, Any]:
    context = RequestContext(principal="User:admin", request_id=str(uuid.uuid4()))
    response: dict[str, Any] = runtime.handle(ControllerEvent(api, payload, context)).response
    return response


def create_topics(runtime: ControllerRuntime, prefix: str, count: int = 3) -> None:
    topics = [{"name": f"{prefix}-{n}", "num_partitions": 4} for n in range(count)]
    created = write(runtime, "CreateTopics", {"topics": topics})
    assert all(t["error_code"] == 0 for t in created["topics"]), created


def set_config(runtime: ControllerRuntime, name: str, value: str) -> None:
    answer = write(
        runtime,
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [{"name": name, "config_operation": "SET", "value": value}],
                }
            ]
        },
    )
    assert answer["responses"][0]["error_code"] == 0, answer


def log_image(up_to_offset: int) -> MetadataImage:
    """The log replayed from offset 0 up to `up_to_offset` (the log must still start at 0)."""
    image = MetadataImage(cluster_id=cluster_get_or_create().cluster_id)
    delta = MetadataDelta(image)
    rows = MetadataRecord.objects.filter(offset__lte=up_to_offset).order_by("offset")
    for record_type, data in rows.values_list("record_type", "data"):
        delta.replay(record_from_data(record_type, data))
    image.apply(delta)
    return image


def head() -> Cluster:
    return Cluster.objects.get(pk=1)


def stored_bytes(end_offset: int) -> bytes:
    chunks = MetadataSnapshotChunk.objects.filter(end_offset=end_offset).order_by("position")
    return b"".join(bytes(c.data) for c in chunks)


def get(api: Any, token: str, path: str, **headers: str) -> Any:
    extra = {f"HTTP_{name.upper()}": value for name, value in headers.items()}
    return api.client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


@pytest.fixture
def runtime(db: None) -> ControllerRuntime:
    active = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    for broker_id in range(3):
        body = registration_body(broker_id, cluster_id)
        epoch = write(active, "BrokerRegistration", body)["broker_epoch"]
        beat = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**9}
        write(active, "BrokerHeartbeat", beat)
    create_topics(active, "orders")
    return active


@pytest.fixture
def cut_log(runtime: ControllerRuntime) -> tuple[MetadataSnapshot, MetadataSnapshot]:
    """Two snapshots, retention keeping only the latest: the log starts at its end offset."""
    first = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    create_topics(runtime, "payments")
    second = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert first is not None and second is not None
    assert head().log_start_offset == second.end_offset
    return first, second


# --- writing one ------------------------------------------------------------------------------


def test_a_snapshot_is_the_image_at_the_head_and_decodes_back_to_it(runtime):
    create_topics(runtime, "payments")
    set_config(runtime, "log.retention.ms", "60000")
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    cluster = head()
    assert snapshot.end_offset == cluster.last_offset + 1  # exclusive, as Kafka's SnapshotId
    last = MetadataRecord.objects.get(offset=cluster.last_offset)
    assert snapshot.epoch == last.controller_epoch
    assert snapshot.size_bytes == len(stored_bytes(snapshot.end_offset))
    expected = log_image(cluster.last_offset)
    loaded = snapshots.metadata_snapshot_load(snapshot=snapshot).image()
    assert loaded.as_comparable() == expected.as_comparable()
    # Equal images, equal checksums: what a standby compares.
    assert snapshot.checksum == image_checksum(expected) == image_checksum(loaded)
    assert snapshot.record_count == sum(1 for _ in expected.snapshot_records())


def test_a_second_creation_at_the_same_head_is_a_no_op(runtime):
    first = snapshots.metadata_snapshot_create()
    again = snapshots.metadata_snapshot_create()
    assert first is not None and again is not None
    assert again.end_offset == first.end_offset and again.created_ms == first.created_ms
    assert MetadataSnapshot.objects.count() == 1


def test_nothing_to_snapshot_before_the_first_record(db):
    cluster_get_or_create()
    assert snapshots.metadata_snapshot_create() is None
    assert not MetadataSnapshot.objects.exists()


def test_each_snapshot_builds_on_the_one_before_and_equals_the_log_replayed(runtime, monkeypatch):
    built_on: list[int] = []
    load = snapshots.metadata_snapshot_load

    def counting_load(*, snapshot: MetadataSnapshot) -> Any:
        built_on.append(snapshot.end_offset)
        return load(snapshot=snapshot)

    monkeypatch.setattr(snapshots, "metadata_snapshot_load", counting_load)
    made = []
    for round_ in range(4):
        create_topics(runtime, f"round{round_}", count=2)
        snapshot = snapshots.metadata_snapshot_create()
        assert snapshot is not None
        made.append(snapshot)
    assert built_on == [s.end_offset for s in made[:-1]]  # never the whole log again
    for snapshot in made:
        loaded = load(snapshot=snapshot).image()
        assert loaded.as_comparable() == log_image(snapshot.end_offset - 1).as_comparable()


def test_a_snapshot_is_the_log_at_its_offset_when_writes_commit_meanwhile(runtime, monkeypatch):
    """Writes commit after the snapshot read the head and while it replays the log: the
    snapshot is the image at the head it read, never a mix."""
    real = snapshots.log_replay
    rounds = iter(range(100))

    def replay_while_writing(image: MetadataImage, *, up_to_offset: int) -> Any:
        create_topics(runtime, f"meanwhile{next(rounds)}", count=1)
        return real(image, up_to_offset=up_to_offset)

    monkeypatch.setattr(snapshots, "log_replay", replay_while_writing)
    monkeypatch.setattr(snapshots, "READ_RECORDS", 2)  # many reads, writes between them
    read_head = head().last_offset
    first = snapshots.metadata_snapshot_create()
    assert first is not None and first.end_offset == read_head + 1
    assert head().last_offset > read_head  # the write did commit meanwhile
    second = snapshots.metadata_snapshot_create()
    assert second is not None and second.end_offset > first.end_offset
    for snapshot in (first, second):
        assert (
            snapshots.metadata_snapshot_load(snapshot=snapshot).image().as_comparable()
            == log_image(snapshot.end_offset - 1).as_comparable()
        )


@pytest.mark.django_db(transaction=True)
def test_snapshots_taken_while_another_thread_commits_are_consistent(runtime):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's test database is one connection: no writer beside the snapshot")
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_writing() -> None:
        try:
            n = 0
            while not stop.is_set():
                create_topics(runtime, f"concurrent{n}", count=1)
                n += 1
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    writer = threading.Thread(target=keep_writing)
    writer.start()
    made: list[MetadataSnapshot | None] = []
    try:
        for _ in range(4):
            # Each while the writer goes on: after a commit the last one has not seen.
            seen = made[-1].end_offset if made and made[-1] is not None else 0
            wait_for(lambda seen=seen: head().last_offset >= seen, 30, "a commit meanwhile")
            made.append(snapshots.metadata_snapshot_create())
    finally:
        stop.set()
        writer.join()
    assert not failures
    assert len({s.end_offset for s in made if s is not None}) == 4
    for snapshot in made:
        assert snapshot is not None
        assert (
            snapshots.metadata_snapshot_load(snapshot=snapshot).image().as_comparable()
            == log_image(snapshot.end_offset - 1).as_comparable()
        )


def test_at_most_one_creation_at_a_time(runtime):
    with snapshots.creation_lock() as held:
        assert held
        # The same process (SQLite's lock) or another session (PostgreSQL's advisory lock)
        # is refused while it is held.
        if connection.vendor == "postgresql":
            other = connections.create_connection("default")
            try:
                with other.cursor() as cursor:
                    cursor.execute("SELECT pg_try_advisory_lock(%s)", [snapshots.ADVISORY_KEY])
                    assert cursor.fetchone() == (False,)
            finally:
                other.close()
        else:
            assert snapshots.metadata_snapshot_create() is None
    assert snapshots.metadata_snapshot_create() is not None


# --- FetchSnapshot ------------------------------------------------------------------------------


def test_no_snapshot_yet_is_snapshot_not_found(api, tokens, runtime):
    response = get(api, tokens["broker"], SNAPSHOT)
    assert response.status_code == 404
    assert response.json()["error_code"] == 98 and response.json()["error"] == "SNAPSHOT_NOT_FOUND"


def test_the_latest_snapshot_and_its_bytes_in_pieces(api, tokens, runtime):
    older = snapshots.metadata_snapshot_create()
    create_topics(runtime, "payments")
    latest = snapshots.metadata_snapshot_create()
    assert older is not None and latest is not None
    response = get(api, tokens["broker"], SNAPSHOT)
    assert response.status_code == 200
    assert response.json() == snapshots.snapshot_as_dict(latest)

    whole = stored_bytes(latest.end_offset)
    pieces, position = [], 0
    while position < latest.size_bytes:
        part = get(
            api,
            tokens["broker"],
            f"{SNAPSHOTS}{latest.end_offset}?position={position}&max_bytes=100",
        )
        assert part.status_code == 200 and part["Content-Type"] == "application/octet-stream"
        end = min(position + 100, latest.size_bytes) - 1
        assert part["Content-Range"] == f"bytes {position}-{end}/{latest.size_bytes}"
        pieces.append(part.content)
        position += len(part.content)
    assert b"".join(pieces) == whole
    decoded = snapshot_decode(pieces, checksum=latest.checksum)
    assert decoded.end_offset == latest.end_offset
    # A bound above the server's limit is clamped, never refused; no bound: the limit.
    for query in ("", f"?max_bytes={2**62}"):
        part = get(api, tokens["broker"], f"{SNAPSHOTS}{latest.end_offset}{query}")
        assert part.status_code == 200 and part.content == whole
    # An older one kept by retention is served too.
    assert get(api, tokens["broker"], f"{SNAPSHOTS}{older.end_offset}").content == stored_bytes(
        older.end_offset
    )


def test_a_range_across_chunks_reads_only_what_it_needs(api, tokens, runtime, monkeypatch):
    monkeypatch.setattr(snapshots, "CHUNK_BYTES", 64)
    monkeypatch.setattr("controlplane.runtime.snapshot_format.CHUNK_BYTES", 64)
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    assert MetadataSnapshotChunk.objects.filter(end_offset=snapshot.end_offset).count() > 3
    whole = stored_bytes(snapshot.end_offset)
    part = get(api, tokens["broker"], f"{SNAPSHOTS}{snapshot.end_offset}?position=100&max_bytes=50")
    assert part.content == whole[100:150]
    assert part["Content-Range"] == f"bytes 100-149/{snapshot.size_bytes}"


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("{end}?position={size}", 416, 99),
        ("{end}?position=99999999", 416, 99),
        ("12345", 404, 98),
        ("{end}?position=-1", 400, 42),
        ("{end}?max_bytes=0", 400, 42),
        ("{end}?position=abc", 400, 42),
        ("{end}?colour=red", 400, 42),
        ("abc", 400, 42),
        ("-5", 404, 98),  # an int64 no snapshot has
        ("99999999999999999999999", 400, 42),
    ],
)
def test_fetch_snapshot_refusals(api, tokens, runtime, path, status, code):
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    url = SNAPSHOTS + path.format(end=snapshot.end_offset, size=snapshot.size_bytes)
    response = get(api, tokens["broker"], url)
    assert response.status_code == status, response.content[:300]
    assert response.json()["error_code"] == code
    if status == 416:
        assert response["Content-Range"] == f"bytes */{snapshot.size_bytes}"


def test_fetch_snapshot_needs_cluster_action(api, tokens, runtime):
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    for path in (SNAPSHOT, f"{SNAPSHOTS}{snapshot.end_offset}"):
        assert get(api, tokens["alice"], path).status_code == 403
        assert api.client.get(path).status_code == 401


# --- the fetch names the snapshot when its records are gone ---------------------------------


def test_a_fetch_behind_the_log_start_answers_the_snapshot_and_no_records(api, tokens, cut_log):
    _, latest = cut_log
    for accept in (fc.JSON, fc.MSGPACK):
        response = get(
            api,
            tokens["broker"],
            f"{FETCH}?after_offset=-1&max_records=10&wait_ms=50",
            ACCEPT=accept,
        )
        assert response.status_code == 200
        answer = (
            msgspec.msgpack.decode(response.content) if accept == fc.MSGPACK else response.json()
        )
        assert answer["records"] == []
        assert answer["error_code"] == 0
        assert answer["snapshot_id"] == {"end_offset": latest.end_offset, "epoch": latest.epoch}
        assert answer["log_start_offset"] == latest.end_offset
    # Right after the snapshot: the log, from its first kept record on.
    create = get_runtime()
    create_topics(create, "refunds")
    answer = get(api, tokens["broker"], f"{FETCH}?after_offset={latest.end_offset - 1}").json()
    assert answer["records"][0]["offset"] == latest.end_offset
    assert "snapshot_id" not in answer


def test_a_cached_answer_is_never_served_after_a_retention_cut(api, tokens, runtime):
    snapshots.metadata_snapshot_create(config=KEEP_ONE)
    before = get(api, tokens["broker"], f"{FETCH}?after_offset=-1").json()
    assert before["records"][0]["offset"] == 0
    create_topics(runtime, "payments")
    latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert latest is not None and head().log_start_offset == latest.end_offset
    # The same ask as before: the head is where it was... but the log's start moved.
    after = get(api, tokens["broker"], f"{FETCH}?after_offset=-1").json()
    assert after["records"] == [] and after["snapshot_id"]["end_offset"] == latest.end_offset


def test_records_deleted_after_the_head_was_read_are_never_skipped(
    api, tokens, cut_log, monkeypatch
):
    """A fetch that read the log's start before retention moved it finds its records gone: it
    reads the head again and answers the snapshot, never the records after the gap."""
    _, latest = cut_log
    from controlplane import selectors

    real_head = selectors.metadata_head
    stale = {**real_head(), "log_start_offset": 0}
    heads = iter([stale])
    monkeypatch.setattr(selectors, "metadata_head", lambda: next(heads, None) or real_head())
    answer = get(api, tokens["broker"], f"{FETCH}?after_offset=-1&max_records=100").json()
    assert answer["records"] == []
    assert answer["snapshot_id"]["end_offset"] == latest.end_offset


def test_a_cut_log_without_a_readable_snapshot_says_snapshot_not_found(api, tokens, cut_log):
    MetadataSnapshot.objects.update(damaged=True)
    answer = get(api, tokens["broker"], f"{FETCH}?after_offset=-1&wait_ms=10").json()
    assert answer["records"] == [] and answer["error_code"] == 98
    assert "snapshot_id" not in answer


# --- a damaged snapshot ------------------------------------------------------------------------


def tamper(end_offset: int, *, keep_crc: bool) -> None:
    """Flip a byte of the snapshot's first chunk (and, with keep_crc, its CRC to match: only
    the whole snapshot's checksum can tell)."""
    import zlib

    chunk = MetadataSnapshotChunk.objects.get(end_offset=end_offset, position=0)
    data = bytearray(bytes(chunk.data))
    data[len(data) // 2] ^= 0xFF
    crc = zlib.crc32(bytes(data)) if keep_crc else chunk.crc32
    MetadataSnapshotChunk.objects.filter(end_offset=end_offset, position=0).update(
        data=bytes(data), crc32=crc
    )


@pytest.mark.parametrize("keep_crc", [False, True])
def test_a_damaged_snapshot_is_refused_and_the_one_before_is_used(api, tokens, runtime, keep_crc):
    older = snapshots.metadata_snapshot_create()
    create_topics(runtime, "payments")
    latest = snapshots.metadata_snapshot_create()
    assert older is not None and latest is not None
    tamper(latest.end_offset, keep_crc=keep_crc)
    response = get(api, tokens["broker"], SNAPSHOT)
    assert response.status_code == 200 and response.json()["end_offset"] == older.end_offset
    assert MetadataSnapshot.objects.get(end_offset=latest.end_offset).damaged
    assert get(api, tokens["broker"], f"{SNAPSHOTS}{latest.end_offset}").status_code == 404
    # The next snapshot builds on the intact one, and replaces nothing it should not.
    create_topics(runtime, "refunds")
    newest = snapshots.metadata_snapshot_create()
    assert newest is not None
    assert (
        snapshots.metadata_snapshot_load(snapshot=newest).image().as_comparable()
        == log_image(newest.end_offset - 1).as_comparable()
    )


def test_a_chunk_served_damaged_is_refused(api, tokens, runtime):
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    tamper(snapshot.end_offset, keep_crc=False)
    response = get(api, tokens["broker"], f"{SNAPSHOTS}{snapshot.end_offset}")
    assert response.status_code == 404 and response.json()["error_code"] == 98
    assert MetadataSnapshot.objects.get(end_offset=snapshot.end_offset).damaged


def test_a_damaged_snapshot_at_the_head_is_written_again(runtime):
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    tamper(snapshot.end_offset, keep_crc=True)
    with pytest.raises(snapshots.SnapshotDamaged):
        snapshots.metadata_snapshot_load(snapshot=snapshot)
    again = snapshots.metadata_snapshot_create()
    assert again is not None and not again.damaged and again.end_offset == snapshot.end_offset
    assert snapshots.metadata_snapshot_load(snapshot=again).end_offset == snapshot.end_offset


# --- retention --------------------------------------------------------------------------------


def test_retention_within_its_bounds_keeps_the_log_whole(runtime):
    for round_ in range(3):
        create_topics(runtime, f"r{round_}")
        snapshots.metadata_snapshot_create()  # the defaults: 100 MiB, 7 days
    assert MetadataSnapshot.objects.count() == 3
    assert head().log_start_offset == 0 and MetadataRecord.objects.filter(offset=0).exists()


def test_retention_keeps_the_latest_and_cuts_the_log_before_the_oldest_kept(runtime):
    made = []
    for round_ in range(3):
        create_topics(runtime, f"r{round_}")
        made.append(snapshots.metadata_snapshot_create(config=KEEP_ONE))
    latest = made[-1]
    assert latest is not None
    assert list(MetadataSnapshot.objects.values_list("end_offset", flat=True)) == [
        latest.end_offset
    ]
    assert head().log_start_offset == latest.end_offset
    assert MetadataRecord.objects.order_by("offset").first() is None or (
        MetadataRecord.objects.order_by("offset").first().offset == latest.end_offset
    )
    # Time: a snapshot older than metadata.max.retention.ms goes once a newer one exists.
    create_topics(runtime, "later")
    newest = snapshots.metadata_snapshot_create(config=config(metadata_max_retention_ms="-1"))
    assert newest is not None
    assert MetadataSnapshot.objects.count() == 2
    outcome = snapshots.metadata_log_retention_apply(
        config=config(metadata_max_retention_ms="1000"), now=newest.created_ms + 10**6
    )
    assert outcome.deleted_snapshots == [latest.end_offset]
    assert head().log_start_offset == newest.end_offset


def test_retention_never_deletes_what_the_audit_export_has_not_committed(runtime, monkeypatch):
    floor = {"offset": 3}
    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [lambda: floor["offset"]])
    create_topics(runtime, "more")
    snapshots.metadata_snapshot_create(config=KEEP_ONE)
    create_topics(runtime, "again")
    latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert latest is not None and latest.end_offset > 4
    assert head().log_start_offset == 4  # up to the watermark, not to the snapshot
    assert MetadataRecord.objects.order_by("offset").first().offset == 4
    floor["offset"] = -1  # no export committed: nothing more goes
    outcome = snapshots.metadata_log_retention_apply(config=KEEP_ONE)
    assert outcome.deleted_records == 0 and outcome.held_back_by == -1
    floor["offset"] = 10**9  # exported beyond: the cut reaches the snapshot
    snapshots.metadata_log_retention_apply(config=KEEP_ONE)
    assert head().log_start_offset == latest.end_offset


def test_retention_never_deletes_what_the_state_tables_still_need(runtime):
    create_topics(runtime, "more")
    snapshots.metadata_snapshot_create(config=KEEP_ONE)
    create_topics(runtime, "again")
    trailing = Cluster.objects.get(pk=1).last_offset - 2
    # The tables stand behind the log (a controller died between a commit's two transactions):
    # the records after their offset are what the next controller replays into them.
    Cluster.objects.filter(pk=1).update(projected_offset=trailing)
    latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert latest is not None and latest.end_offset > trailing + 1
    assert head().log_start_offset == trailing + 1
    assert MetadataRecord.objects.order_by("offset").first().offset == trailing + 1
    Cluster.objects.filter(pk=1).update(projected_offset=head().last_offset)  # caught up
    snapshots.metadata_log_retention_apply(config=KEEP_ONE)
    assert head().log_start_offset == latest.end_offset


def test_the_audit_exports_watermark_bounds_retention(runtime, tmp_path, monkeypatch):
    from audit.export import audit_export_run
    from audit.selectors import audit_exported_offset

    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [audit_exported_offset])
    with override_settings(CP_AUDIT_EXPORT_PATH=str(tmp_path)):
        assert audit_exported_offset() == -1  # nothing exported yet: nothing may go
        snapshots.metadata_snapshot_create(config=KEEP_ONE)
        create_topics(runtime, "payments")
        latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
        assert latest is not None and head().log_start_offset == 0
        exported = head().last_offset
        audit_export_run(target=str(tmp_path))
        assert audit_exported_offset() == exported
        create_topics(runtime, "refunds")  # after the export: never deleted
        newest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
        assert newest is not None
        assert head().log_start_offset == min(newest.end_offset, exported + 1)
        assert MetadataRecord.objects.filter(offset__gt=exported).count() == (
            head().last_offset - exported
        )


def test_retention_deletes_in_bounded_batches(runtime, monkeypatch):
    monkeypatch.setattr(snapshots, "DELETE_RECORDS", 3)
    starts: list[int] = []
    real = snapshots.cluster_read

    def watching() -> Any:
        cluster = real()
        starts.append(cluster.log_start_offset)
        return cluster

    monkeypatch.setattr(snapshots, "cluster_read", watching)
    snapshots.metadata_snapshot_create(config=KEEP_ONE)
    create_topics(runtime, "payments")
    latest = snapshots.metadata_snapshot_create(config=KEEP_ONE)
    assert latest is not None and head().log_start_offset == latest.end_offset
    moves = sorted(set(starts))
    assert len(moves) > 2 and all(b - a <= 3 for a, b in itertools.pairwise(moves))


def test_verify_metadata_replays_from_the_snapshot_once_the_log_was_cut(cut_log):
    assert MetadataRecord.objects.order_by("offset").first() is None or head().log_start_offset > 0
    create_topics(get_runtime(), "after-the-cut")
    assert metadata_verify() == []
    MetadataSnapshot.objects.update(damaged=True)  # nothing left to start from: said so
    problems = metadata_verify()
    assert any("no intact snapshot" in p for p in problems)


def test_the_snapshot_gauge(runtime):
    def gauge() -> float:
        for line in metrics.render().decode().splitlines():
            if line.startswith("kafka_controller_snapshot_end_offset "):
                return float(line.split()[1])
        raise AssertionError("no kafka_controller_snapshot_end_offset")

    assert gauge() == -1
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None and gauge() == snapshot.end_offset


# --- when one is due ----------------------------------------------------------------------------


def test_a_snapshot_is_due_after_enough_bytes_or_time_with_new_records(runtime):
    sent: list[int] = []
    schedule = snapshots.SnapshotSchedule()
    now = 10**12
    small = config(metadata_log_max_record_bytes_between_snapshots="100000000")

    def check(at: int, view: ConfigView) -> bool:
        return schedule.send_when_due(now=at, config=view, send=lambda: sent.append(at))

    assert not check(now, small)  # records, but neither enough bytes nor an hour yet
    assert not check(now + 1, small)  # checked again only CHECK_EVERY_MS later
    measured = schedule.bytes_since
    assert measured == snapshots.log_bytes_between(after_offset=-1, up_to=head().last_offset)
    few = config(metadata_log_max_record_bytes_between_snapshots=str(measured))
    assert check(now + snapshots.CHECK_EVERY_MS, few)
    assert not check(now + 2 * snapshots.CHECK_EVERY_MS, few)  # sent: not again at once
    assert check(now + snapshots.CHECK_EVERY_MS + snapshots.RESEND_AFTER_MS, few)  # lost?
    # Once written, the count starts again from it: nothing new, nothing due.
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None
    later = now + 10 * snapshots.RESEND_AFTER_MS
    assert not check(later, few)
    # By time: an interval passed since the latest snapshot and there are new records.
    create_topics(runtime, "payments")
    hourly = config(metadata_log_max_snapshot_interval_ms="3600000")
    assert not check(later + snapshots.CHECK_EVERY_MS, hourly)
    assert check(snapshot.created_ms + 3_600_000 + later, hourly)
    never = config(metadata_log_max_snapshot_interval_ms="0")
    schedule.sent_ms = None
    assert not check(snapshot.created_ms + 10**9 + later, never)  # 0: never by time
    assert len(sent) == 3


def test_a_snapshot_that_took_long_to_build_spaces_out_the_next(runtime):
    schedule = snapshots.SnapshotSchedule()
    snapshot = snapshots.metadata_snapshot_create()
    assert snapshot is not None and snapshot.build_ms >= 0
    MetadataSnapshot.objects.filter(end_offset=snapshot.end_offset).update(build_ms=30_000)
    create_topics(runtime, "payments")
    every_byte = config(metadata_log_max_record_bytes_between_snapshots="1")
    rest = snapshots.SNAPSHOT_DUTY_CYCLE * 30_000
    assert not schedule.check(now=snapshot.created_ms + rest - 1, config=every_byte)
    assert schedule.check(now=snapshot.created_ms + rest, config=every_byte)


def test_the_timer_sends_the_task_and_the_task_writes_the_snapshot(runtime, monkeypatch):
    sent: list[str] = []

    class Recorder:
        in_process = True

        def send_task(self, name: str, *args: Any, **kwargs: Any) -> None:
            sent.append(name)

    monkeypatch.setattr("controlplane.runtime.executor.executor", lambda: Recorder())
    set_config(runtime, "metadata.log.max.record.bytes.between.snapshots", "1")
    snapshots.metadata_snapshot_when_due(runtime)
    assert sent == [snapshots.SNAPSHOT_TASK]
    from controlplane.tasks import metadata_snapshot_create

    assert metadata_snapshot_create() == head().last_offset + 1


# --- a broker starts from the snapshot ----------------------------------------------------------


def simulator_client(api: Any, token: str) -> ControllerClient:
    def serve(request: httpx.Request) -> httpx.Response:
        response = api.client.get(
            request.url.path + ("?" + request.url.query.decode() if request.url.query else ""),
            HTTP_AUTHORIZATION=f"Bearer {token}",
            HTTP_ACCEPT=request.headers.get("Accept", "*/*"),
        )
        connections.close_all()  # this event loop's connections: the test client keeps them
        headers = {k: v for k, v in response.items() if k.lower() != "content-length"}
        return httpx.Response(response.status_code, headers=headers, content=response.content)

    return ControllerClient(
        "http://public",
        token,
        "sim",
        SimulatorCounters(),
        internal_url="http://internal",
        request_timeout_s=5,
        max_connections=2,
        trust_env=False,
        transport=httpx.MockTransport(serve),
    )


# The simulator's client runs on an event loop, whose requests reach the database on their own
# connection: the data must be committed to be seen there.
@pytest.mark.django_db(transaction=True)
def test_a_broker_bootstraps_from_the_snapshot_then_follows_the_log(api, tokens, cut_log):
    _, latest = cut_log
    runtime = get_runtime()
    create_topics(runtime, "after")
    client = simulator_client(api, tokens["broker"])

    async def bootstrap() -> Any:
        client.open()
        try:
            loaded = await bootstrap_from_snapshot(client, max_bytes=200)
            assert loaded is not None
            answer = await client.fetch_metadata(
                after_offset=loaded.end_offset - 1, max_records=1000, wait_ms=0
            )
            return loaded, answer
        finally:
            await client.close()

    loaded, answer = asyncio.run(bootstrap())
    assert loaded.end_offset == latest.end_offset and loaded.fetches > 1
    assert loaded.size_bytes == latest.size_bytes
    image = loaded.image
    delta = MetadataDelta(image)
    for item in answer["records"]:
        assert item["offset"] == delta.next_offset  # no gap between the snapshot and the log
        delta.replay(record_from_data(item["type"], item["data"]))
    image.apply(delta)
    cluster = head()
    assert image.last_offset == cluster.last_offset
    assert image_checksum(image) == image_checksum(snapshots._image_from_tables()[0])


@pytest.mark.django_db(transaction=True)
def test_a_broker_with_no_snapshot_to_load_is_told_so(api, tokens, runtime):
    client = simulator_client(api, tokens["broker"])

    async def bootstrap() -> Any:
        client.open()
        try:
            return await bootstrap_from_snapshot(client)
        finally:
            await client.close()

    assert asyncio.run(bootstrap()) is None


@pytest.mark.django_db(transaction=True)
def test_the_simulators_follower_loads_the_snapshot_when_the_fetch_names_it(api, tokens, cut_log):
    from simulator.aio import wait_until
    from simulator.follower import MetadataFollower

    create_topics(get_runtime(), "after")
    target = head().last_offset
    client = simulator_client(api, tokens["broker"])
    counters = SimulatorCounters()

    async def follow() -> MetadataFollower:
        client.open()
        follower = MetadataFollower(
            client,
            counters,
            wait_ms=0,
            max_records=1000,
            track_partitions=True,
            on_progress=lambda offset: None,
        )
        try:
            await follower.first_contact(5)
            follower.start()
            assert await wait_until(lambda: follower.offset >= target, 10, poll_s=0.02)
        finally:
            follower.closing = True
            if follower.task is not None:
                follower.task.cancel()
            await client.close()
        return follower

    follower = asyncio.run(follow())
    assert counters.snapshot_loads == 1 and counters.errors == 0
    assert follower.view.image.as_comparable() == snapshots._image_from_tables()[0].as_comparable()


def test_records_exported_after_a_cut_still_name_their_topic(runtime, tmp_path, monkeypatch):
    """The export names a partition record's topic from the log's TopicRecord; once retention
    cut that record, from the topics table."""
    import pyarrow.parquet as pq

    from audit.export import audit_export_run
    from audit.selectors import audit_exported_offset

    monkeypatch.setattr(snapshots, "RETENTION_FLOORS", [audit_exported_offset])
    with override_settings(CP_AUDIT_EXPORT_PATH=str(tmp_path)):
        create_topics(runtime, "payments", count=1)
        snapshots.metadata_snapshot_create(config=KEEP_ONE)
        audit_export_run(target=str(tmp_path))
        snapshots.metadata_snapshot_create(config=KEEP_ONE)
        set_config(runtime, "log.retention.ms", "60000")  # a newer snapshot: the older goes
        snapshots.metadata_snapshot_create(config=KEEP_ONE)
        assert not MetadataRecord.objects.filter(record_type="TopicRecord").exists()
        grown = write(runtime, "CreatePartitions", {"topics": [{"name": "payments-0", "count": 6}]})
        assert grown["results"][0]["error_code"] == 0, grown
        first_new = head().last_offset - 1
        audit_export_run(target=str(tmp_path))
    rows = pq.read_table(tmp_path / "metadata_log").to_pylist()
    new = [r for r in rows if r["offset"] >= first_new and r["record_type"] == "PartitionRecord"]
    assert len(new) == 2
    assert {r["topic"] for r in new} == {"payments-0"}
