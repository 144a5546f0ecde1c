"""One failure per size, fanned out to the followers, and the run's report."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import statistics
import sys
import time
from collections.abc import Iterable
from typing import Any

import httpx

from bench.cpu import CpuTrail
from bench.fanout.common import (
    ACCEPT,
    ALL_BROKERS_GOAL_S,
    COMMIT_GROWTH_GOAL,
    FAILING_BROKERS,
    MAX_BODY_BYTES,
    METADATA_PATH,
    SERVER_MAX_RECORDS,
    SLOWEST_TO_FIRST_GOAL,
    TOPIC_PARTITIONS,
)
from bench.fanout.followers import FollowerFleet
from bench.fanout.heartbeat_shapes import HeartbeatShapeProcess
from bench.fanout.probes import fencing_held_off, start_probes, timer_worst_lag_ms
from bench.replica_state import (
    assigned,
    bearer_client,
    brokers_unfenced,
    controller_commits,
    log,
)
from bench.verify import verify_stack
from devtools.stack import WORKER_CLASS, Stack, server_description, wait_for

# --- The run ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Failure:
    """One size: a broker leading `partitions` partitions, in topics of 10,000."""

    partitions: int
    broker_id: int
    topic_ids: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> id
    create_s: float = 0.0

    def topic_sizes(self) -> list[tuple[str, int]]:
        sizes: list[tuple[str, int]] = []
        left = self.partitions
        while left > 0:
            sizes.append((f"led-by-{self.broker_id}-{len(sizes)}", min(left, TOPIC_PARTITIONS)))
            left -= TOPIC_PARTITIONS
        return sizes


def create_topics(admin: httpx.Client, failure: Failure, brokers: int) -> None:
    """One CreateTopics per topic, the failed broker leading every partition."""
    started = time.perf_counter()
    for name, partitions in failure.topic_sizes():
        topic = {"name": name, "assignments": assigned(partitions, failure.broker_id, brokers)}
        answer = admin.post("/api/v1/create-topics", json={"topics": [topic]}).json()["topics"][0]
        if answer["error_code"] != 0:
            raise SystemExit(f"create-topics failed: {answer}")
        failure.topic_ids[name] = answer["topic_id"]
    failure.create_s = time.perf_counter() - started


def log_head(stack: Stack) -> int:
    return int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def max_records_served(broker_http: httpx.Client, head: int, asked: int) -> dict[str, Any]:
    """A server that clamps `max_records` answers 200; one that refuses more than its limit
    answers 400, and the followers ask for that limit instead."""
    probe = broker_http.get(METADATA_PATH, params={"after_offset": head, "max_records": asked})
    if probe.status_code == 200:
        return {"asked": asked, "used": asked}
    return {
        "asked": asked,
        "used": SERVER_MAX_RECORDS,
        "refused": f"HTTP {probe.status_code}: {probe.text[:200]}",
    }


def _stats(values: Iterable[float], digits: int = 4) -> dict[str, float] | None:
    values = sorted(values)
    if not values:
        return None
    return {
        "median": round(statistics.median(values), digits),
        "max": round(values[-1], digits),
    }


def commit_of(
    stack: Stack, *, before: int, partitions: int, timeout_s: float
) -> dict[str, Any] | None:
    """The commits logged since the first `before` ones that applied the AlterReplicaState (the
    request is queued for the controller: its answer comes before them): one at 10,000
    partitions, ten of at most 10,000 at 100,000 (CP_MAX_PARTITION_CHANGES_PER_COMMIT). Their
    parts summed, with the count and the longest commit (what the controller's other events
    waited for at most)."""
    parts = ("handle_ms", "encode_ms", "transaction_ms", "image_apply_ms")

    def logged() -> list[dict[str, Any]] | None:
        new = [c for c in controller_commits(stack)[before:] if c["records"] >= 1000]
        return new if sum(c["records"] for c in new) >= partitions else None

    try:
        commits = wait_for(logged, timeout_s, "the commits' log lines", every=0.25)
    except AssertionError:
        return None
    # The transaction's two halves besides: the brokers are woken once the log's commits.
    halves = ("log_transaction_ms", "tables_transaction_ms")
    summed = {k: sum(c[k] for c in commits) for k in ("records", "sql_statements", *parts, *halves)}
    spent_ms = sum(summed[k] for k in parts)
    return {
        **summed,
        "commits": len(commits),
        "longest_commit_ms": max(sum(c[k] for k in parts) for c in commits),
        "total_ms": spent_ms,
        "us_per_partition": round(spent_ms * 1000 / partitions, 2),
        "transaction_us_per_partition": round(summed["transaction_ms"] * 1000 / partitions, 2),
        "statement_timings": commits[-1]["statement_timings"],
    }


def await_followers_at_head(stack: Stack, fleet: FollowerFleet) -> dict[str, Any]:
    """Every follower long-polling at the log's head (the head is read again if it moved)."""
    for _ in range(10):
        head = log_head(stack)
        replies = fleet.ask("await_head", {"head": head, "timeout_s": 60}, 90)
        if max(r["highest_offset"] for r in replies) <= head:
            break
    return {
        "head": head,
        "polling": sum(r["polling"] for r in replies),
        "errors": _summed(r["errors"] for r in replies),
    }


