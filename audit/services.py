"""Writing the audit trail. One row per admin request, allowed or denied; never a secret.

A request the controller applied is audited in the controller's own commit, in the transaction
that appends its records (`CommitAudit`, registered in the runtime's `COMMIT_AUDIT`), so a web
node that dies between the commit and its answer cannot leave a write without its row. Requests
refused before they reached the controller (authorization, validation) and those that wrote
nothing are audited by the node that answered them (`audit_executed`).
"""

from __future__ import annotations

import collections
import functools
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from prometheus_client import Counter

from audit.export import Progress, audit_export_run
from audit.models import AuditEvent, AuditExport, ExportState
from audit.resources import (
    Namers,
    broker_write,
    replica_state_report,
    request_outcome,
    request_resources,
)
from audit.spark.session import SparkUnavailable, spark_session
from audit.spark.storage import ExportError, is_uri
from controlplane.rpc import REGISTRY, Executed
from controlplane.runtime.bulk import Column, Write, prepared_upsert
from controlplane.runtime.conversation import AppliedWrite, Forwarding
from controlplane.runtime.executor import executor
from controlplane.runtime.lease import now_ms
from controlplane.services import BROKER_WRITES

logger = logging.getLogger("controlplane.audit")

# Controller writes that are not admin RPCs of the registry but are audited all the same: a
# broker's AlterReplicaState report (KIP-589) is audited when the controller applies it, and
# every broker lifecycle request that wrote records (controlplane.services.broker_call).
CONTROLLER_WRITE_NAMERS: dict[str, Namers] = {
    "AlterReplicaState": replica_state_report,
    **dict.fromkeys(BROKER_WRITES, broker_write),
}

COLUMNS = [
    Column("time_ms", "bigint"),
    Column("principal", "text"),
    Column("client_id", "text"),
    Column("client_host", "text"),
    Column("forwarding_principal", "text"),
    Column("forwarding_host", "text"),
    Column("forwarding_broker_id", "int"),
    Column("api", "text"),
    Column("resources", "text", json=True),
    Column("outcome", "text"),
    Column("error_code", "int"),
    Column("http_status", "smallint"),
    Column("request_id", "text"),
    Column("first_offset", "bigint"),
    Column("last_offset", "bigint"),
    Column("duration_ms", "float8"),
]


def _row(
    *,
    time_ms: int,
    api: str,
    namers: Namers,
    principal: str,
    client_id: str,
    client_host: str,
    request_id: str,
    http_status: int,
    body: Any,
    answer: Any,
    notes: dict[str, Any],
    first_offset: int | None,
    last_offset: int | None,
    forwarding: Forwarding | None,
    duration_ms: float,
) -> dict[str, Any]:
    """One audit row, in COLUMNS order, with its resources as a list (JSON on the way in)."""
    resources = request_resources(namers, body, answer, notes)
    outcome, error_code = request_outcome(http_status, answer, resources)
    return {
        "time_ms": time_ms,
        "principal": principal[:255],
        "client_id": client_id[:255],
        "client_host": client_host[:64],
        "forwarding_principal": forwarding.principal[:255] if forwarding else "",
        "forwarding_host": forwarding.host[:64] if forwarding else "",
        "forwarding_broker_id": forwarding.broker_id if forwarding else None,
        "api": api,
        "resources": resources,
        "outcome": outcome,
        "error_code": error_code,
        "http_status": http_status,
        "request_id": request_id[:128],
        "first_offset": first_offset,
        "last_offset": last_offset,
        "duration_ms": round(duration_ms, 3),
    }


def _log(row: dict[str, Any]) -> None:
    forwarded = row["forwarding_principal"]
    logger.info(
        "%s %s by %s%s from %s: %s (error %d), offsets %s-%s",
        row["api"],
        ", ".join(f"{r['resource_type']}:{r['resource_name']}" for r in row["resources"][:10]),
        row["principal"],
        f" via {forwarded}" if forwarded else "",
        row["client_host"],
        row["outcome"],
        row["error_code"],
        row["first_offset"],
        row["last_offset"],
    )


def _encoded(row: dict[str, Any]) -> list[Any]:
    return [
        json.dumps(row[c.name], separators=(",", ":")) if c.json else row[c.name] for c in COLUMNS
    ]


def audit_event_record(*, time_ms: int | None = None, **fields: Any) -> None:
    """Audit one request on the node that answered it (see `_row` for the fields)."""
    row = _row(time_ms=now_ms() if time_ms is None else time_ms, **fields)
    if row["outcome"] == "DENIED" and not DENIALS.audit(row["client_host"]):
        return  # counted: an address past its bound of audited denials this minute
    with connection.cursor() as cursor:  # one plain INSERT: this runs on every admin request
        cursor.execute(_insert_sql(), _encoded(row))
        if cursor.rowcount == 0:
            return  # another copy of this request id answered the same write: audited once
    _log(row)


