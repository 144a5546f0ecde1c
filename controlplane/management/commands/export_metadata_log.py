"""`manage.py export_metadata_log DIR`: this controller's metadata log as a Kafka log segment.

Writes `DIR/__cluster_metadata-0/<base offset, 20 digits>.log`, the records in Kafka's KRaft
format (controlplane.controller.kraft), which Kafka's own tools read:

    python -m stock_kafka run-class kafka.tools.DumpLogSegments --cluster-metadata-decoder \\
        --files DIR/__cluster_metadata-0/00000000000000000000.log
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.controller.kraft import (
    DEFAULT_METADATA_VERSION,
    METADATA_PARTITION_DIR,
    METADATA_VERSIONS,
    BrokerDirectories,
    KafkaLogEncoder,
    LogEntry,
    segment_file_name,
)
from controlplane.controller.kraft.log import DEFAULT_MAX_BATCH_RECORDS
from controlplane.controller.records import Record, UnknownRecordType, record_from_data
from controlplane.models import MetadataRecord
from controlplane.runtime.snapshot_format import SnapshotDamaged
from controlplane.runtime.snapshot_reads import metadata_snapshot_get, metadata_snapshot_load

READ_CHUNK = 5000
PROGRESS_EVERY_S = 2.0


class Command(BaseCommand):
    help = (
        "Write the metadata log as a Kafka log segment (DIR/__cluster_metadata-0/*.log) in "
        "KRaft's record format, readable by kafka-dump-log --cluster-metadata-decoder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", help="where __cluster_metadata-0/ is written")
        parser.add_argument(
            "--metadata-version",
            type=int,
            default=None,
            choices=sorted(METADATA_VERSIONS),
            metavar="LEVEL",
            help=(
                "the metadata.version level records are written at until the log's own "
                "FeatureLevelRecord for metadata.version names one "
                f"(default {DEFAULT_METADATA_VERSION}, 4.0-IV3, or the snapshot's the log "
                "goes on from)"
            ),
        )
        parser.add_argument(
            "--max-batch-records",
            type=int,
            default=DEFAULT_MAX_BATCH_RECORDS,
            help=f"records per batch at most ({DEFAULT_MAX_BATCH_RECORDS})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        first = MetadataRecord.objects.order_by("offset").values_list("offset", flat=True).first()
        if first is None:
            raise CommandError("The metadata log is empty: nothing to export.")
        directories, level = self._state_at(first)
        if options["metadata_version"] is not None:
            level = options["metadata_version"]
        encoder = KafkaLogEncoder(
            level, directories=directories, max_batch_records=options["max_batch_records"]
        )
        folder = Path(options["directory"]) / METADATA_PARTITION_DIR
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / segment_file_name(first)
        partial = path.with_suffix(".log.partial")
        progress = _Progress(self.stderr)
        batches = size = 0
        with partial.open("wb") as segment:
            for batch in encoder.batches(progress.counted(self._entries(first))):
                segment.write(batch.data)
                batches += 1
                size += len(batch.data)
        os.replace(partial, path)
        progress.done()
        untwinned = ", ".join(f"{n} {t}" for t, n in sorted(progress.without_type.items()))
        self.stdout.write(
            f"{path}: {progress.count} records (offsets {first}-{first + progress.count - 1}) "
            f"in {batches} batches, {size} bytes"
            + (f"; records of unknown types served as NoOpRecord: {untwinned}" if untwinned else "")
        )

    def _state_at(self, first: int) -> tuple[BrokerDirectories, int]:
        """The registrations and metadata.version where the log starts: nothing before offset
        0; after retention, the snapshot the log goes on from (its end is the log's start)."""
        if first == 0:
            return BrokerDirectories(), DEFAULT_METADATA_VERSION
        snapshot = metadata_snapshot_get(end_offset=first)
        if snapshot is None:
            self.stderr.write(
                f"No snapshot ends at offset {first}, where the log starts: the registrations "
                "before it are unknown (their replicas' directories are UNASSIGNED)"
            )
            return BrokerDirectories(), DEFAULT_METADATA_VERSION
        try:
            image = metadata_snapshot_load(snapshot=snapshot).image()
        except SnapshotDamaged as error:
            self.stderr.write(f"The snapshot at {first} is damaged ({error}): starting blank")
            return BrokerDirectories(), DEFAULT_METADATA_VERSION
        directories = BrokerDirectories(
            {b.broker_id: (b.epoch, b.log_dirs) for b in image.brokers.values()}
        )
        level = getattr(image, "metadata_version", None) or DEFAULT_METADATA_VERSION
        return directories, level

    def _entries(self, first: int) -> Iterator[tuple[LogEntry, str | None]]:
        rows = (
            MetadataRecord.objects.filter(offset__gte=first)
            .order_by("offset")
            .values_list("offset", "controller_epoch", "timestamp_ms", "record_type", "data")
        )
        for offset, epoch, timestamp_ms, record_type, data in rows.iterator(chunk_size=READ_CHUNK):
            try:
                record = record_from_data(record_type, data)
                unknown = None
            except UnknownRecordType:
                record, unknown = Record(), record_type  # no twin known: a NoOpRecord
            yield LogEntry(offset, epoch, timestamp_ms, record), unknown


class _Progress:
    """Counts the records going by; every few seconds says how far the export is."""

    def __init__(self, stderr: Any) -> None:
        self.stderr = stderr
        self.count = 0
        self.without_type: dict[str, int] = {}
        self.started = self.last = time.monotonic()

    def counted(self, entries: Iterator[tuple[LogEntry, str | None]]) -> Iterator[LogEntry]:
        for entry, unknown_type in entries:
            self.count += 1
            if unknown_type is not None:
                self.without_type[unknown_type] = self.without_type.get(unknown_type, 0) + 1
            now = time.monotonic()
            if now - self.last >= PROGRESS_EVERY_S:
                self.last = now
                self.stderr.write(f"... {self.count} records, up to offset {entry.offset}")
            yield entry

    def done(self) -> None:
        if self.last != self.started:
            elapsed = time.monotonic() - self.started
            self.stderr.write(f"{self.count} records exported in {elapsed:.1f} s")