def _summed(counts: Iterable[dict[str, int]]) -> collections.Counter[str]:
    total: collections.Counter[str] = collections.Counter()
    for count in counts:
        total.update(count)
    return total


def send_failure(
    broker_http: httpx.Client, failure: Failure, epoch: int
) -> tuple[float, float, str | None]:
    """ONE AlterReplicaState naming every partition of the broker's topics: (t0, seconds until
    acknowledged, the error if it was refused)."""
    body = {
        "broker_id": failure.broker_id,
        "broker_epoch": epoch,
        "new_state": 1,
        "reason": "log dir failure (benchmark)",
        "topics": [
            {"name": name, "partitions": list(range(n))} for name, n in failure.topic_sizes()
        ],
    }
    t0 = time.monotonic()
    try:
        response = broker_http.post("/internal/v1/alter-replica-state", json=body)
        acknowledged = time.monotonic() - t0
        answer = response.json()
    except (httpx.HTTPError, ValueError) as failed:
        return t0, time.monotonic() - t0, f"{type(failed).__name__}: {failed}"
    if response.status_code != 200 or answer.get("error_code") != 0:
        return t0, acknowledged, f"HTTP {response.status_code}: {str(answer)[:300]}"
    return t0, acknowledged, None


def _spread(rows: Iterable[dict[str, Any]]) -> list[float | None]:
    times = [r["completed_s"] for r in rows if r["completed_s"] is not None]
    return [round(min(times), 4), round(max(times), 4)] if times else [None, None]


def fan_out_figures(
    rows: list[dict[str, Any]], *, followers: int, partitions: int
) -> dict[str, Any]:
    """The followers' post-checked windows, as the figures of one size and its goals."""
    processes = sorted({r["process"] for r in rows})
    times = sorted(r["completed_s"] for r in rows if r["completed_s"] is not None)
    first = times[0] if times else None
    every = times[-1] if len(times) == followers else None
    ratio = None if every is None or not first else round(every / first, 3)
    goal = ALL_BROKERS_GOAL_S.get(partitions)
    figures: dict[str, Any] = {
        "first_broker_s": None if first is None else round(first, 4),
        "all_brokers_s": None if every is None else round(every, 4),
        "brokers_complete": len(times),
        "slowest_to_first": ratio,
        "bytes_per_broker": _stats((r["wire_bytes"] for r in rows), 0),
        "answers_per_broker": _stats((r["answers"] for r in rows), 1),
        "client_decode_ms_per_answer": _stats((s * 1000 for r in rows for s in r["decode_s"]), 3),
        "client_decompress_ms_per_answer": _stats(
            (s * 1000 for r in rows for s in r["decompress_s"]), 3
        ),
        "client_cpu_ms_per_answer": _stats((s * 1000 for r in rows for s in r["cpu_s"]), 3),
        # first and last completion per follower process: a spread inside each one alone
        # would be the client's own queue, not the server's
        "completed_s_by_process": [
            _spread(r for r in rows if r["process"] == p) for p in processes
        ],
        "answer_formats": dict(collections.Counter(f for r in rows for f in r["formats"])),
        "goals": {
            "all_brokers_s": {"goal": goal, "met": every is not None and every <= (goal or 0)},
            "slowest_to_first": {
                "goal": SLOWEST_TO_FIRST_GOAL,
                "met": ratio is not None and ratio <= SLOWEST_TO_FIRST_GOAL,
            },
        },
    }
    if len(times) < followers:
        figures["incomplete_brokers"] = {
            str(r["broker_id"]): r["partitions_moved"] for r in rows if r["completed_s"] is None
        }
    return figures


