"""A controlled shutdown of the broker leading the most partitions (2 %), timed until the
controller committed it and until every follower broker's fetched log shows every new leader."""

from __future__ import annotations

import time
from typing import Any

import httpx

from bench.fanout.followers import FollowerFleet
from bench.fanout.run import await_followers_at_head, fan_out_figures, log_head
from bench.replica_state import controller_commits, log
from bench.scale.cluster import Heartbeats
from bench.scale.common import ACTIVE, GOALS, HEAVY_BROKER, Layout, goal
from devtools.stack import Stack

HEARTBEAT_PATH = "/internal/v1/broker-heartbeat"


def commits_logged(stack: Stack, name: str = ACTIVE) -> list[dict[str, Any]]:
    """The commit lines of controller `name`'s log, as bench.replica_state reads them."""
    return controller_commits(stack, name)


def _heartbeat(broker_http: httpx.Client, broker_id: int, epoch: int) -> dict[str, Any]:
    body = {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "current_metadata_offset": 10**12,  # caught up: the shutdown waits for no one
        "want_shut_down": True,
    }
    response = broker_http.post(HEARTBEAT_PATH, json=body)
    answer: dict[str, Any] = response.json()
    if response.status_code != 200 or answer.get("error_code") != 0:
        raise SystemExit(f"controlled shutdown heartbeat: HTTP {response.status_code} {answer}")
    return answer


def leaderships(stack: Stack, broker_id: int) -> int:
    return int(stack.sql("SELECT count(*) FROM cp_partition WHERE leader = %s", broker_id)[0][0])


def start_followers(stack: Stack, *, base: str, brokers: int, processes: int) -> FollowerFleet:
    """One follower a broker, long-polling the metadata fetch (MessagePack + zstd) from the
    log's head, as bench.fanout's."""
    return FollowerFleet(
        processes=processes,
        broker_ids=list(range(brokers)),
        base=base,
        token=stack.tokens["broker"],
        encoding="msgpack",
        max_records=100_000,
        wait_ms=5000,
        start_offset=log_head(stack),
    )


def controlled_shutdown(
    stack: Stack,
    broker_http: httpx.Client,
    fleet: FollowerFleet,
    heartbeats: Heartbeats,
    *,
    layout: Layout,
    topic_ids: dict[str, str],
    brokers: int,
    timeout_s: float,
) -> dict[str, Any]:
    heavy = HEAVY_BROKER
    led = leaderships(stack, heavy)
    at_head = await_followers_at_head(stack, fleet)
    log(
        f"  {at_head['polling']}/{brokers} followers at {at_head['head']}; broker {heavy} "
        f"(leads {led}) asks to shut down"
    )
    time.sleep(0.5)  # the fetches in flight parked on the server
    heartbeats.leaving.add(heavy)
    commits_before = len(commits_logged(stack))
    epoch = heartbeats.epochs[heavy]
    t0 = time.monotonic()
    first = _heartbeat(broker_http, heavy, epoch)
    committed_s = time.monotonic() - t0
    head = log_head(stack)
    replies = fleet.ask(
        "window",
        {
            "head": head,
            "t0": t0,
            "deadline": t0 + timeout_s,
            "topic_ids": frozenset(topic_ids.values()),
            "failed_broker": heavy,
            "partitions": led,
        },
        timeout_s + 900,
    )
    rows = [row | {"process": p} for p, reply in enumerate(replies) for row in reply["followers"]]
    seen = fan_out_figures(rows, followers=brokers, partitions=led)
    seen.pop("goals", None)  # bench.fanout's goals; ours below
    # The broker keeps asking until the controller says it may stop (SHUTDOWN_NOW).
    shut_down_s = None
    while time.monotonic() - t0 < timeout_s:
        if _heartbeat(broker_http, heavy, epoch).get("should_shut_down"):
            shut_down_s = round(time.monotonic() - t0, 4)
            break
        time.sleep(0.1)
    still_leading = leaderships(stack, heavy)
    commits = [c for c in commits_logged(stack)[commits_before:] if c["records"] >= led]
    every = seen["all_brokers_s"]
    log(
        f"  committed and answered in {committed_s * 1000:.0f} ms; every broker saw it after "
        f"{'-' if every is None else f'{every * 1000:.0f} ms'}"
    )
    return {
        "broker": heavy,
        "partitions_led": led,
        "share_of_partitions": round(led / layout.partitions, 4),
        "first_answer": first,
        "committed_and_answered_s": round(committed_s, 4),
        **seen,
        "should_shut_down_after_s": shut_down_s,
        "partitions_still_led": still_leading,
        "controller_commit": max(commits, key=lambda c: c["records"]) if commits else None,
        "goals": {"all_brokers_s": goal(every, GOALS["controlled_shutdown_s"])},
    }
