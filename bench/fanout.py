"""Benchmark: one AlterReplicaState fanned out to 60 long-polling brokers (issue 22).

gunicorn + PostgreSQL + Redis + one `run_controller`, 60 brokers registered and kept alive with
heartbeats every 2 s. Broker 7 leads 10,000 partitions (one topic), broker 11 leads 100,000 (10
topics of 10,000), RF 3. 60 followers, one per broker, long-poll `GET /internal/v1/metadata`,
each with its own connection, in 3 OS processes of 20 (one asyncio process cannot decode
60 x 100,000 records on two cores without measuring itself).

Per size, once every follower is long-polling at the log's head, the failed broker sends ONE
AlterReplicaState naming every partition of its topics (t0 = just before sending; the request
is queued for the controller, so `acknowledged_s` comes before the commit). Figures: the
controller commit's parts (handle, encode, transaction, image apply: its log line), the time
until the first and until every broker has a new leader for every partition, the bytes and
answers per broker. A follower only reads the last record's offset while measuring (msgspec
skips the rest in C; its decode time per answer is reported); it keeps every raw body, and after
the measurement the bodies are decoded in full: a follower's time is the arrival of the answer
that completed its set of new leaders. The followers' decoding shares the two cores with the
server: `client_cpu_ms_per_answer` times 20 is how long one process's followers queue behind
each other (`completed_s_by_process` shows the spread inside each process).

Goals (the issue's): all 60 brokers within 1 s at 10k and 3 s at 100k; the slowest broker within
1.3x of the first; the commit's time per partition at 100k at most 1.2x that at 10k;
`verify_metadata` clean; no broker fenced, no follower request without an answer.

    make bench-fanout        # or: python -m bench.fanout --sizes 10000 --encoding json
Writes bench/results/fanout.json and prints it; progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import gzip
import multiprocessing
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import httpx
import msgspec
import zstandard

from bench.replica_state import (
    Brokers,
    assigned,
    controller_commits,
    log,
    run_with_controller,
)
from devtools.stack import WORKER_CLASS, Stack, server_description, wait_for

TOPIC_PARTITIONS = 10_000
FAILING_BROKERS = (7, 11, 13, 17)  # the broker whose log dir fails, per size in order
MAX_BODY_BYTES = 16 << 20  # a 100,000-partition AlterReplicaState, with room
SERVER_MAX_RECORDS = 10_000  # what a server without the clamp accepts (it refuses more: 400)
METADATA_PATH = "/internal/v1/metadata"
MSGPACK = "application/msgpack"
ACCEPT = {
    "msgpack": {"Accept": f"{MSGPACK}, application/json;q=0.5", "Accept-Encoding": "zstd, gzip"},
    "json": {"Accept": "application/json", "Accept-Encoding": "identity"},
}
RETRY_S = 0.2  # after a failed fetch: the server is not hammered while it is down
NO_LEADER_CHANGE = -2
ALL_BROKERS_GOAL_S = {10_000: 1.0, 100_000: 3.0}  # every broker has every new leader
SLOWEST_TO_FIRST_GOAL = 1.3
COMMIT_GROWTH_GOAL = 1.2  # the commit's time per partition, 100k vs 10k


# --- The answer's wire format: decoded by its Content-Type and Content-Encoding ---------------


class RecordHead(msgspec.Struct):
    offset: int


class FetchHead(msgspec.Struct):
    """All a follower reads while measuring: msgspec skips every other field in C."""

    records: list[RecordHead] = []
    snapshot_id: dict[str, int] | None = None


class RecordFull(msgspec.Struct):
    offset: int
    type: str
    data: msgspec.Raw  # decoded only for PartitionChangeRecord (record types differ)


class FetchFull(msgspec.Struct):
    records: list[RecordFull] = []


class LeaderChange(msgspec.Struct):
    topic_id: str
    partition_id: int
    leader: int = NO_LEADER_CHANGE


_HEAD: dict[bool, msgspec.json.Decoder[FetchHead] | msgspec.msgpack.Decoder[FetchHead]] = {
    False: msgspec.json.Decoder(FetchHead),
    True: msgspec.msgpack.Decoder(FetchHead),
}
_FULL: dict[bool, msgspec.json.Decoder[FetchFull] | msgspec.msgpack.Decoder[FetchFull]] = {
    False: msgspec.json.Decoder(FetchFull),
    True: msgspec.msgpack.Decoder(FetchFull),
}
_CHANGE: dict[bool, msgspec.json.Decoder[LeaderChange] | msgspec.msgpack.Decoder[LeaderChange]] = {
    False: msgspec.json.Decoder(LeaderChange),
    True: msgspec.msgpack.Decoder(LeaderChange),
}


_ZSTD = zstandard.ZstdDecompressor()  # one per process: the followers share one thread


@dataclasses.dataclass(slots=True)
class Answer:
    """One metadata fetch answer as it came off the wire."""

    arrival: float  # time.monotonic(): one clock for every process of this machine
    body: bytes  # as sent: after Content-Encoding
    content_type: str = "application/json"
    content_encoding: str = ""
    decompress_s: float = 0.0  # wall time: on a busy machine, mostly waiting for a core
    decode_s: float = 0.0
    cpu_s: float = 0.0  # the thread's CPU time for both

    @property
    def msgpack(self) -> bool:
        return self.content_type.split(";")[0].strip().lower() == MSGPACK

    def plain(self) -> bytes:
        encoding = self.content_encoding.strip().lower()
        if encoding in ("", "identity"):
            return self.body
        if encoding == "zstd":
            try:
                return _ZSTD.decompress(self.body)
            except zstandard.ZstdError:  # a streamed frame need not say its size
                return _ZSTD.decompressobj().decompress(self.body)
        if encoding == "gzip":
            return gzip.decompress(self.body)
        raise ValueError(f"unexpected Content-Encoding {self.content_encoding!r}")


def read_head(answer: Answer) -> FetchHead:
    """The hot path: decompress, then the records' offsets only; times both on the answer."""
    cpu, started = time.thread_time(), time.perf_counter()
    plain = answer.plain()
    decompressed = time.perf_counter()
    head = _HEAD[answer.msgpack].decode(plain)
    answer.decompress_s = decompressed - started
    answer.decode_s = time.perf_counter() - decompressed
    answer.cpu_s = time.thread_time() - cpu
    return head


