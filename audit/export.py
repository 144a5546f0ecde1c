"""Incremental, exactly-once export of the metadata log and the audit trail to Parquet.

Each run appends what is new since the export's last commit (its watermark): metadata records
after the last exported offset, audit events after the last exported position. Offsets are
committed in order under the cluster row lock, so "after offset N up to the log end" never
skips one. Audit events come from many writers (the controller's commits, the web nodes'
refusals), whose ids are not committed in id order on PostgreSQL: there each row carries the id
of the transaction that wrote it (`txid`, a column default), and a run exports the rows of
transactions older than every transaction still running (`pg_snapshot_xmin`), so a row that
commits later is never behind the watermark. SQLite has one writer at a time: ids are in
commit order there.

Files are written, then committed (audit.spark.storage): a run killed at any point and rerun
leaves no gap and no duplicate. Nothing secret is exported: sensitive config values are
redacted as the public metadata log shows them, and the audit trail holds names only.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.db import connection

from audit.spark import storage as store
from audit.spark.schema import AUDIT_EVENTS, METADATA_LOG, PARTITION_COLUMN, SCHEMA_VERSION, Dataset
from controlplane.controller.config_schema import redact_record_data
from controlplane.runtime.lease import cluster_get_or_create, now_ms

logger = logging.getLogger("controlplane.audit.export")

BATCH_ROWS = 100_000
ARROW_TYPES = {
    "long": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "string": pa.string(),
    "timestamp": pa.timestamp("ms", tz="UTC"),
}
# Records whose data is read in Python: redaction, and the client quota entity's name.
PARSED_RECORD_TYPES = frozenset({"ConfigRecord", "ClientQuotaRecord"})


@dataclasses.dataclass
class Progress:
    """How far a run is: what the terminal and the UI show."""

    phase: str = "starting"  # starting, exporting, placing, committing, done
    dataset: str = ""
    rows_done: int = 0
    rows_total: int = 0
    started: float = dataclasses.field(default_factory=time.monotonic)

    @property
    def elapsed_s(self) -> float:
        return max(time.monotonic() - self.started, 1e-9)

    @property
    def rows_per_second(self) -> float:
        return self.rows_done / self.elapsed_s

    @property
    def eta_s(self) -> float | None:
        rate = self.rows_per_second
        if self.rows_total <= self.rows_done:
            return 0.0
        return (self.rows_total - self.rows_done) / rate if rate > 0 else None

    @property
    def percent(self) -> float:
        return (
            100.0 if not self.rows_total else min(100.0, 100.0 * self.rows_done / self.rows_total)
        )

    def as_dict(self) -> dict[str, Any]:
        eta = self.eta_s
        return {
            "phase": self.phase,
            "dataset": self.dataset,
            "rows_done": self.rows_done,
            "rows_total": self.rows_total,
            "percent": round(self.percent, 1),
            "rows_per_second": round(self.rows_per_second, 1),
            "eta_seconds": None if eta is None else round(eta, 1),
        }


ProgressSink = Callable[[Progress], None]


@dataclasses.dataclass(frozen=True, slots=True)
class ExportResult:
    path: str
    commit: int | None  # None: nothing new, nothing committed
    rows: dict[str, int]
    files: int
    seconds: float

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    @property
    def rows_per_second(self) -> float:
        return self.total_rows / self.seconds if self.seconds > 0 else 0.0


def audit_export_run(
    *,
    target: str,
    spark: Any = None,
    on_progress: ProgressSink | None = None,
    batch_rows: int = BATCH_ROWS,
    owner: str = "export_audit",
) -> ExportResult:
    """Append what is new since the last commit at `target` (a path, or a Hadoop URI with a
    Spark session in `spark`), then commit it. Raises `store.ExportError` for a problem with
    the path, naming it."""
    started = time.monotonic()
    storage = store.open_storage(target, spark=spark)
    storage.check_writable()
    progress = Progress()
    report = on_progress or (lambda p: None)
    with store.export_lock(storage, owner=owner):
        _recover(storage)
        last = store.latest_commit(storage)
        cluster_id = cluster_get_or_create().cluster_id
        if last is not None and last.get("cluster_id") not in (None, cluster_id):
            raise store.ExportError(
                f"The export at {storage.root} belongs to cluster {last['cluster_id']}, "
                f"not to this one ({cluster_id}): export to another path."
            )
        number = (int(last["commit"]) + 1) if last else 1
        plans = [_log_plan(last), _audit_plan(last)]
        progress.rows_total = sum(p.rows for p in plans)
        progress.phase = "exporting"
        report(progress)
        staging = f"{store.TEMPORARY}/{number:010d}"
        written: dict[str, list[dict[str, Any]]] = {}
        for plan in plans:
            progress.dataset = plan.dataset.name
            written[plan.dataset.name] = _write_dataset(
                storage, plan, staging, number, batch_rows, progress, report
            )
        rows = {p.dataset.name: sum(f["rows"] for f in written[p.dataset.name]) for p in plans}
        if not any(rows.values()):
            storage.delete(store.TEMPORARY)
            progress.phase = "done"
            report(progress)
            return ExportResult(storage.root, None, rows, 0, time.monotonic() - started)
        progress.phase = "placing"
        report(progress)
        failpoint("after-staging")
        for n, item in enumerate(f for files in written.values() for f in files):
            storage.move(f"{staging}/{item['path']}", item["path"])
            if n == 0:
                failpoint("mid-placing")
        progress.phase = "committing"
        report(progress)
        failpoint("before-commit")
        commit = {
            "commit": number,
            "schema_version": SCHEMA_VERSION,
            "committed_ms": now_ms(),
            "cluster_id": cluster_id,
            "source": connection.vendor,
            "watermark": {p.dataset.name: p.watermark for p in plans},
            "datasets": {
                p.dataset.name: {
                    **p.range,
                    "rows": rows[p.dataset.name],
                    "files": written[p.dataset.name],
                }
                for p in plans
            },
        }
        if not storage.create_text(store.commit_path(number), json.dumps(commit, indent=1)):
            raise store.ExportError(f"Commit {number} at {storage.root} exists already.")
        failpoint("after-commit")
        storage.delete(store.TEMPORARY)
        progress.phase = "done"
        report(progress)
    count = sum(len(f) for f in written.values())
    return ExportResult(storage.root, number, rows, count, time.monotonic() - started)


def failpoint(name: str) -> None:
    """Die here, as kill -9 would, when CP_EXPORT_FAILPOINT names this point: how the tests put
    a crash exactly in the narrow windows of the commit protocol (random kills rarely land
    there). Unset in any deployment."""
    if os.environ.get("CP_EXPORT_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _recover(storage: store.Storage) -> None:
    """What a run that died left: files no commit names, and its staging. We hold the lock."""
    leftovers = store.uncommitted_files(storage)
    for path in leftovers:
        storage.delete(path)
    if leftovers:
        logger.warning(
            "export at %s: removed %d file(s) a run that did not commit left behind",
            storage.root,
            len(leftovers),
        )
    storage.delete(store.TEMPORARY)


# --- what to export ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    dataset: Dataset
    rows: int
    batches: Callable[[int], Iterator[list[tuple[Any, ...]]]]
    watermark: dict[str, Any]  # how far the source is exported once this commits
    range: dict[str, Any]  # what this run exports (kept in the commit, for people)


def _log_plan(last: dict[str, Any] | None) -> Plan:
    after = int(last["watermark"]["metadata_log"]["offset"]) if last else -1
    end = cluster_get_or_create().last_offset  # committed in order: nothing below is missing
    topics = _topic_names(end)

    def batches(size: int) -> Iterator[list[tuple[Any, ...]]]:
        position = after
        while position < end:
            rows = _fetch(_LOG_SQL[connection.vendor == "postgresql"], [position, end, size])
            if not rows:
                return
            position = rows[-1][0]
            yield [_log_row(row, topics) for row in rows]

    return Plan(
        METADATA_LOG,
        max(0, end - after),
        batches,
        {"offset": max(end, after)},
        {"from_offset": after + 1, "to_offset": end},
    )


def _audit_plan(last: dict[str, Any] | None) -> Plan:
    postgres = connection.vendor == "postgresql"
    position = "txid" if postgres else "id"
    mark = (last or {}).get("watermark", {}).get("audit_events", {})
    if mark and mark.get("position") != position:
        raise store.ExportError(
            f"The export's audit watermark is by {mark.get('position')}, this database's by "
            f"{position}: export to another path."
        )
    after = int(mark.get("value", 0))
    if postgres:
        horizon = _scalar("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        where, params = "txid >= %s AND txid < %s", [after, horizon]
    else:
        horizon = _scalar("SELECT coalesce(max(id), 0) FROM cp_audit_event")
        where, params = "id > %s AND id <= %s", [after, horizon]
    total = _scalar(f"SELECT count(*) FROM cp_audit_event WHERE {where}", params)

    def batches(size: int) -> Iterator[list[tuple[Any, ...]]]:
        last_id = 0
        while True:
            rows = _fetch(
                f"SELECT {_AUDIT_COLUMNS} FROM cp_audit_event WHERE {where} AND id > %s"
                " ORDER BY id LIMIT %s",
                [*params, last_id, size],
            )
            if not rows:
                return
            last_id = rows[-1][0]
            yield [_audit_row(row) for row in rows]

    return Plan(
        AUDIT_EVENTS,
        total,
        batches,
        {"position": position, "value": max(horizon, after)},
        {"from_" + position: after, "to_" + position: horizon},
    )


def _scalar(sql: str, params: Sequence[Any] = ()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return int(cursor.fetchone()[0] or 0)


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows


def _topic_names(end: int) -> dict[str, str]:
    """Every topic id the log named up to `end`, with its name (deleted topics too)."""
    sql = (
        "SELECT data->>'topic_id', data->>'name'"
        if connection.vendor == "postgresql"
        else "SELECT json_extract(data, '$.topic_id'), json_extract(data, '$.name')"
    )
    return dict(
        _fetch(
            f'{sql} FROM cp_metadata_record WHERE record_type = %s AND "offset" <= %s',
            ["TopicRecord", end],
        )
    )


def _log_sql(postgres: bool) -> str:
    def field(name: str, cast: str = "") -> str:
        if postgres:
            return f"(data->>'{name}'){cast}"
        return f"json_extract(data, '$.{name}')"

    data = "data::text" if postgres else "data"
    return (
        'SELECT "offset", record_type, controller_epoch, timestamp_ms, principal, client_id,'
        " client_host, request_id, broker_id,"
        f" {field('topic_id')}, {field('partition_id', '::int')},"
        f" {field('resource_type')}, {field('resource_name')}, {data}"
        ' FROM cp_metadata_record WHERE "offset" > %s AND "offset" <= %s'
        ' ORDER BY "offset" LIMIT %s'
    )


_LOG_SQL = {True: _log_sql(True), False: _log_sql(False)}
_AUDIT_COLUMNS = (
    "id, time_ms, principal, client_id, client_host, forwarding_principal, forwarding_host,"
    " forwarding_broker_id, api, outcome, error_code, http_status, request_id, first_offset,"
    " last_offset, duration_ms, resources"
)


def _log_row(row: tuple[Any, ...], topics: dict[str, str]) -> tuple[Any, ...]:
    """A metadata record as METADATA_LOG's columns (without `time`, added per batch)."""
    (offset, record_type, epoch, ts, principal, client, host, request, broker) = row[:9]
    topic_id, partition, resource_type, resource_name, data = row[9:]
    if record_type in PARSED_RECORD_TYPES:
        record = json.loads(data)
        if record_type == "ConfigRecord":
            data = json.dumps(redact_record_data(record_type, record), separators=(",", ":"))
        else:  # a client quota's entity, as describe-client-quotas names it
            resource_type = "CLIENT_QUOTA"
            resource_name = ",".join(
                f"{kind}={'<default>' if name is None else name}" for kind, name in record["entity"]
            )
    topic = topics.get(topic_id) if topic_id is not None else None
    return (
        offset,
        record_type,
        epoch,
        ts,
        principal,
        client,
        host,
        request,
        broker,
        topic_id,
        topic,
        partition,
        resource_type,
        resource_name,
        data,
    )