def fail_and_fan_out(
    stack: Stack,
    fleet: FollowerFleet,
    broker_http: httpx.Client,
    *,
    failure: Failure,
    epoch: int,
    followers: int,
    settle_s: float,
    timeout_s: float,
    cpu: CpuTrail,
) -> dict[str, Any]:
    at_head = await_followers_at_head(stack, fleet)
    log(f"  {at_head['polling']} of {followers} followers long-polling at {at_head['head']}")
    # A fetch is in flight on the client; a moment more for the server to have parked it.
    time.sleep(settle_s)
    commits_before = len(controller_commits(stack))
    cpu.sample_now()
    t0, acknowledged, error = send_failure(broker_http, failure, epoch)
    commit = None
    if error:
        log(f"  AlterReplicaState failed: {error}")
    else:
        left = max(1.0, t0 + timeout_s - time.monotonic())
        commit = commit_of(
            stack, before=commits_before, partitions=failure.partitions, timeout_s=left
        )
    # The head once the commit is in the log: every follower has fetched up to it, or the
    # deadline passed (no commit seen: until the deadline).
    head = log_head(stack) if commit else at_head["head"] if error else sys.maxsize
    replies = fleet.ask(
        "window",
        {
            "head": head,
            "t0": t0,
            "deadline": t0 + timeout_s,
            "topic_ids": frozenset(failure.topic_ids.values()),
            "failed_broker": failure.broker_id,
            "partitions": failure.partitions,
        },
        timeout_s + 900,  # the wait, then the post-check's full decode of every body
    )
    rows = [row | {"process": p} for p, reply in enumerate(replies) for row in reply["followers"]]
    figures = fan_out_figures(rows, followers=followers, partitions=failure.partitions)
    # Where the machine's cores went from the report until the last broker had the change
    # (or the deadline): the followers' processes (and the heartbeating one) stand for the
    # brokers.
    every = figures["all_brokers_s"]
    window = cpu.between(t0, t0 + (timeout_s if every is None else every))
    errors = _summed(r["errors"] for r in replies) - at_head["errors"]
    result = {
        "partitions": failure.partitions,
        "topics": len(failure.topic_ids),
        "failed_broker": failure.broker_id,
        "create_s": round(failure.create_s, 3),
        "followers_polling_at_t0": at_head["polling"],
        "acknowledged_s": round(acknowledged, 4),
        **({"error": error} if error else {}),
        **figures,
        "reached_head_within_timeout": all(r["reached_head"] for r in replies),
        "follower_request_failures": dict(errors),
        "controller_commit": commit,
        "cpu_until_all_brokers": window,
    }
    first = figures["first_broker_s"]
    log(
        f"  acknowledged in {acknowledged * 1000:.0f} ms; {figures['brokers_complete']}/"
        f"{followers} brokers complete, first {'-' if first is None else f'{first * 1000:.0f} ms'},"
        f" all {'-' if every is None else f'{every * 1000:.0f} ms'}"
    )
    log(
        f"  meanwhile {window['cores_busy']} of {window['cores']} cores busy: followers "
        f"{window['cpu_s_brokers']} s, bench {window['cpu_s_bench_clients']} s, controller side "
        f"{window['cpu_s_controller_side']} s {window['cpu_s_controller_side_by_process']}"
    )
    return result


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    http = stack.start_web(
        workers=args.workers,
        threads=args.threads,
        extra_env={
            "CP_MAX_BODY_BYTES": str(MAX_BODY_BYTES),
            **dict(item.split("=", 1) for item in args.web_env),
        },
    )
    brokers = brokers_unfenced(stack, http.internal, args.brokers)
    admin = bearer_client(http.base, stack.tokens["admin"], timeout_s=600)
    broker_http = bearer_client(http.internal, stack.tokens["broker"], timeout_s=600)
    failures = [
        Failure(size, broker) for size, broker in zip(args.sizes, FAILING_BROKERS, strict=False)
    ]
    for failure in failures:
        log(f"broker {failure.broker_id} to lead {failure.partitions} partitions: creating topics")
        create_topics(admin, failure, args.brokers)
        log(f"  created {len(failure.topic_ids)} topic(s) in {failure.create_s:.1f} s")
    head = log_head(stack)
    max_records = max_records_served(broker_http, head, args.max_records)
    processes = 1 if args.one_process else args.processes
    how = " (with every broker's heartbeats)" if args.one_process else ""
    log(f"starting {args.brokers} followers in {processes} process(es){how} at offset {head}")
    fleet = FollowerFleet(
        processes=processes,
        broker_ids=list(range(args.brokers)),
        base=http.internal,
        token=stack.tokens["broker"],
        encoding=args.encoding,
        max_records=max_records["used"],
        wait_ms=args.wait_ms,
        start_offset=head,
        # The one-process mode: that process heartbeats for every broker from now on.
        heartbeat_epochs=dict(brokers.epochs) if args.one_process else None,
    )
    if args.one_process:
        brokers.stop()
    shape: HeartbeatShapeProcess | None = None
    if not args.one_process and args.heartbeats:
        brokers.stop()  # the chosen shape heartbeats instead of the bench's agent
        shape = HeartbeatShapeProcess(
            args.heartbeats, http.internal, stack.tokens["broker"], dict(brokers.epochs)
        ).start()
    fencings_before = fencing_records(stack)
    sizes = []
    probes = start_probes(http, stack, brokers)
    # The brokers' stand-ins: the followers' processes and the heartbeating one, if any.
    cpu = CpuTrail([*fleet.procs, *([shape] if shape is not None else [])])
    try:
        for failure in failures:
            log(f"broker {failure.broker_id} fails the log dir of {failure.partitions} partitions")
            sizes.append(
                fail_and_fan_out(
                    stack,
                    fleet,
                    broker_http,
                    failure=failure,
                    epoch=brokers.epochs[failure.broker_id],
                    followers=args.brokers,
                    settle_s=args.settle_ms / 1000,
                    timeout_s=args.timeout,
                    cpu=cpu,
                )
            )
    finally:
        cpu.stop()
        follower_errors = fleet.stop()
        answered: dict[str, Any] = {probe.name: probe.stop() for probe in probes}
        if shape is not None:
            answered["heartbeat_shape"] = shape.stop()
    answered["brokers_fenced_during_run"] = fencing_records(stack) - fencings_before
    fenced = int(stack.sql("SELECT count(*) FROM cp_broker WHERE fenced")[0][0])
    answered["followers_process_heartbeats"] = fleet.heartbeats
    answered["fencing_held_off"] = fencing_held_off(stack)
    answered["timer_worst_lag_ms"] = timer_worst_lag_ms(stack)
    brokers.stop()
    log("verify_metadata")
    verify = verify_stack(stack, timeout_s=1800)
    result = report(args, failures, sizes, max_records, follower_errors, fenced, verify)
    result["while_fanning_out"] = answered
    for name in ("heartbeat", "admin_api"):
        figures = answered[name]
        result["goals"][f"{name}_always_answered"] = {
            "figure": sum(figures["failures"].values()),
            "met": not figures["failures"] and figures["answered"] > 0,
        }
    held_off = answered["fencing_held_off"]
    result["goals"]["fencing_never_held_off"] = {"figure": held_off, "met": held_off == 0}
    during = answered["brokers_fenced_during_run"]
    result["goals"]["no_broker_fenced_during_run"] = {"figure": during, "met": during == 0}
    shaped = answered.get("heartbeat_shape")
    if shaped is not None:
        result["goals"]["heartbeat_p99_ms"] = {
            "figure": shaped["latency_p99_ms"],
            "goal": HEARTBEAT_P99_GOAL_MS,
            "met": (shaped["latency_p99_ms"] or 0) < HEARTBEAT_P99_GOAL_MS,
        }
        result["goals"]["longest_heartbeat_gap_s"] = {
            "figure": shaped["longest_gap_s"],
            "goal": f"below the session timeout ({SESSION_TIMEOUT_S} s)",
            "met": (shaped["longest_gap_s"] or 0) < SESSION_TIMEOUT_S,
        }
    beats = answered.get("followers_process_heartbeats")
    if beats is not None:  # the one-process mode: its heartbeats kept every session alive
        result["goals"]["followers_process_heartbeats_on_time"] = {
            "figure": beats["max_gap_s"],
            "goal": f"below the session timeout ({SESSION_TIMEOUT_S} s), no error",
            "met": beats["max_gap_s"] < SESSION_TIMEOUT_S and not beats["errors"],
        }
    lag = answered["timer_worst_lag_ms"]
    result["goals"]["timer_worst_lag_ms"] = {
        "figure": lag,
        "goal": TIMER_LAG_GOAL_MS,
        "met": lag <= TIMER_LAG_GOAL_MS,
    }
    return result