def new_leaders_in(
    answer: Answer, *, topic_ids: frozenset[str], failed_broker: int
) -> frozenset[tuple[str, int]]:
    """The partitions of `topic_ids` that this answer gives a leader other than the failed
    broker (a leader of -1 is none; -2 leaves the leader as it was)."""
    msgpack = answer.msgpack
    change = _CHANGE[msgpack]
    moved = set()
    for record in _FULL[msgpack].decode(answer.plain()).records:
        if record.type != "PartitionChangeRecord":
            continue
        data = change.decode(record.data)
        if data.topic_id in topic_ids and data.leader >= 0 and data.leader != failed_broker:
            moved.add((data.topic_id, data.partition_id))
    return frozenset(moved)


@dataclasses.dataclass(frozen=True, slots=True)
class Completion:
    completed_at: float | None  # the arrival of the answer that completed the set; None: never
    partitions_moved: int
    answers: int  # answers up to completion (all of them when it never completed)


def completion(
    answers: Sequence[Answer],
    *,
    topic_ids: frozenset[str],
    failed_broker: int,
    partitions: int,
    cache: dict[tuple[str, str, bytes], frozenset[tuple[str, int]]] | None = None,
) -> Completion:
    """When a follower had a new leader for every one of `partitions` partitions of
    `topic_ids`, from its answers in arrival order. `cache`: followers are sent the same bytes
    for the same range, and the same bytes decode to the same leaders."""
    cache = {} if cache is None else cache
    moved: set[tuple[str, int]] = set()
    for count, answer in enumerate(answers, start=1):
        key = (answer.content_type, answer.content_encoding, answer.body)
        found = cache.get(key)
        if found is None:
            found = cache[key] = new_leaders_in(
                answer, topic_ids=topic_ids, failed_broker=failed_broker
            )
        moved |= found
        if len(moved) >= partitions:
            return Completion(answer.arrival, len(moved), count)
    return Completion(None, len(moved), len(answers))


# --- The followers: 20 per process, each with its own connection -----------------------------


