"""kill -9 of the active controller while a change of 10 % of the partitions is in flight; the
standby takes over. Timed: the lease's lapse to the new controller's first commit, and the kill
to an admin write acknowledged again. Checked: the change, retried with its request id, applied
exactly once."""

from __future__ import annotations

import datetime
import signal
import threading
import time
import uuid
from typing import Any

import httpx
import redis

from bench.replica_state import log
from bench.scale.cluster import ControllerSupervisor
from bench.scale.common import (
    ACTIVE,
    COMMIT_LINE,
    GOALS,
    LEASE_MS,
    STANDBY,
    Layout,
    activations,
    goal,
)
from devtools.stack import Stack, wait_for

NOT_ACKNOWLEDGED = {7, 41}  # REQUEST_TIMED_OUT, NOT_CONTROLLER: the client tries again
RETRY_S = 0.1


class Retried:
    """One admin write, sent with one request id until it is acknowledged (a retry is the same
    write: the controller applies it once)."""

    def __init__(
        self, admin: httpx.Client, path: str, body: dict[str, Any], request_id: str
    ) -> None:
        self.admin, self.path, self.body, self.request_id = admin, path, body, request_id
        self.attempts: list[str] = []
        self.answer: dict[str, Any] | None = None
        self.acknowledged_at: float | None = None
        self.started_at = 0.0
        self._thread: threading.Thread | None = None

    def _errors(self, answer: dict[str, Any]) -> set[int]:
        items = answer.get("topics") or answer.get("responses") or []
        return {int(item.get("error_code", 0)) for item in items} | {
            int(answer.get("error_code", 0) or 0)
        }

    def run(self, deadline_s: float) -> None:
        self.started_at = time.monotonic()
        while time.monotonic() - self.started_at < deadline_s:
            try:
                response = self.admin.post(
                    self.path, json=self.body, headers={"X-Request-ID": self.request_id}
                )
                answer = response.json()
            except (httpx.HTTPError, ValueError) as error:
                self.attempts.append(type(error).__name__)
                time.sleep(RETRY_S)
                continue
            codes = self._errors(answer) if isinstance(answer, dict) else {-1}
            if response.status_code == 200 and not codes & NOT_ACKNOWLEDGED:
                self.answer, self.acknowledged_at = answer, time.monotonic()
                self.attempts.append(f"HTTP 200 {sorted(codes)}")
                return
            self.attempts.append(f"HTTP {response.status_code} {sorted(codes)}")
            time.sleep(RETRY_S)

    def start(self, deadline_s: float) -> Retried:
        self._thread = threading.Thread(target=self.run, args=(deadline_s,), daemon=True)
        self._thread.start()
        return self

    def join(self, timeout_s: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)


def _log_time_ms(line_start: str) -> int | None:
    """The wall clock of a plain log line ('2026-01-02 03:04:05,678 INFO ...'), in ms."""
    try:
        stamp = datetime.datetime.strptime(line_start.lstrip("[")[:23], "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return None
    return int(stamp.timestamp() * 1000)


def _standby_log(stack: Stack) -> str:
    return (stack.logs / f"{STANDBY}.log").read_text(errors="replace")


def _activation_of(stack: Stack, epoch: int) -> dict[str, Any] | None:
    """The standby's activation line at `epoch`, with when it was logged and when its first
    commit line after it was (a commit of 1,000 records or more logs one)."""
    lines = iter(_standby_log(stack).splitlines())
    for line in lines:
        found = activations(line)
        if found and found[0]["epoch"] == epoch:
            first_commit = next((_log_time_ms(c) for c in lines if COMMIT_LINE.search(c)), None)
            return found[0] | {"logged_ms": _log_time_ms(line), "commit_logged_ms": first_commit}
    return None


def commit_seen(stack: Stack, *, deadline_s: float) -> str | None:
    """The statement of the active controller's commit, once PostgreSQL runs it (the first that
    writes the log); None when none was seen in time. Only the active controller writes
    these tables: the standby reads them."""
    import psycopg

    url = stack.env["DATABASE_URL"].replace("postgres://", "postgresql://")
    deadline = time.monotonic() + deadline_s
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT left(query, 60) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state = 'active'"
                " AND (query ILIKE 'COPY cp_metadata_record%%'"
                " OR query ILIKE 'INSERT INTO cp_metadata_record%%'"
                " OR query ILIKE 'INSERT INTO \"cp_metadata_record\"%%')"
            ).fetchone()
            if row is not None:
                return str(row[0])
            time.sleep(0.002)
    return None


def _applied(stack: Stack, request_id: str) -> dict[str, int]:
    """What the log and the applied-requests table hold of one request id."""
    rows = stack.sql(
        "SELECT record_type, count(*) FROM cp_metadata_record WHERE request_id = %s"
        " GROUP BY record_type",
        request_id,
    )
    applied = stack.sql("SELECT count(*) FROM cp_applied_request WHERE request_id = %s", request_id)
    return {**{str(r[0]): int(r[1]) for r in rows}, "applied_requests": int(applied[0][0])}


