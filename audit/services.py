"""Writing the audit trail. One row per admin request, allowed or denied; never a secret."""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from django.db import DatabaseError, connection

from audit.models import AuditEvent
from audit.resources import Namers, request_outcome, request_resources
from controlplane.rpc import Executed, Forwarding
from controlplane.runtime.lease import now_ms

logger = logging.getLogger("controlplane.audit")


def audit_event_record(
    *,
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
) -> None:
    resources = request_resources(namers, body, answer, notes)
    outcome, error_code = request_outcome(http_status, answer, resources)
    row: dict[str, Any] = {
        "time_ms": now_ms(),
        "principal": principal[:255],
        "client_id": client_id[:255],
        "client_host": client_host[:64],
        "forwarding_principal": forwarding.principal[:255] if forwarding else "",
        "forwarding_host": forwarding.host[:64] if forwarding else "",
        "forwarding_broker_id": forwarding.broker_id if forwarding else None,
        "api": api,
        "resources": json.dumps(resources, separators=(",", ":")),
        "outcome": outcome,
        "error_code": error_code,
        "http_status": http_status,
        "request_id": request_id[:128],
        "first_offset": first_offset,
        "last_offset": last_offset,
        "duration_ms": round(duration_ms, 3),
    }
    with connection.cursor() as cursor:  # one plain INSERT: this runs on every admin request
        cursor.execute(_insert_sql(tuple(row)), list(row.values()))
        if cursor.rowcount == 0:
            return  # another copy of this request id answered the same write: audited once
    logger.info(
        "%s %s by %s%s from %s: %s (error %d), offsets %s-%s",
        api,
        ", ".join(f"{r['resource_type']}:{r['resource_name']}" for r in resources[:10]),
        principal,
        f" via {forwarding.principal}" if forwarding else "",
        client_host,
        outcome,
        error_code,
        first_offset,
        last_offset,
    )


def audit_executed(executed: Executed) -> None:
    """The audit trail's part of `controlplane.rpc.execute`: every executed admin request."""
    caller, answer, notes = executed.caller, executed.answer, executed.notes
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
            notes=notes.private,
            first_offset=notes.first_offset,
            last_offset=notes.last_offset,
            forwarding=caller.forwarding,
            duration_ms=executed.duration_ms,
        )
    except DatabaseError:
        logger.exception("could not write the audit event of %s", executed.spec.name)


@functools.cache
def _insert_sql(columns: tuple[str, ...]) -> str:
    json_value = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    values = ", ".join(json_value if name == "resources" else "%s" for name in columns)
    # A second copy of an applied request id (cp_audit_one_row_per_write) adds no row.
    return (
        f"INSERT INTO {AuditEvent._meta.db_table} ({', '.join(columns)}) VALUES ({values})"
        " ON CONFLICT DO NOTHING"
    )