@dataclasses.dataclass
class Follower:
    broker_id: int
    client: httpx.AsyncClient
    offset: int
    params: dict[str, int]
    changed: asyncio.Event
    errors: collections.Counter[str]
    polling_at: int | None = None  # the after_offset of the fetch in flight
    window: list[Answer] | None = None  # every answer is kept while this is a list

    async def run(self) -> None:
        while True:
            self.polling_at = self.offset
            self.changed.set()
            try:
                params = {**self.params, "after_offset": self.offset}
                async with self.client.stream("GET", METADATA_PATH, params=params) as response:
                    body = b"".join([chunk async for chunk in response.aiter_raw()])
            except httpx.HTTPError as error:
                self.polling_at = None
                self.errors[f"{type(error).__name__}: {error}"] += 1
                await asyncio.sleep(RETRY_S)
                continue
            arrival = time.monotonic()
            self.polling_at = None
            if response.status_code != 200:
                self.errors[f"HTTP {response.status_code}"] += 1
                await asyncio.sleep(RETRY_S)
                continue
            answer = Answer(
                arrival,
                body,
                response.headers.get("content-type", "application/json"),
                response.headers.get("content-encoding", ""),
            )
            try:
                head = read_head(answer)
            except (msgspec.DecodeError, zstandard.ZstdError, ValueError, OSError) as error:
                self.errors[f"undecodable answer: {error}"] += 1
                await asyncio.sleep(RETRY_S)
                continue
            if self.window is not None:
                self.window.append(answer)
            if head.records:
                self.offset = head.records[-1].offset
            elif head.snapshot_id is not None:  # behind the log's start: never here
                self.errors["answered a snapshot_id"] += 1
                await asyncio.sleep(RETRY_S)
            self.changed.set()


async def _until(changed: asyncio.Event, done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        changed.clear()
        if done():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), left)


def _window_summary(
    follower: Follower, answers: list[Answer], *, t0: float, cache: dict[Any, Any], **target: Any
) -> dict[str, Any]:
    answers = [a for a in answers if a.arrival >= t0]
    done = completion(answers, cache=cache, **target)
    counted = answers[: done.answers]
    return {
        "broker_id": follower.broker_id,
        "completed_s": None if done.completed_at is None else done.completed_at - t0,
        "partitions_moved": done.partitions_moved,
        "answers": len(counted),
        "wire_bytes": sum(len(a.body) for a in counted),
        "decode_s": [a.decode_s for a in counted],
        "decompress_s": [a.decompress_s for a in counted],
        "cpu_s": [a.cpu_s for a in counted],
        "formats": [f"{a.content_type} {a.content_encoding or 'identity'}" for a in counted],
    }


@dataclasses.dataclass
class FollowerGroup:
    """One process's followers and the commands the benchmark sends them."""

    followers: list[Follower]
    changed: asyncio.Event
    errors: collections.Counter[str]

    async def until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        return await _until(self.changed, done, timeout_s)

    async def await_head(self, *, head: int, timeout_s: float) -> dict[str, Any]:
        """Keep every answer from now on; wait until each follower polls at `head` (or one is
        past it: the log moved)."""
        followers = self.followers
        for follower in followers:
            follower.window = []

        def at_head() -> bool:
            return all(f.polling_at == head for f in followers) or any(
                f.offset > head for f in followers
            )

        await self.until(at_head, timeout_s)
        return {
            "polling": sum(f.polling_at == head for f in followers),
            "highest_offset": max(f.offset for f in followers),
            "errors": dict(self.errors),
        }

    async def window(
        self, *, head: int, t0: float, deadline: float, **target: Any
    ) -> dict[str, Any]:
        """Until every follower has fetched up to `head` (or the deadline), then the
        post-check of the answers kept since t0."""
        followers = self.followers
        reached = await self.until(
            lambda: all(f.offset >= head for f in followers), deadline - time.monotonic()
        )
        windows = [(f, f.window or []) for f in followers]
        for follower in followers:
            follower.window = None
        cache: dict[tuple[str, str, bytes], Any] = {}
        return {
            "reached_head": reached,
            "errors": dict(self.errors),
            "followers": [
                _window_summary(f, answers, t0=t0, cache=cache, **target) for f, answers in windows
            ],
        }


