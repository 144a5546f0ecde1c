"""Incremental, exactly-once export of the metadata log and the audit trail to Parquet.

Each run appends what is new since the export's last commit (its watermark): metadata records
after the last exported offset, audit events after the last exported position. Offsets are
committed in order under the cluster row lock, so "after offset N up to the log end" never
skips one. Audit events come from many writers (the controller's commits, the web nodes'
refusals), whose ids are not committed in id order on PostgreSQL: there each row carries the id
of the transaction that wrote it (`txid`, a column default), and a run exports the rows of
transactions older than every transaction of this database still running, so a row that
commits later is never behind the watermark. SQLite has one writer at a time: ids are in
commit order there.

Files are written, then committed (audit.spark.storage): a run killed at any point and rerun
leaves no gap and no duplicate. Nothing secret is exported: sensitive config values are
redacted as the public metadata log shows them, and the audit trail holds names only.
"""

from __future__ import annotations

import dataclasses
import datetime
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
from controlplane.controller.config_schema import REDACTED, is_sensitive, registry_of
from controlplane.controller.configs.resources import SUPPORTED_RESOURCE_TYPES
from controlplane.controller.scram_records import SECRET_FIELDS, USER_SCRAM_CREDENTIAL_RECORD
from controlplane.runtime.lease import cluster_get_or_create, now_ms

logger = logging.getLogger("controlplane.audit.export")

BATCH_ROWS = 100_000
MS_PER_DAY = 86_400_000
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
ARROW_TYPES = {
    "long": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "string": pa.string(),
    "timestamp": pa.timestamp("ms", tz="UTC"),
}


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

    def batches(size: int) -> Iterator[list[tuple[Any, ...]]]:
        position = after
        while position < end:
            sql, params = _LOG_SQL[connection.vendor == "postgresql"]
            rows = _fetch(sql, [*params, position, end, size])
            if not rows:
                return
            position = rows[-1][0]
            yield rows

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
        horizon = _scalar(_PG_HORIZON)
        where, params = "txid >= %s AND txid < %s", [after, horizon]
    else:
        horizon = _scalar("SELECT coalesce(max(id), 0) FROM cp_audit_event")
        where, params = "id > %s AND id <= %s", [after, horizon]
    total = _scalar(f"SELECT count(*) FROM cp_audit_event WHERE {where}", params)

    def batches(size: int) -> Iterator[list[tuple[Any, ...]]]:
        last_id = 0
        while True:
            rows = _fetch(
                f"SELECT {_AUDIT_COLUMNS}, {_AUDIT_RESOURCE_SQL[postgres]} FROM cp_audit_event"
                f" WHERE {where} AND id > %s ORDER BY id LIMIT %s",
                [*params, last_id, size],
            )
            if not rows:
                return
            last_id = rows[-1][0]
            yield rows

    return Plan(
        AUDIT_EVENTS,
        total,
        batches,
        {"position": position, "value": max(horizon, after)},
        {"from_" + position: after, "to_" + position: horizon},
    )


# The oldest transaction of this database still in progress, else the next transaction id:
# every audit row of an older transaction is committed (or rolled back) and visible now.
# Transactions of other databases on the server are left out: they cannot write here, and a
# long one would hold the export back for nothing.
_PG_HORIZON = """
SELECT least(
    pg_snapshot_xmax(s.snap)::text::bigint,
    (SELECT min(x::text::bigint) FROM pg_snapshot_xip(s.snap) AS x
     WHERE x::xid IN (
        SELECT backend_xid FROM pg_stat_activity
        WHERE datname = current_database() AND backend_xid IS NOT NULL)))
FROM (SELECT pg_current_snapshot() AS snap) AS s
"""


