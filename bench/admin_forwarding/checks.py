"""The checks after the load: one ConfigRecord per acknowledged write, forwarded writes audited
as the client, the commits the writes took."""

from __future__ import annotations

import statistics
from typing import Any

from bench.admin_forwarding.common import latency_summary
from devtools.stack import Stack


def commits_of(stack: Stack, request_ids: list[str]) -> dict[str, Any]:
    """Group commit: how many commits the phase's writes took. Every record of one commit has
    the commit's timestamp; two commits in the same millisecond count as one here."""
    if not request_ids:
        return {}
    rows = stack.sql(
        "SELECT timestamp_ms, count(*) FROM cp_metadata_record "
        "WHERE record_type = 'ConfigRecord' AND request_id = ANY(%s) GROUP BY timestamp_ms",
        request_ids,
    )
    sizes = [int(r[1]) for r in rows]
    return {
        "commits": len(sizes),
        "events_per_commit_mean": round(statistics.fmean(sizes), 2) if sizes else 0,
        "events_per_commit_max": max(sizes, default=0),
    }


def log_check(stack: Stack, since_offset: int, acknowledged: list[str]) -> dict[str, Any]:
    """Every acknowledged write left exactly one ConfigRecord, and no record is unaccounted for."""
    rows = stack.sql(
        "SELECT request_id, count(*) FROM cp_metadata_record "
        'WHERE record_type = %s AND "offset" > %s GROUP BY request_id',
        "ConfigRecord",
        since_offset,
    )
    per_request = {str(r[0]): int(r[1]) for r in rows}
    head = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])
    acked = set(acknowledged)
    records = sum(per_request.values())
    missing = sorted(acked - per_request.keys())
    duplicated = sorted(r for r, n in per_request.items() if n > 1)
    unacknowledged = sorted(per_request.keys() - acked)
    return {
        "offsets": {"after": since_offset, "head": head, "written": head - since_offset},
        "config_records_written": records,
        "acknowledged_writes": len(acknowledged),
        "acknowledged_request_ids_unique": len(acked) == len(acknowledged),
        "acknowledged_without_record": len(missing),
        "request_ids_with_more_than_one_record": len(duplicated),
        "records_without_acknowledgement": len(unacknowledged),
        "examples": {
            "missing": missing[:5],
            "duplicated": duplicated[:5],
            "unacknowledged": unacknowledged[:5],
        },
        "exactly_one_record_per_acknowledged_write": (
            records == len(acknowledged) == len(acked) and not missing and not duplicated
        ),
    }


def audit_check(stack: Stack, since_id: int, expected: dict[int, int]) -> dict[str, Any]:
    """Forwarded writes are audited as the original client (User:admin), with the broker that
    forwarded them: at least one SUCCESS event per acknowledged write, by broker id."""
    rows = stack.sql(
        "SELECT principal, forwarding_principal, forwarding_broker_id, outcome, count(*) "
        "FROM cp_audit_event WHERE id > %s AND api = %s AND forwarding_broker_id IS NOT NULL "
        "GROUP BY 1, 2, 3, 4 ORDER BY 3, 4",
        since_id,
        "IncrementalAlterConfigs",
    )
    groups = [
        {
            "principal": r[0],
            "forwarding_principal": r[1],
            "forwarding_broker_id": r[2],
            "outcome": r[3],
            "events": int(r[4]),
        }
        for r in rows
    ]
    audited = {
        broker: sum(
            g["events"]
            for g in groups
            if g["forwarding_broker_id"] == broker
            and g["principal"] == "User:admin"
            and g["outcome"] == "SUCCESS"
        )
        for broker in expected
    }
    return {
        "forwarded_events": groups,
        "acknowledged_forwarded_writes_by_broker": {str(b): n for b, n in expected.items()},
        "audited_success_as_user_admin_by_broker": {str(b): n for b, n in audited.items()},
        "every_acknowledged_forwarded_write_audited": all(
            audited[b] >= n for b, n in expected.items()
        ),
        "audited_equals_acknowledged": audited == expected,
    }


def audit_durations(stack: Stack, since_id: int, run_id: str, tag: str) -> dict[str, Any]:
    """The server's own time per request of one phase (the view, the controller call
    included: the audit trail's duration_ms), by way."""
    out = {}
    for name in ("direct", "envelope"):
        rows = stack.sql(
            "SELECT duration_ms FROM cp_audit_event WHERE id > %s AND request_id LIKE %s "
            "AND outcome = 'SUCCESS'",
            since_id,
            f"bench-{run_id}-{name[0]}-{tag}-%",
        )
        out[name] = latency_summary([float(r[0]) for r in rows])
    return out