async def _follow(conn: Connection, setup: dict[str, Any]) -> None:
    params = {"wait_ms": setup["wait_ms"], "max_records": setup["max_records"]}
    headers = {"Authorization": f"Bearer {setup['token']}", **ACCEPT[setup["encoding"]]}
    group = FollowerGroup([], asyncio.Event(), collections.Counter())
    for broker_id in setup["broker_ids"]:
        client = httpx.AsyncClient(
            base_url=setup["base"],
            headers=headers,
            timeout=httpx.Timeout(300, connect=10),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        group.followers.append(
            Follower(broker_id, client, setup["start_offset"], params, group.changed, group.errors)
        )
    tasks = [asyncio.create_task(f.run()) for f in group.followers]
    loop = asyncio.get_running_loop()
    try:
        await group.until(lambda: all(f.polling_at is not None for f in group.followers), 60)
        conn.send("ready")
        while True:
            command, arguments = await loop.run_in_executor(None, conn.recv)
            if command == "stop":
                conn.send({"errors": dict(group.errors)})
                return
            handler = group.await_head if command == "await_head" else group.window
            conn.send(await handler(**arguments))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for follower in group.followers:
            await follower.client.aclose()


def follower_process(conn: Connection, setup: dict[str, Any]) -> None:
    asyncio.run(_follow(conn, setup))


class FollowerFleet:
    """The followers' processes, driven over one pipe each."""

    def __init__(self, *, processes: int, broker_ids: list[int], **setup: Any) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self.pipes: list[Connection] = []
        self.procs: list[multiprocessing.process.BaseProcess] = []
        for index in range(processes):
            ours, theirs = context.Pipe()
            proc = context.Process(
                target=follower_process,
                args=(theirs, {**setup, "broker_ids": broker_ids[index::processes]}),
                name=f"followers-{index}",
                daemon=True,
            )
            proc.start()
            self.pipes.append(ours)
            self.procs.append(proc)
        replies = self._collect(120)  # the start barrier: every follower is polling
        if replies != ["ready"] * processes:
            raise SystemExit(f"followers did not start: {replies}")

    def _collect(self, timeout_s: float) -> list[Any]:
        deadline = time.monotonic() + timeout_s
        replies = []
        for pipe in self.pipes:
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise SystemExit(f"a follower process did not answer within {timeout_s:.0f} s")
            replies.append(pipe.recv())
        return replies

    def ask(self, command: str, arguments: dict[str, Any], timeout_s: float) -> list[Any]:
        for pipe in self.pipes:
            pipe.send((command, arguments))
        return self._collect(timeout_s)

    def stop(self) -> dict[str, int]:
        errors: collections.Counter[str] = collections.Counter()
        try:
            for reply in self.ask("stop", {}, 30):
                errors.update(reply["errors"])
        finally:
            for proc in self.procs:
                proc.join(10)
                if proc.is_alive():
                    proc.terminate()
        return dict(errors)


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
    """The largest commit logged since the first `before` ones: the AlterReplicaState's (the
    request is queued for the controller: its answer comes before the commit)."""

    def logged() -> list[dict[str, Any]]:
        new = controller_commits(stack)[before:]
        return [c for c in new if c["records"] >= partitions]

    try:
        found = wait_for(logged, timeout_s, "the commit's log line", every=0.25)
        commit = max(found, key=lambda c: c["records"])
    except AssertionError:
        return None
    spent_ms = sum(
        commit[k] for k in ("handle_ms", "encode_ms", "transaction_ms", "image_apply_ms")
    )
    return {
        **{k: v for k, v in commit.items() if k != "statement_timings"},
        "total_ms": spent_ms,
        "us_per_partition": round(spent_ms * 1000 / partitions, 2),
        "transaction_us_per_partition": round(commit["transaction_ms"] * 1000 / partitions, 2),
        "statement_timings": commit["statement_timings"],
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
) -> dict[str, Any]:
    at_head = await_followers_at_head(stack, fleet)
    log(f"  {at_head['polling']} of {followers} followers long-polling at {at_head['head']}")
    # A fetch is in flight on the client; a moment more for the server to have parked it.
    time.sleep(settle_s)
    commits_before = len(controller_commits(stack))
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
    }
    every, first = figures["all_brokers_s"], figures["first_broker_s"]
    log(
        f"  acknowledged in {acknowledged * 1000:.0f} ms; {figures['brokers_complete']}/"
        f"{followers} brokers complete, first {'-' if first is None else f'{first * 1000:.0f} ms'},"
        f" all {'-' if every is None else f'{every * 1000:.0f} ms'}"
    )
    return result


class Probe:
    """Asks one cheap question every `every_s` on its own connection while the fan-out runs:
    the backpressure check (heartbeats still answered, the admin API still answering)."""

    def __init__(self, name: str, ask: Callable[[], httpx.Response], every_s: float) -> None:
        self.name, self.ask, self.every_s = name, ask, every_s
        self.latencies_ms: list[float] = []
        self.failures: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"probe-{name}", daemon=True)

    def start(self) -> Probe:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            started = time.perf_counter()
            try:
                status = self.ask().status_code
            except httpx.HTTPError as error:
                self.failures[type(error).__name__] += 1
                continue
            if status != 200:
                self.failures[f"HTTP {status}"] += 1
            else:
                self.latencies_ms.append((time.perf_counter() - started) * 1000)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=60)
        ordered = sorted(self.latencies_ms)
        return {
            "answered": len(ordered),
            "failures": dict(self.failures),
            "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
            "p99_ms": round(ordered[int(len(ordered) * 0.99)], 1) if ordered else None,
            "max_ms": round(ordered[-1], 1) if ordered else None,
        }


