"""Metadata snapshots and the log's retention, as Kafka's KRaft controller keeps them: writing
them, deleting them and the log before them, and when one is due.

A snapshot is the image at an offset (Kafka's `.checkpoint` file; its bytes in
controlplane.runtime.snapshot_format), stored in the database in chunks so that every web node
serves it (`GET /internal/v1/metadata/snapshots/{end_offset}`; the reads in
controlplane.runtime.snapshot_reads). A broker that starts from nothing, or fell behind the
log's start, loads the latest snapshot, then fetches the log after it.

Snapshots are written off the hot path: the active controller's timer sends a task when one is
due (`metadata.log.max.record.bytes.between.snapshots` of records since the latest, or
`metadata.log.max.snapshot.interval.ms` with new records), measuring each new record once. The
task builds the image at the log's head from the newest intact snapshot and the log after it
(from the state tables when no snapshot can be used and the log no longer starts at 0), one
creation at a time in the whole deployment.

Then retention (Kafka's KafkaMetadataLog.cleanSnapshots): the latest snapshot is always kept;
older ones go while the log and the snapshots exceed `metadata.max.retention.bytes` or they are
older than `metadata.max.retention.ms`, and with each the log before the next one, in bounded
batches. Never past what the audit export has committed (`RETENTION_FLOORS`): the Parquet
datasets stay the log's complete history; nor past the state tables' offset, whose records after
it a controller taking over replays into them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
from django.db import IntegrityError, connection, transaction

from controlplane.controller.config_schema import ConfigView
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data
from controlplane.models import Cluster, MetadataSnapshot, MetadataSnapshotChunk
from controlplane.runtime import executor
from controlplane.runtime.lease import cluster_read, now_ms
from controlplane.runtime.notifier import notifier
from controlplane.runtime.plugins import add_once
from controlplane.runtime.single_writer import retention_scope
from controlplane.runtime.snapshot_format import (
    CHUNK_BYTES,
    EncodedSnapshot,
    SnapshotDamaged,
    image_checksum,
    snapshot_decode,
    snapshot_encode,
)
from controlplane.runtime.snapshot_reads import (
    CHUNKS_PER_READ,
    metadata_snapshot_get,
    metadata_snapshot_latest,
    metadata_snapshot_latest_intact,
    metadata_snapshot_load,
    snapshot_as_dict,
    snapshot_checks_reset,
)
from controlplane.runtime.standby import standby_checkpoint_judge, standby_checkpoints_pending
from controlplane.selectors import config_view

# Names read from here too: the snapshot format's, and reads that lived here before
# controlplane.runtime.snapshot_reads (the wire's Raft APIs and the tests import them here).
__all__ = [
    "CHUNK_BYTES",
    "SnapshotDamaged",
    "image_checksum",
    "metadata_snapshot_create",
    "metadata_snapshot_get",
    "metadata_snapshot_latest_intact",
    "metadata_snapshot_load",
    "snapshot_as_dict",
    "snapshot_decode",
    "snapshot_encode",
]

logger = logging.getLogger("controlplane.snapshots")

MAX_BYTES_BETWEEN = "metadata.log.max.record.bytes.between.snapshots"
MAX_INTERVAL_MS = "metadata.log.max.snapshot.interval.ms"
RETENTION_BYTES = "metadata.max.retention.bytes"
RETENTION_MS = "metadata.max.retention.ms"

SNAPSHOT_TASK = "controlplane.tasks.metadata_snapshot_create"
READ_RECORDS = 5000  # the log is read this many records at a time (a range of offsets)
DELETE_RECORDS = 10_000  # retention deletes this many records per transaction
CHECK_EVERY_MS = 2000  # the timer measures the new records this often
MEASURE_RECORDS = 100_000  # at most this many new records measured per check
# A snapshot is never due sooner than this many times the latest one's build time after it:
# building snapshots takes at most a tenth of one core, however fast records come (a
# million-partition image takes tens of seconds to build; Kafka's 20 MiB cadence alone would
# keep a core busy while a large cluster is created).
SNAPSHOT_DUTY_CYCLE = 9
RESEND_AFTER_MS = 60_000  # a task sent and no snapshot since: sent again after this long
# pg_try_advisory_lock's key for "a snapshot is being written" (b"cpsnap" as a number).
ADVISORY_KEY = 0x6370736E6170
_local_lock = threading.Lock()  # the same on SQLite, one process (the embedded run)


# --- where the log may be cut ---------------------------------------------------------------

# Providers of the highest offset retention may delete (inclusive; -1: none). The audit export
# registers its watermark here (audit.apps): the runtime imports no app. With none registered,
# nothing bounds retention but the snapshots.
RETENTION_FLOORS: list[Callable[[], int]] = []


def register_retention_floor(floor: Callable[[], int]) -> None:
    add_once(RETENTION_FLOORS, floor)


def _tables_floor(floor: int | None) -> int:
    """`floor`, and never past the state tables' offset: the records after it are what a
    controller taking over replays into the tables when they trail the log."""
    tables = cluster_read().projected_offset
    return tables if floor is None else min(floor, tables)


def retention_floor() -> int | None:
    """The highest offset every provider lets retention delete; None when none bounds it."""
    floors = [provider() for provider in RETENTION_FLOORS]
    return min(floors) if floors else None


# --- writing one ----------------------------------------------------------------------------


@contextlib.contextmanager
def creation_lock() -> Iterator[bool]:
    """Whether this caller writes snapshots now: one at a time in the whole deployment (a
    PostgreSQL advisory lock of this session; a process lock on SQLite, one process)."""
    if connection.vendor != "postgresql":
        held = _local_lock.acquire(blocking=False)
        try:
            yield held
        finally:
            if held:
                _local_lock.release()
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [ADVISORY_KEY])
        (held,) = cursor.fetchone()
    try:
        yield bool(held)
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_KEY])


def metadata_snapshot_create(*, config: ConfigView | None = None) -> MetadataSnapshot | None:
    """Write the snapshot of the image at the log's head (a no-op when it exists), then apply
    retention. None when there is nothing to snapshot or another creation is under way."""
    with creation_lock() as held:
        if not held:
            logger.info("a metadata snapshot is being written elsewhere: not this time")
            return None
        snapshot = _create()
        metadata_log_retention_apply(config=config)
        return snapshot


def _create() -> MetadataSnapshot | None:
    cluster = cluster_read()
    head = cluster.last_offset
    if head < 0:
        return None
    existing = MetadataSnapshot.objects.filter(end_offset=head + 1).first()
    if existing is not None and not existing.damaged:
        return existing
    started = time.monotonic()
    try:
        image, log_bytes, epoch = _image_from_snapshot_and_log(cluster, head)
    except _LogGap as gap:
        logger.warning("snapshot: %s; building the image from the state tables", gap)
        image, log_bytes, epoch = _image_from_tables()
    encoded = snapshot_encode(image)
    snapshot = metadata_snapshot_store(
        encoded=encoded,
        epoch=epoch,
        log_bytes=log_bytes,
        build_ms=int((time.monotonic() - started) * 1000),
    )
    logger.info(
        "metadata snapshot %d: %d records, %d bytes, in %.2f s",
        encoded.end_offset,
        encoded.record_count,
        encoded.size_bytes,
        time.monotonic() - started,
    )
    return snapshot


class _LogGap(Exception):
    """The log does not hold a record the replay needs."""


def _image_from_snapshot_and_log(cluster: Cluster, head: int) -> tuple[MetadataImage, int, int]:
    """The image at `head`: the newest intact snapshot at or before it (an empty image when
    the log starts at 0 and none is), and the log after it replayed; with the bytes of the
    records replayed and the epoch of the record at `head`."""
    image = None
    for candidate in MetadataSnapshot.objects.filter(
        damaged=False, end_offset__lte=head + 1, end_offset__gte=cluster.log_start_offset
    ).order_by("-end_offset"):
        try:
            image = metadata_snapshot_load(snapshot=candidate).image()
            break
        except SnapshotDamaged as error:
            logger.warning("%s; trying the one before", error)
    if image is None:
        if cluster.log_start_offset > 0:
            raise _LogGap(f"the log starts at {cluster.log_start_offset} and no snapshot is intact")
        image = MetadataImage(cluster_id=cluster.cluster_id)
    log_bytes, epoch = _replay_judging_checkpoints(image, up_to_offset=head)
    if epoch is None:  # nothing replayed: the image was the snapshot at the head
        epoch = _epoch_at(head)
    return image, log_bytes, epoch


def _replay_judging_checkpoints(
    image: MetadataImage, *, up_to_offset: int
) -> tuple[int, int | None]:
    """`log_replay`, pausing at each standby's checkpoint on the way to judge it: the image the
    log gives at that offset has the checksum the standby's image had there, or the standby
    diverged (controlplane.runtime.standby)."""
    size, epoch = 0, None
    # From the image's own offset on: a standby caught up when the last snapshot was taken
    # checked its image right there.
    for node_id, offset, checksum in standby_checkpoints_pending(
        after_offset=image.last_offset - 1, up_to_offset=up_to_offset
    ):
        replayed, last_epoch = log_replay(image, up_to_offset=offset)
        size, epoch = size + replayed, last_epoch if last_epoch is not None else epoch
        standby_checkpoint_judge(
            node_id=node_id, offset=offset, diverged=image_checksum(image) != checksum
        )
    replayed, last_epoch = log_replay(image, up_to_offset=up_to_offset)
    return size + replayed, last_epoch if last_epoch is not None else epoch


def _image_from_tables() -> tuple[MetadataImage, int, int]:
    from controlplane.runtime.standby import snapshot_image

    image = snapshot_image()
    if image is None:
        raise SnapshotDamaged("no cluster to snapshot")
    return image, 0, _epoch_at(image.last_offset)


def _epoch_at(offset: int) -> int:
    """The controller epoch of the record at `offset`; when retention deleted it, the epoch a
    snapshot ending there recorded, else the current controller epoch."""
    from controlplane.models import MetadataRecord

    epoch = (
        MetadataRecord.objects.filter(offset=offset).values_list("controller_epoch", flat=True)
    ).first()
    if epoch is None:
        epoch = (
            MetadataSnapshot.objects.filter(end_offset=offset + 1).values_list("epoch", flat=True)
        ).first()
    return int(epoch if epoch is not None else cluster_read().controller_epoch)


_json = msgspec.json.Decoder()


def log_replay(image: MetadataImage, *, up_to_offset: int) -> tuple[int, int | None]:
    """Replay into `image` the log's records after its offset up to `up_to_offset`, reading
    READ_RECORDS at a time (committed records only: the head bounds them). Answers the bytes of
    the records' JSON data and the controller epoch of the last one (None when none was).
    `_LogGap` when the log does not hold them all."""
    text = '"data"::text' if connection.vendor == "postgresql" else 'CAST("data" AS TEXT)'
    sql = (
        f'SELECT "offset", record_type, controller_epoch, {text} FROM cp_metadata_record'
        ' WHERE "offset" > %s AND "offset" <= %s ORDER BY "offset"'
    )
    size, epoch = 0, None
    while image.last_offset < up_to_offset:
        high = min(up_to_offset, image.last_offset + READ_RECORDS)
        with connection.cursor() as cursor:
            cursor.execute(sql, [image.last_offset, high])
            rows = cursor.fetchall()
        delta = MetadataDelta(image)
        for offset, record_type, record_epoch, data in rows:
            if offset != delta.next_offset:
                raise _LogGap(f"the log has no record {delta.next_offset} (found {offset})")
            delta.replay(record_from_data(record_type, _json.decode(data)))
            size += len(data)
            epoch = record_epoch
        if delta.last_offset != high:
            raise _LogGap(f"the log has no record {delta.next_offset}")
        image.apply(delta)
    return size, epoch


def metadata_snapshot_store(
    *, encoded: EncodedSnapshot, epoch: int, log_bytes: int, build_ms: int = 0
) -> MetadataSnapshot:
    """Keep `encoded`: its row and chunks in one transaction, never seen half written. A
    damaged snapshot of the same end offset is replaced; an intact one written meanwhile wins
    (this one is dropped)."""
    try:
        with transaction.atomic():
            _snapshots_delete(
                list(
                    MetadataSnapshot.objects.filter(
                        end_offset=encoded.end_offset, damaged=True
                    ).values_list("end_offset", flat=True)
                )
            )
            snapshot = MetadataSnapshot.objects.create(
                end_offset=encoded.end_offset,
                epoch=epoch,
                size_bytes=encoded.size_bytes,
                checksum=encoded.checksum,
                record_count=encoded.record_count,
                created_ms=now_ms(),
                log_bytes=log_bytes,
                build_ms=build_ms,
            )
            positions = range(0, encoded.size_bytes, CHUNK_BYTES)
            MetadataSnapshotChunk.objects.bulk_create(
                (
                    MetadataSnapshotChunk(
                        end_offset=encoded.end_offset,
                        position=position,
                        crc32=zlib.crc32(chunk),
                        data=chunk,
                    )
                    for position, chunk in zip(positions, encoded.chunks, strict=True)
                ),
                batch_size=CHUNKS_PER_READ,
            )
    except IntegrityError:
        found = MetadataSnapshot.objects.get(end_offset=encoded.end_offset)
        logger.info("metadata snapshot %d was written meanwhile", found.end_offset)
        return found
    return snapshot


# --- retention --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RetentionOutcome:
    deleted_snapshots: list[int]  # their end offsets
    log_start_offset: int  # where the log starts now
    deleted_records: int
    held_back_by: int | None  # the floor that stopped the cut short, when one did


def metadata_log_retention_apply(
    *, config: ConfigView | None = None, now: int | None = None
) -> RetentionOutcome:
    """Delete snapshots and the log before them as Kafka's cleanSnapshots does (see the
    module's docstring); the log never past the retention floors. Run under `creation_lock`."""
    if config is None:
        config = config_view()
    now = now_ms() if now is None else now
    max_bytes = int(config.broker_value(RETENTION_BYTES))
    max_ms = int(config.broker_value(RETENTION_MS))
    damaged = list(
        MetadataSnapshot.objects.filter(damaged=True).values_list("end_offset", flat=True)
    )
    kept = list(MetadataSnapshot.objects.filter(damaged=False).order_by("end_offset"))
    log_start = cluster_read().log_start_offset
    # The log's size, never scanned: each snapshot knows the bytes of the records between the
    # one before it and itself; those before the log's start are gone already.
    log_size = sum(s.log_bytes for s in kept if s.end_offset > log_start)
    snapshots_size = sum(s.size_bytes for s in kept)
    deleted: list[int] = []
    while len(kept) >= 2:
        oldest, following = kept[0], kept[1]
        too_big = max_bytes >= 0 and log_size + snapshots_size > max_bytes
        too_old = max_ms >= 0 and now - oldest.created_ms > max_ms
        if not (too_big or too_old):
            break
        deleted.append(oldest.end_offset)
        snapshots_size -= oldest.size_bytes
        # The log before `following` goes with it (what was left of it).
        log_size -= (oldest.log_bytes if oldest.end_offset > log_start else 0) + (
            following.log_bytes
        )
        kept.pop(0)
    _snapshots_delete(damaged + deleted)
    # As Kafka: the log is cut only behind a snapshot retention deleted (or cut before), so
    # a log within the bounds keeps its start.
    target = kept[0].end_offset if kept and (deleted or log_start > 0) else log_start
    floor = _tables_floor(retention_floor())
    cut = target if floor is None else min(target, floor + 1)
    removed = _log_delete_before(cut) if cut > log_start else 0
    return RetentionOutcome(
        deleted_snapshots=deleted,
        log_start_offset=max(log_start, cut),
        deleted_records=removed,
        held_back_by=floor if cut < target else None,
    )


