"""Replay the metadata log and compare it with the state tables."""

from __future__ import annotations

from typing import Any

from django.db import connection

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data
from controlplane.models import MetadataRecord, MetadataSnapshot
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.log_rows import log_rows
from controlplane.runtime.projections import consistent_read, load_image
from controlplane.runtime.snapshot_format import SnapshotDamaged
from controlplane.runtime.snapshot_reads import metadata_snapshot_load


def image_from_log(through: int | None = None) -> tuple[MetadataImage, list[str]]:
    """The image the log describes (through offset `through`, else to its end), and any gaps
    in its offsets. A log that no longer starts at offset 0 (retention) is replayed from the
    latest intact snapshot it goes on from."""
    cluster = cluster_read()
    problems: list[str] = []
    image = MetadataImage(cluster_id=cluster.cluster_id)
    first = MetadataRecord.objects.order_by("offset").values_list("offset", flat=True).first()
    if first is not None and first > 0:
        image, problems = _image_from_snapshot(first, through)
    delta = MetadataDelta(image)
    rows = log_rows(("offset", "record_type", "data"), after=image.last_offset, through=through)
    for offset, record_type, data in rows:
        if offset != delta.next_offset:
            problems.append(f"gap in the log: expected offset {delta.next_offset}, found {offset}")
            delta.last_offset = offset - 1
        delta.replay(record_from_data(record_type, data))
    image.apply(delta)
    return image, problems


def _image_from_snapshot(first: int, through: int | None) -> tuple[MetadataImage, list[str]]:
    """The image of the latest intact snapshot the log goes on from (its end offset at or
    after the log's first record, and not past `through`, else the log's end), and what was
    wrong on the way: damaged snapshots (skipped, as the controller does), none to start from
    (the replay starts before the log's first record, a gap)."""
    cluster = cluster_read()
    problems: list[str] = []
    end = cluster.last_offset if through is None else through
    candidates = MetadataSnapshot.objects.filter(
        damaged=False, end_offset__gte=first, end_offset__lte=end + 1
    ).order_by("-end_offset")
    for snapshot in candidates:
        try:
            return metadata_snapshot_load(snapshot=snapshot).image(), problems
        except SnapshotDamaged as error:
            problems.append(str(error))
    problems.append(f"the log starts at offset {first} and no intact snapshot goes on from it")
    return MetadataImage(cluster_id=cluster.cluster_id), problems


def metadata_verify() -> list[str]:
    """Differences between the replayed log and the state tables; empty when they agree.

    Log, snapshots and tables are read in one snapshot of the database (REPEATABLE READ on
    PostgreSQL), as the standby loads its image: on a live cluster the controller commits
    while the log replays (at 100,000 partitions, for seconds), and tables read after the log
    would hold commits the replayed log does not, reported as the log and the tables
    disagreeing when each commit wrote both. The tables are compared with the log through
    their own offset: a commit's tables follow its log in a transaction of their own, and
    trail it while that runs (or until a controller taking over catches them up)."""
    with consistent_read():
        cluster = cluster_read()
        replayed, problems = image_from_log(through=cluster.projected_offset)
        stored = load_image(cluster.cluster_id, cluster.projected_offset)
        problems.extend(_differences("", replayed.as_comparable(), stored.as_comparable()))
        problems.extend(duplicate_writes())
    return problems


def duplicate_writes() -> list[str]:
    """Request ids a principal had applied more than once: records of the principal's id outside
    the one write the controller remembered for it (a log written before copies of a request id
    were deduplicated). Request ids belong to their principal: another principal's write with
    the same id is a write of its own, never a second one."""
    with connection.cursor() as cursor:
        cursor.execute(
            'SELECT r.principal, r.request_id, a.first_offset, a.last_offset, r."offset"'
            " FROM cp_metadata_record r JOIN cp_applied_request a"
            " ON a.request_id = r.request_id AND a.principal = r.principal"
            ' WHERE r."offset" < a.first_offset OR r."offset" > a.last_offset'
            ' ORDER BY r.principal, r.request_id, r."offset"'
        )
        rows = cursor.fetchall()
    again: dict[tuple[str, str, int, int], list[int]] = {}
    for principal, request_id, first, last, offset in rows:
        again.setdefault((principal, request_id, first, last), []).append(offset)
    return [
        f"request id {request_id!r} of {principal} was applied more than once: its write at "
        f"offsets {first}-{last}, and again at offset(s) {', '.join(map(str, offsets))}"
        for (principal, request_id, first, last), offsets in again.items()
    ]


def _differences(path: str, log: Any, tables: Any) -> list[str]:
    if isinstance(log, dict) and isinstance(tables, dict):
        found: list[str] = []
        for key in sorted(set(log) | set(tables), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in tables:
                found.append(f"{where}: in the log but missing from the state tables")
            elif key not in log:
                found.append(f"{where}: in the state tables but not in the log")
            else:
                found.extend(_differences(where, log[key], tables[key]))
        return found
    if log != tables:
        return [f"{path}: log says {log!r}, state tables say {tables!r}"]
    return []