def audit_executed(executed: Executed) -> None:
    """The audit trail's part of `controlplane.rpc.execute`: every executed admin request the
    controller did not audit in its commit."""
    caller, answer, trail = executed.caller, executed.answer, executed.trail
    if trail.audited:
        return  # written in the commit of the request's records
    try:
        audit_event_record(
            api=executed.spec.name,
            namers=executed.spec.resources,
            principal=caller.name,
            client_id=caller.client_id,
            client_host=caller.host,
            request_id=caller.request_id,
            http_status=answer.status,
            body=executed.body,
            answer=answer.data,
            notes=trail.notes,
            first_offset=trail.first_offset,
            last_offset=trail.last_offset,
            forwarding=caller.forwarding,
            duration_ms=executed.duration_ms,
        )
    except DatabaseError:
        logger.exception("could not write the audit event of %s", executed.spec.name)


class DeniedRequests:
    """Denied requests are audited, up to `per_minute` rows per address a minute; past it each
    is counted (`kafka_controlplane_audit_denials_not_audited_total`) and the address named
    once in the log, so that a flood of refused requests (1,000 denied CreateAcls from
    ANONYMOUS in 1.85 s) cannot fill the audit trail. Per process."""

    def __init__(self, per_minute: int = 100) -> None:
        self.per_minute = per_minute
        self._lock = threading.Lock()
        self._minute = 0
        self._counts: collections.Counter[str] = collections.Counter()

    def audit(self, host: str) -> bool:
        minute = now_ms() // 60_000
        with self._lock:
            if minute != self._minute:
                self._minute, self._counts = minute, collections.Counter()
            self._counts[host] += 1
            count = self._counts[host]
        if count <= self.per_minute:
            return True
        DENIALS_NOT_AUDITED.inc()
        if count == self.per_minute + 1:
            logger.warning(
                "more than %d denied requests from %s this minute: the rest are counted, not "
                "audited (kafka_controlplane_audit_denials_not_audited_total)",
                self.per_minute,
                host,
            )
        return False

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


DENIALS_NOT_AUDITED = Counter(
    "kafka_controlplane_audit_denials_not_audited",
    "Denied requests counted but not audited: their address passed its bound this minute",
)
DENIALS = DeniedRequests()


class CommitAudit:
    """The audit rows of the requests a commit applies, written in that commit."""

    def prepared(self, writes: Sequence[AppliedWrite], timestamp: int) -> Write:
        rows = [_commit_row(w, timestamp) for w in writes if w.audit is not None]
        insert = prepared_upsert(
            table=AuditEvent._meta.db_table, columns=COLUMNS, rows=[_encoded(r) for r in rows]
        )
        if not rows:
            return insert

        def log_rows() -> None:
            for row in rows:
                _log(row)

        def write() -> None:
            insert()
            transaction.on_commit(log_rows)

        return write


def _commit_row(write: AppliedWrite, timestamp: int) -> dict[str, Any]:
    audit, context = write.audit, write.context
    assert audit is not None  # only the writes that carry an audit envelope are rowed
    return _row(
        time_ms=timestamp,
        api=audit.rpc,
        namers=_namers_of(audit.rpc, write.api),
        principal=context.principal,
        client_id=context.client_id,
        client_host=context.client_host,
        request_id=context.request_id,
        http_status=200,  # a request that committed was processed: per-item errors only
        body=dict(write.payload),
        answer=_with_refused(write.answer.response, audit.refused),
        notes=dict(write.answer.notes),
        first_offset=write.first_offset,
        last_offset=write.last_offset,
        forwarding=audit.forwarding,
        duration_ms=float(max(0, timestamp - audit.started_ms)),
    )


def _namers_of(rpc: str, controller_api: str) -> Namers:
    """How the audit trail names a request's resources: its RPC's (the registry's, or the
    house's own RPCs such as the mirror's), else the controller write's. Never a reason for a
    commit to fail: an RPC nobody taught it names no resources (and says so in the log)."""
    spec = REGISTRY.get(rpc)
    if spec is not None:
        return spec.resources
    if controller_api in CONTROLLER_WRITE_NAMERS:
        return CONTROLLER_WRITE_NAMERS[controller_api]
    logger.warning("no resource names for %s in the audit trail", rpc)
    return lambda body, answer, top, notes: []