def bearer_client(base: str, token: str, *, timeout_s: float) -> httpx.Client:
    return httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s
    )


def start_probes(http: Any, stack: Stack, brokers: Brokers) -> tuple[Probe, Probe]:
    """A heartbeat of broker 0 every 250 ms on the internal listener, and the public API's
    cluster description every 250 ms as the admin."""
    internal = bearer_client(http.internal, stack.tokens["broker"], timeout_s=30)
    public = bearer_client(http.base, stack.tokens["admin"], timeout_s=30)

    def heartbeat() -> httpx.Response:
        body = {
            "broker_id": 0,
            "broker_epoch": brokers.epochs[0],
            "current_metadata_offset": 10**12,
        }
        return internal.post("/internal/v1/broker-heartbeat", json=body)

    return (
        Probe("heartbeat", heartbeat, 0.25).start(),
        Probe("admin_api", lambda: public.get("/api/v1/cluster"), 0.25).start(),
    )


def fencing_held_off(stack: Stack) -> int:
    """How often the controller held off fencing (it heard too few brokers): it must not,
    for its own overload is no broker's silence."""
    text = (stack.logs / "controller.log").read_text(errors="replace")
    return text.count("not fencing ")


def measure(stack: Stack, args: argparse.Namespace) -> dict[str, Any]:
    http = stack.start_web(
        workers=args.workers,
        threads=args.threads,
        extra_env={"CP_MAX_BODY_BYTES": str(MAX_BODY_BYTES)},
    )
    cluster_id = stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0]
    brokers = Brokers(http.internal, stack.tokens["broker"], cluster_id, args.brokers)
    brokers.register_all()
    wait_for(
        lambda: stack.sql("SELECT count(*) FROM cp_broker WHERE NOT fenced")[0][0] == args.brokers,
        30,
        "every broker unfenced",
    )
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
    log(f"starting {args.brokers} followers in {args.processes} processes at offset {head}")
    fleet = FollowerFleet(
        processes=args.processes,
        broker_ids=list(range(args.brokers)),
        base=http.internal,
        token=stack.tokens["broker"],
        encoding=args.encoding,
        max_records=max_records["used"],
        wait_ms=args.wait_ms,
        start_offset=head,
    )
    sizes = []
    probes = start_probes(http, stack, brokers)
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
                )
            )
    finally:
        follower_errors = fleet.stop()
        answered: dict[str, Any] = {probe.name: probe.stop() for probe in probes}
    fenced = int(stack.sql("SELECT count(*) FROM cp_broker WHERE fenced")[0][0])
    answered["fencing_held_off"] = fencing_held_off(stack)
    brokers.stop()
    log("verify_metadata")
    verify = stack.manage("verify_metadata", check=False, timeout=1800)
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
    return result


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
            "followers_processes": args.processes,
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
    verify_lines = (verify.stdout + verify.stderr).strip().splitlines()
    result["verify_metadata"] = {"clean": verify.returncode == 0, "output": verify_lines[-5:]}
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
    goals["verify_metadata_clean"] = {"met": verify.returncode == 0}
    goals["no_broker_fenced"] = {"figure": fenced, "met": fenced == 0}
    failed_requests = sum(follower_errors.values())
    goals["no_follower_request_failed"] = {"figure": failed_requests, "met": failed_requests == 0}
    result["goals"] = goals
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--sizes", default="10000,100000", help="partitions per failure, in order")
    parser.add_argument("--encoding", choices=sorted(ACCEPT), default="msgpack")
    parser.add_argument("--processes", type=int, default=3, help="OS processes of followers")
    parser.add_argument("--max-records", type=int, default=100_000)
    parser.add_argument("--wait-ms", type=int, default=5000)
    parser.add_argument("--settle-ms", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=120.0, help="per size, seconds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    args.sizes = [int(size) for size in args.sizes.split(",")]
    if len(args.sizes) > len(FAILING_BROKERS):
        parser.error(f"at most {len(FAILING_BROKERS)} sizes")
    run_with_controller(measure, args, "fanout.json")


if __name__ == "__main__":
    main()
