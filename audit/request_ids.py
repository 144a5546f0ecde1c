"""The audit trail's `RequestIdCollision` events: a principal's request that carried a request
id other principals had used (controlplane.runtime.request_ids).

Request ids belong to their principal, so the controller applied that request as one of its
own; the trail keeps one event per colliding request, once its batch committed:

- `principal`, `client_id`, `client_host`, `request_id`: the request that reused the id (for an
  Envelope the original client, with the forwarding broker in `forwarding_*`);
- `resources`: `API` (the RPC it called), then one `PRINCIPAL` per principal that used the id
  before it;
- `outcome` SUCCESS, `error_code` 0, no offsets: the request itself is audited as usual, in its
  own row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError

from audit.models import AuditEvent, Outcome
from audit.services import COLUMNS
from controlplane.runtime.bulk import bulk_upsert
from controlplane.runtime.lease import now_ms
from controlplane.runtime.request_ids import RequestIdCollision

logger = logging.getLogger("controlplane.audit")
REQUEST_ID_COLLISION = "RequestIdCollision"


def audit_request_id_collisions(collisions: Sequence[RequestIdCollision]) -> None:
    """One event per collision, all in one statement."""
    time_ms = now_ms()
    rows = [_row(c, time_ms) for c in collisions]
    try:
        bulk_upsert(
            table=AuditEvent._meta.db_table,
            columns=COLUMNS,
            rows=[
                [
                    json.dumps(row[c.name], separators=(",", ":")) if c.json else row[c.name]
                    for c in COLUMNS
                ]
                for row in rows
            ],
        )
    except DatabaseError:
        logger.exception("could not audit %d request id collision(s)", len(rows))


def _row(collision: RequestIdCollision, time_ms: int) -> dict[str, Any]:
    context, forwarding = collision.context, collision.forwarding
    return {
        "time_ms": time_ms,
        "principal": context.principal[:255],
        "client_id": context.client_id[:255],
        "client_host": context.client_host[:64],
        "forwarding_principal": "" if forwarding is None else forwarding.principal[:255],
        "forwarding_host": "" if forwarding is None else forwarding.host[:64],
        "forwarding_broker_id": None if forwarding is None else forwarding.broker_id,
        "api": REQUEST_ID_COLLISION,
        "resources": [
            {"resource_type": "API", "resource_name": collision.api, "error_code": 0},
            *(
                {"resource_type": "PRINCIPAL", "resource_name": holder, "error_code": 0}
                for holder in collision.holders
            ),
        ],
        "outcome": Outcome.SUCCESS.value,
        "error_code": 0,
        "http_status": 200,
        "request_id": context.request_id[:128],
        "first_offset": None,
        "last_offset": None,
        "duration_ms": 0.0,
    }