TIMER_LAG_GOAL_MS = 500  # the fencing rounds decide at most this late
HEARTBEAT_P99_GOAL_MS = 100  # a heartbeat answered within it while every broker long-polls


def fencing_records(stack: Stack) -> int:
    """Fencings the log holds (BrokerRegistrationChangeRecord with fenced = 1)."""
    return int(
        stack.sql(
            "SELECT count(*) FROM cp_metadata_record WHERE record_type = "
            "'BrokerRegistrationChangeRecord' AND (data->>'fenced')::int = 1"
        )[0][0]
    )


SESSION_TIMEOUT_S = 9.0  # broker.session.timeout.ms


def report(
    args: argparse.Namespace,
    failures: list[Failure],
    sizes: list[dict[str, Any]],
    max_records: dict[str, Any],
    follower_errors: dict[str, int],
    fenced: int,
    verify: Any,
) -> dict[str, Any]:
    by_size = {str(s["partitions"]): s for s in sizes}
    result: dict[str, Any] = {
        "setup": {
            "brokers": args.brokers,
            "followers": args.brokers,
            "followers_processes": 1 if args.one_process else args.processes,
            "heartbeats_from": "the followers' process"
            if args.one_process
            else f"a process of their own: {args.heartbeats}"
            if args.heartbeats
            else "the bench: agent",
            "encoding": args.encoding,
            "request_headers": ACCEPT[args.encoding],
            "wait_ms": args.wait_ms,
            "max_records": max_records,
            "settle_ms": args.settle_ms,
            "replication_factor": 3,
            "web": server_description(WORKER_CLASS, args.workers, args.threads),
            "database": "PostgreSQL",
            "timeout_s": args.timeout,
        },
    }
    big = next((f for f in failures if f.partitions == 100_000), None)
    if big is not None:
        result["create_100k_s"] = round(big.create_s, 3)
    result["sizes"] = by_size
    small_commit = (by_size.get("10000") or {}).get("controller_commit")
    big_commit = (by_size.get("100000") or {}).get("controller_commit")
    growth = None
    if small_commit and big_commit and small_commit["us_per_partition"]:
        growth = round(big_commit["us_per_partition"] / small_commit["us_per_partition"], 3)
    result["commit_growth_per_partition_100k_vs_10k"] = growth
    result["verify_metadata"] = verify
    result["brokers_fenced"] = fenced
    result["follower_request_failures"] = follower_errors
    goals: dict[str, Any] = {}
    for size, figures in by_size.items():
        for name, goal in figures["goals"].items():
            goals[f"{name}_{size}"] = {"figure": figures[name], **goal}
    goals["commit_growth_per_partition_100k_vs_10k"] = {
        "figure": growth,
        "goal": COMMIT_GROWTH_GOAL,
        "met": None if growth is None else growth <= COMMIT_GROWTH_GOAL,
    }
    goals["verify_metadata_clean"] = {"met": verify["clean"]}
    goals["no_broker_fenced"] = {"figure": fenced, "met": fenced == 0}
    failed_requests = sum(follower_errors.values())
    goals["no_follower_request_failed"] = {"figure": failed_requests, "met": failed_requests == 0}
    result["goals"] = goals
    return result