def _audit_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    resources = row[-1]
    named = json.loads(resources) if isinstance(resources, str) else resources
    first = named[0] if named else {}
    topic = next((r["resource_name"] for r in named if r.get("resource_type") == "TOPIC"), None)
    broker = next((r["resource_name"] for r in named if r.get("resource_type") == "BROKER"), None)
    return (
        *row[:-1],
        first.get("resource_type"),
        first.get("resource_name"),
        topic,
        int(broker)
        if broker is not None and str(broker).isascii() and str(broker).isdigit()
        else None,
        resources if isinstance(resources, str) else json.dumps(resources, separators=(",", ":")),
    )


# --- writing -----------------------------------------------------------------------------


def _write_dataset(
    storage: store.Storage,
    plan: Plan,
    staging: str,
    number: int,
    batch_rows: int,
    progress: Progress,
    report: ProgressSink,
) -> list[dict[str, Any]]:
    written: list[dict[str, Any]] = []
    time_source = "timestamp_ms" if plan.dataset is METADATA_LOG else "time_ms"
    with tempfile.TemporaryDirectory(prefix="cp-export-") as scratch:
        for batch in plan.batches(batch_rows):
            table = _arrow(plan.dataset, batch, time_source)
            for day, part in _by_day(table):
                name = f"part-{number:010d}-{len(written):05d}.parquet"
                path = f"{plan.dataset.name}/{PARTITION_COLUMN}={day}/{name}"
                local = Path(scratch, name)
                pq.write_table(part, local, compression="snappy")
                size = local.stat().st_size
                storage.put(local, f"{staging}/{path}")
                key = part.column(plan.dataset.key)
                written.append(
                    {
                        "path": path,
                        "rows": part.num_rows,
                        "bytes": size,
                        "first": pc.min(key).as_py(),
                        "last": pc.max(key).as_py(),
                    }
                )
            progress.rows_done += len(batch)
            report(progress)
    return written


def _arrow(dataset: Dataset, rows: list[tuple[Any, ...]], time_source: str) -> pa.Table:
    """Rows (the dataset's columns but `time`) as an Arrow table of the dataset's schema."""
    names = [c for c in dataset.names if c != "time"]
    columns = dict(zip(names, zip(*rows, strict=True), strict=True))
    arrays = []
    for column in dataset.columns:
        if column.name == "time":
            arrays.append(pa.array(columns[time_source], pa.int64()).cast(ARROW_TYPES["timestamp"]))
        else:
            arrays.append(pa.array(columns[column.name], ARROW_TYPES[column.type]))
    fields = [pa.field(c.name, ARROW_TYPES[c.type], nullable=c.nullable) for c in dataset.columns]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _by_day(table: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    days = pc.strftime(table.column("time"), format="%Y-%m-%d")
    for day in pc.unique(days).to_pylist():
        yield day, table.filter(pc.equal(days, day))