def _snapshots_delete(end_offsets: list[int]) -> None:
    if not end_offsets:
        return
    with transaction.atomic():
        MetadataSnapshot.objects.filter(end_offset__in=end_offsets).delete()
        MetadataSnapshotChunk.objects.filter(end_offset__in=end_offsets).delete()
    logger.info("metadata snapshots deleted by retention: %s", end_offsets)


def _log_delete_before(cut: int) -> int:
    """Delete the log's records before `cut`, DELETE_RECORDS per transaction, moving the log's
    start with each batch (a fetch that read the start before finds its records gone and reads
    the start again: controlplane.runtime.fetch_cache)."""
    removed = 0
    with retention_scope():
        while True:
            start = cluster_read().log_start_offset
            if start >= cut:
                return removed
            high = min(cut, start + DELETE_RECORDS)
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    'DELETE FROM cp_metadata_record WHERE "offset" >= %s AND "offset" < %s',
                    [start, high],
                )
                removed += cursor.rowcount
                # A batch that starts before the new start goes with it (a broker fetching
                # from the start reads the rest of it encoded from the rows).
                cursor.execute("DELETE FROM cp_kafka_batch WHERE base_offset < %s", [high])
                Cluster.objects.filter(pk=1, log_start_offset__lt=high).update(
                    log_start_offset=high
                )
            # The head's readers (the metadata fetch's head cache) read it again.
            notifier.publish_log_start(high)