def _with_refused(
    response: dict[str, Any], refused: Mapping[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """The controller's answer with the items the sending node refused before the call: the
    whole answer the client gets, as far as the audit trail names it."""
    answer = dict(response)
    for key, items in refused.items():
        if isinstance(items, list):
            answer[key] = [*(answer.get(key) or []), *items]
    return answer


@functools.cache
def _insert_sql() -> str:
    json_value = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    values = ", ".join(json_value if c.json else "%s" for c in COLUMNS)
    # A second copy of an applied request id (cp_audit_one_row_per_write) adds no row.
    return (
        f"INSERT INTO {AuditEvent._meta.db_table} ({', '.join(c.name for c in COLUMNS)})"
        f" VALUES ({values}) ON CONFLICT DO NOTHING"
    )


# --- export runs (the API's and the UI's POST /api/v1/audit-exports, the periodic job) ------

PROGRESS_EVERY_S = 0.5  # a running export writes its progress at most this often
STALLED_MS = 300_000  # a RUNNING export whose progress stood still this long has died


EXPORT_TASK = "audit.tasks.export_audit_trail"
PERIODIC_EXPORTER = "User:controller"  # who the periodic export runs as, in the UI's list


def audit_export_start(*, requested_by: str, path: str | None = None) -> AuditExport:
    """An export of the audit data to `path` (default CP_AUDIT_EXPORT_PATH) as a background job
    (Celery; a thread embedded); the one already under way to that path when there is one."""
    export, created = audit_export_create(requested_by=requested_by, path=path)
    if created:
        executor().send_task(EXPORT_TASK, export.pk, long_running=True)
    return export


def audit_export_create(*, requested_by: str, path: str | None = None) -> tuple[AuditExport, bool]:
    """A new waiting export to `path`, or (False) the one already under way there."""
    target = path or str(settings.CP_AUDIT_EXPORT_PATH)
    running = audit_export_running(path=target)
    if running is not None:
        return running, False
    export = AuditExport.objects.create(
        path=target,
        requested_by=requested_by,
        created_ms=now_ms(),
        progress={**Progress().as_dict(), "phase": "waiting"},
    )
    return export, True


def audit_export_running(*, path: str) -> AuditExport | None:
    """The export waiting or running to `path`; one that stalled is marked FAILED first."""
    export = AuditExport.objects.filter(
        path=path, state__in=[ExportState.PENDING, ExportState.RUNNING]
    ).first()
    if export is None:
        return None
    heard_ms = int(export.progress.get("updated_ms") or export.started_ms or export.created_ms)
    if now_ms() - heard_ms > STALLED_MS:
        AuditExport.objects.filter(pk=export.pk).update(
            state=ExportState.FAILED,
            finished_ms=now_ms(),
            message="The worker running this export stopped before it finished.",
        )
        return None
    return export


def audit_export_execute(*, export_id: int) -> AuditExport:
    """Run the export `export_id`, keeping its progress, state and outcome."""
    export = AuditExport.objects.get(pk=export_id)
    AuditExport.objects.filter(pk=export_id).update(state=ExportState.RUNNING, started_ms=now_ms())
    last_write = [0.0]

    def keep(progress: Progress) -> None:
        if progress.phase == "exporting" and time.monotonic() - last_write[0] < PROGRESS_EVERY_S:
            return
        last_write[0] = time.monotonic()
        AuditExport.objects.filter(pk=export_id).update(
            progress={**progress.as_dict(), "updated_ms": now_ms()}
        )

    outcome: dict[str, Any]
    try:
        spark = spark_session(settings.CP_SPARK_MASTER) if is_uri(export.path) else None
        result = audit_export_run(
            target=export.path, spark=spark, on_progress=keep, owner=f"export {export_id}"
        )
    except (ExportError, SparkUnavailable) as error:
        outcome = {"state": ExportState.FAILED, "message": str(error)}
    except Exception as error:  # recorded for whoever follows it; the worker goes on
        logger.exception("audit export %d failed", export_id)
        outcome = {"state": ExportState.FAILED, "message": f"Unexpected error: {error}"}
    else:
        outcome = {"state": ExportState.SUCCEEDED, "commit": result.commit, "rows": result.rows}
    AuditExport.objects.filter(pk=export_id).update(finished_ms=now_ms(), **outcome)
    return AuditExport.objects.get(pk=export_id)


def audit_export_periodic() -> str:
    """The periodic export (Celery beat; the controller's timer embedded), run here and now."""
    export, created = audit_export_create(requested_by=PERIODIC_EXPORTER)
    if not created:
        return f"export {export.pk} to {export.path} is under way"
    return str(audit_export_execute(export_id=export.pk).state)