def kill_in_flight(
    stack: Stack,
    admin: httpx.Client,
    supervisor: ControllerSupervisor,
    *,
    layout: Layout,
    seconds_per_partition: float,
    kill_at: float,
    timeout_s: float,
) -> dict[str, Any]:
    in_flight = layout.in_flight()
    partitions = sum(n for _, n in in_flight)
    change = Retried(
        admin,
        "/api/v1/create-topics",
        {
            "topics": [
                {"name": name, "num_partitions": count, "replication_factor": 3}
                for name, count in in_flight
            ]
        },
        f"scale-in-flight-{uuid.uuid4().hex[:12]}",
    )
    expected_s = seconds_per_partition * partitions
    holder, epoch_before, _ = stack.lease()
    assert holder == ACTIVE, f"{ACTIVE} should hold the lease, not {holder!r}"
    when = "in its commit" if kill_at < 0 else f"after {kill_at * expected_s:.2f} s"
    log(
        f"  CreateTopics of {len(in_flight)} topic(s), {partitions} partitions; kill -9 of "
        f"{ACTIVE} {when} (expected ~{expected_s:.2f} s)"
    )
    change.start(timeout_s)
    seen = commit_seen(stack, deadline_s=2 * expected_s + 5) if kill_at < 0 else None
    if seen is None:
        time.sleep(max(0.0, change.started_at + abs(kill_at) * expected_s - time.monotonic()))
    queue = redis.Redis.from_url(stack.env["CP_REDIS_URL"])
    supervisor.killed.add(ACTIVE)
    stack.kill(ACTIVE, signal.SIGKILL)
    killed_at, killed_ms = time.monotonic(), time.time_ns() // 1_000_000
    stack.procs[ACTIVE].wait(10)
    waiting = int(queue.llen(stack.key_prefix + "controller:requests"))
    lease_expires_ms = int(stack.sql("SELECT lease_expires_ms FROM cp_cluster WHERE id = 1")[0][0])
    at_kill = _applied(stack, change.request_id)
    log(
        f"  killed; the change {'committed' if at_kill['applied_requests'] else 'not committed'}"
        f" at the kill, {waiting} event(s) waiting; the lease lapses in "
        f"{(lease_expires_ms - killed_ms) / 1000:.2f} s"
    )
    write = Retried(
        admin,
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "TOPIC",
                    "resource_name": layout.topics()[0][0],
                    "configs": [
                        {"name": "retention.ms", "config_operation": "SET", "value": "86400000"}
                    ],
                }
            ]
        },
        f"scale-after-kill-{uuid.uuid4().hex[:12]}",
    )
    write.run(timeout_s)
    change.join(timeout_s)
    holder, epoch_now, _ = stack.lease()
    epoch = epoch_before + 1  # the standby's takeover

    def first_commit_ms() -> int | None:
        rows = stack.sql(
            "SELECT min(timestamp_ms) FROM cp_metadata_record WHERE controller_epoch = %s", epoch
        )
        return None if rows[0][0] is None else int(rows[0][0])

    try:
        first_ms = wait_for(first_commit_ms, 60, "the new controller's first commit", every=0.2)
    except AssertionError:
        first_ms = None
    activation = _activation_of(stack, epoch)
    after = _applied(stack, change.request_id)
    expected_records = {"TopicRecord": len(in_flight), "PartitionRecord": partitions}
    once = all(after.get(kind) == n for kind, n in expected_records.items()) and (
        after["applied_requests"] == 1
    )
    acknowledged = None if write.acknowledged_at is None else write.acknowledged_at - killed_at
    failover = None if first_ms is None else (first_ms - lease_expires_ms) / 1000
    log(
        f"  {holder} active (epoch {epoch_before} -> {epoch_now}); first batch handled "
        f"{'-' if failover is None else f'{failover:.2f} s'} after the lease lapsed; admin write "
        f"acknowledged {'-' if acknowledged is None else f'{acknowledged:.2f} s'} after the kill"
    )
    return {
        "in_flight": {
            "rpc": "CreateTopics",
            "topics": len(in_flight),
            "partitions": partitions,
            "request_id": change.request_id,
            "killed_after_s": round(killed_at - change.started_at, 3),
            "killed_during": seen or "the timer",
            "expected_s": round(expected_s, 3),
            "events_waiting_at_kill": waiting,
            "committed_at_kill": bool(at_kill["applied_requests"]),
            "acknowledged_s_after_kill": None
            if change.acknowledged_at is None
            else round(change.acknowledged_at - killed_at, 3),
            "answer_error_codes": sorted(change._errors(change.answer)) if change.answer else None,
            "attempts": change.attempts,
            "records_after": after,
            "applied_exactly_once": once,
        },
        "lease_ms": LEASE_MS,
        "lease_lapsed_s_after_kill": round((lease_expires_ms - killed_ms) / 1000, 3),
        "new_controller": {"node": holder, "epoch": epoch_now, "epoch_before": epoch_before},
        "controller_exits_after_kill": [
            {**e, "at_s_after_kill": round((e["at_ms"] - killed_ms) / 1000, 3)}
            for e in supervisor.exits
            if e["at_ms"] >= killed_ms
        ],
        "later_activations": [a for a in activations(_standby_log(stack)) if a["epoch"] > epoch],
        "activation": activation,
        "lease_lapse_to_active_s": None
        if not activation or activation.get("logged_ms") is None
        else round((activation["logged_ms"] - lease_expires_ms) / 1000, 3),
        # the first records' stamp: when the new controller handled its first batch
        "lease_lapse_to_first_records_s": None if failover is None else round(failover, 3),
        # its log line: when that batch had committed (a large one; None for a small one)
        "lease_lapse_to_first_commit_s": None
        if not activation or activation.get("commit_logged_ms") is None
        else round((activation["commit_logged_ms"] - lease_expires_ms) / 1000, 3),
        "admin_write_acknowledged_s": None if acknowledged is None else round(acknowledged, 3),
        "admin_write_attempts": write.attempts,
        "admin_write_records": _applied(stack, write.request_id),
        "goals": {
            "admin_write_after_kill_s": goal(
                None if acknowledged is None else round(acknowledged, 3),
                GOALS["admin_write_after_kill_s"],
            ),
            "in_flight_applied_exactly_once": {"met": once},
        },
    }