def _scalar(sql: str, params: Sequence[Any] = ()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return int(cursor.fetchone()[0] or 0)


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows


def _log_sql(postgres: bool) -> tuple[str, list[Any]]:
    """A batch of records in METADATA_LOG's column order (but `time`), made fit to export in
    the database itself: each partition and topic record with its topic's name from the log's
    TopicRecord (deleted topics too), or from the topics table once retention cut that record
    from the log (a topic deleted since is then unnamed), a config's sensitive value redacted,
    a client quota
    named by its entity as describe-client-quotas names it. Each record's data is read as jsonb
    once (the log keeps it as json text: controlplane.models.JsonAsWritten), for the several
    keys taken from it."""
    sql = _PG if postgres else _SQLITE
    data, params = exported_data_sql(sql)
    sql_text = (
        'SELECT r."offset", r.record_type, r.controller_epoch, r.timestamp_ms, r.principal,'
        " r.client_id, r.client_host, r.request_id, r.broker_id,"
        f" r{sql.get('topic_id')}, COALESCE(t.name, live.name),"
        f" {sql.integer('r' + sql.get('partition_id'))},"
        f" CASE WHEN r.record_type = 'ClientQuotaRecord' THEN 'CLIENT_QUOTA'"
        f" ELSE r{sql.get('resource_type')} END,"
        f" CASE WHEN r.record_type = 'ClientQuotaRecord' THEN {sql.quota_entity}"
        f" ELSE r{sql.get('resource_name')} END,"
        f" {data}"
        f" FROM (SELECT {_LOG_COLUMNS}, {sql.jsonb('data')} AS data FROM cp_metadata_record"
        '  WHERE "offset" > %s AND "offset" <= %s ORDER BY "offset" LIMIT %s) r'
        " LEFT JOIN ("
        f"SELECT n{sql.get('topic_id')} AS id, n{sql.get('name')} AS name"
        " FROM cp_metadata_record n WHERE n.record_type = 'TopicRecord'"
        f") t ON t.id = r{sql.get('topic_id')}"
        f" LEFT JOIN cp_topic live ON live.topic_id = r{sql.get('topic_id')}"
        ' ORDER BY r."offset"'
    )
    return sql_text, params


_LOG_COLUMNS = (
    '"offset", record_type, controller_epoch, timestamp_ms, principal, client_id, client_host,'
    " request_id, broker_id"
)


def exported_data_sql(sql: _Dialect) -> tuple[str, list[Any]]:
    """The SQL of a record's exported data (`r.data` as text): a ConfigRecord of a sensitive
    key carries "(redacted)" for its value, a UserScramCredentialRecord for its salt and keys,
    as `redact_record_data` writes them."""
    safe_types, safe_keys = _not_sensitive()
    resource_type, key = f"r{sql.get('resource_type')}", f"r{sql.get('name')}"
    checks = [f"{resource_type} IN ({_marks(safe_types)})"]
    params: list[Any] = list(safe_types)
    for kind, names in safe_keys.items():
        checks.append(f"({resource_type} = %s AND {key} IN ({_marks(names)}))")
        params += [kind, *names]
    expression = (
        f"CASE WHEN r.record_type = '{USER_SCRAM_CREDENTIAL_RECORD}' THEN {sql.scram_redacted}"
        f" WHEN r.record_type = 'ConfigRecord' AND r{sql.get('value')} IS NOT NULL"
        f" AND NOT ({' OR '.join(checks)}) THEN {sql.redacted} ELSE {sql.text('r.data')} END"
    )
    return expression, params


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("%s" for _ in values) or "NULL"


def _not_sensitive() -> tuple[list[str], dict[str, list[str]]]:
    """What `is_sensitive` lets through, for the SQL above: resource types none of whose keys
    are sensitive, and the keys that are not sensitive of every other type (unknown keys are)."""
    types, keys = [], {}
    for resource_type in sorted(SUPPORTED_RESOURCE_TYPES):
        registry = registry_of(resource_type)
        if registry is None:
            if not is_sensitive(resource_type, "any.name"):
                types.append(resource_type)
            continue
        keys[resource_type] = sorted(n for n in registry if not is_sensitive(resource_type, n))
    return types, keys


@dataclasses.dataclass(frozen=True)
class _Dialect:
    """JSON in SQL, as each database spells it (`get` answers a suffix to a table alias)."""

    postgres: bool

    def jsonb(self, column: str) -> str:
        return f"{column}::jsonb" if self.postgres else column

    def get(self, name: str) -> str:
        return f".data->>'{name}'" if self.postgres else f".data->>'$.{name}'"

    def integer(self, expression: str) -> str:
        return f"({expression})::int" if self.postgres else f"CAST({expression} AS INTEGER)"

    def text(self, column: str) -> str:
        return f"{column}::text" if self.postgres else column

    @property
    def redacted(self) -> str:
        if self.postgres:
            return f"jsonb_set(r.data, '{{value}}', '\"{REDACTED}\"')::text"
        return f"json_set(r.data, '$.value', '{REDACTED}')"

    @property
    def scram_redacted(self) -> str:
        if self.postgres:
            hidden = json.dumps(dict.fromkeys(SECRET_FIELDS, REDACTED))
            return f"(r.data || '{hidden}'::jsonb)::text"
        pairs = ", ".join(f"'$.{field}', '{REDACTED}'" for field in SECRET_FIELDS)
        return f"json_set(r.data, {pairs})"

    @property
    def quota_entity(self) -> str:
        if self.postgres:
            return (
                "(SELECT string_agg((e->>0) || '=' || coalesce(e->>1, '<default>'), ','"
                " ORDER BY o)"
                " FROM jsonb_array_elements(r.data->'entity') WITH ORDINALITY AS q(e, o))"
            )
        return (
            "(SELECT group_concat(json_extract(value, '$[0]') || '='"
            " || coalesce(json_extract(value, '$[1]'), '<default>'), ',')"
            " FROM json_each(r.data, '$.entity'))"
        )


_PG, _SQLITE = _Dialect(True), _Dialect(False)


_LOG_SQL = {True: _log_sql(True), False: _log_sql(False)}
_AUDIT_RESOURCE_SQL = {
    True: (
        "resources->0->>'resource_type', resources->0->>'resource_name',"
        " jsonb_path_query_first(resources, '$[*] ? (@.resource_type == \"TOPIC\").resource_name')"
        " #>> '{}',"
        " (SELECT (b->>'resource_name')::int FROM jsonb_array_elements(resources) b"
        "  WHERE b->>'resource_type' = 'BROKER' AND b->>'resource_name' ~ '^[0-9]{1,9}$' LIMIT 1),"
        " resources::text"
    ),
    False: (
        "json_extract(resources, '$[0].resource_type'),"
        " json_extract(resources, '$[0].resource_name'),"
        " (SELECT json_extract(value, '$.resource_name') FROM json_each(resources)"
        "  WHERE json_extract(value, '$.resource_type') = 'TOPIC' LIMIT 1),"
        " (SELECT CAST(json_extract(value, '$.resource_name') AS INTEGER) FROM json_each(resources)"
        "  WHERE json_extract(value, '$.resource_type') = 'BROKER'"
        "  AND json_extract(value, '$.resource_name') GLOB '[0-9]*'"
        "  AND json_extract(value, '$.resource_name') NOT GLOB '*[^0-9]*' LIMIT 1),"
        " resources"
    ),
}
_AUDIT_COLUMNS = (
    "id, time_ms, principal, client_id, client_host, forwarding_principal, forwarding_host,"
    " forwarding_broker_id, api, outcome, error_code, http_status, request_id, first_offset,"
    " last_offset, duration_ms"
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
    """The table's rows by UTC day (rows come in time order, mostly one day per batch)."""
    days = pc.divide(table.column("time").cast(pa.int64()), MS_PER_DAY)
    for day in pc.unique(days).to_pylist():
        name = (EPOCH + datetime.timedelta(days=day)).strftime("%Y-%m-%d")
        yield name, table.filter(pc.equal(days, day))