# --- when one is due (the active controller's timer) ----------------------------------------


@dataclasses.dataclass
class SnapshotSchedule:
    """What the timer knows of the log since the latest snapshot: each new record is measured
    once (its JSON data's bytes), a bounded number per check."""

    latest_end: int | None = None  # the latest snapshot's end offset when last seen
    measured_to: int = -1  # the records up to here are counted in `bytes_since`
    bytes_since: int = 0
    since_ms: int = 0  # the latest snapshot's creation, or when this schedule started
    next_check_ms: int = 0
    sent_ms: int | None = None  # a task sent for the current latest snapshot

    def check(self, *, now: int, config: ConfigView) -> bool:
        """Whether a snapshot is due now."""
        cluster = cluster_read()
        head = cluster.last_offset
        latest = metadata_snapshot_latest()
        latest_end = latest.end_offset if latest is not None else cluster.log_start_offset
        if latest_end != self.latest_end:
            self.latest_end = latest_end
            self.measured_to = latest_end - 1
            self.bytes_since = 0
            self.since_ms = latest.created_ms if latest is not None else now
            self.sent_ms = None
        if head < latest_end:
            return False  # no record after the latest snapshot
        if latest is not None and now - latest.created_ms < SNAPSHOT_DUTY_CYCLE * latest.build_ms:
            return False  # building them never takes more than a share of a core
        if latest is None and cluster.log_start_offset > 0:
            return True  # the log was cut and no intact snapshot is left: brokers need one
        if self.measured_to < head:
            high = min(head, self.measured_to + MEASURE_RECORDS)
            self.bytes_since += log_bytes_between(after_offset=self.measured_to, up_to=high)
            self.measured_to = high
        interval = int(config.broker_value(MAX_INTERVAL_MS))
        return self.bytes_since >= int(config.broker_value(MAX_BYTES_BETWEEN)) or (
            interval > 0 and now - self.since_ms >= interval
        )

    def send_when_due(self, *, now: int, config: ConfigView, send: Callable[[], None]) -> bool:
        """Check (every CHECK_EVERY_MS) and send the task once when due; whether it was sent."""
        if now < self.next_check_ms:
            return False
        self.next_check_ms = now + CHECK_EVERY_MS
        if not self.check(now=now, config=config):
            return False
        if self.sent_ms is not None and now - self.sent_ms < RESEND_AFTER_MS:
            return False  # under way (or lost: sent again after RESEND_AFTER_MS)
        self.sent_ms = now
        send()
        return True


def log_bytes_between(*, after_offset: int, up_to: int) -> int:
    """The bytes of the JSON data of the records in (`after_offset`, `up_to`]."""
    size = (
        'octet_length("data"::text)'
        if connection.vendor == "postgresql"
        else 'length(CAST("data" AS BLOB))'
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT coalesce(sum({size}), 0) FROM cp_metadata_record WHERE "offset" > %s'
            ' AND "offset" <= %s',
            [after_offset, up_to],
        )
        (found,) = cursor.fetchone()
    return int(found)


_schedules: dict[str, SnapshotSchedule] = {}


def metadata_snapshot_when_due(runtime: Any) -> None:
    """The active controller's timer job: send the snapshot task when one is due."""
    schedule = _schedules.setdefault(runtime.node_id, SnapshotSchedule())
    schedule.send_when_due(
        now=now_ms(),
        config=config_view(),
        send=lambda: executor.executor().send_task(SNAPSHOT_TASK, long_running=True),
    )


def snapshot_state_reset() -> None:
    """Forget what the timer measured and which snapshots were checked (tests start from a
    clean database, where equal snapshots come again)."""
    _schedules.clear()
    snapshot_checks_reset()
