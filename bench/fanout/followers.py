"""The followers: 20 per OS process, each broker with its own connection."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import httpx
import msgspec
import zstandard

from bench.fanout.common import ACCEPT, METADATA_PATH, RETRY_S
from bench.fanout.raw_http import FETCH_ERRORS, RawHttpConnection
from bench.fanout.wire import Answer, completion, read_head

# --- The followers: 20 per process, each with its own connection -----------------------------

FETCH_TIMEOUT_S = 300  # a long-poll answers within its wait_ms: this only ends a hung one


@dataclasses.dataclass
class Follower:
    broker_id: int
    client: RawHttpConnection
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
                async with asyncio.timeout(FETCH_TIMEOUT_S):
                    response = await self.client.get(METADATA_PATH, params)
            except FETCH_ERRORS as error:
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
                response.body,
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


class Heartbeats:
    """The one-process mode (`--one-process`): this process sends every broker's
    heartbeat every 2 s besides following, as one agent process per host does. From a thread of
    its own with its own connection, so that heartbeats never queue behind the followers' work
    in the event loop (a heartbeat is due every 2 s whatever the fetches bring); the longest gap
    between two answered heartbeats of a broker is what the controller's session sees."""

    INTERVAL_S = 2.0

    def __init__(self, base: str, token: str, epochs: dict[int, int]) -> None:
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        self.epochs = epochs
        self.answered: dict[int, float] = {}
        self.max_gap_s = 0.0
        self.errors: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeats", daemon=True)

    def start(self) -> Heartbeats:
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            started = time.monotonic()
            for broker_id, epoch in self.epochs.items():
                self._beat(broker_id, epoch)
            if self._stop.wait(max(0.0, self.INTERVAL_S - (time.monotonic() - started))):
                return

    def _beat(self, broker_id: int, epoch: int) -> None:
        body = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**12}
        try:
            response = self.client.post("/internal/v1/broker-heartbeat", json=body)
        except httpx.HTTPError as error:
            self.errors[f"{type(error).__name__}: {error}"] += 1
            return
        if response.status_code != 200 or response.json().get("error_code"):
            self.errors[f"HTTP {response.status_code} {response.text[:80]}"] += 1
            return
        now = time.monotonic()
        previous = self.answered.get(broker_id)
        if previous is not None:
            self.max_gap_s = max(self.max_gap_s, now - previous)
        self.answered[broker_id] = now

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=60)
        self.client.close()
        return {"max_gap_s": round(self.max_gap_s, 2), "errors": dict(self.errors)}


async def _follow(conn: Connection, setup: dict[str, Any]) -> None:
    params = {"wait_ms": setup["wait_ms"], "max_records": setup["max_records"]}
    headers = {"Authorization": f"Bearer {setup['token']}", **ACCEPT[setup["encoding"]]}
    group = FollowerGroup([], asyncio.Event(), collections.Counter())
    for broker_id in setup["broker_ids"]:
        client = RawHttpConnection(setup["base"], headers)
        group.followers.append(
            Follower(broker_id, client, setup["start_offset"], params, group.changed, group.errors)
        )
    tasks = [asyncio.create_task(f.run()) for f in group.followers]
    loop = asyncio.get_running_loop()
    epochs = setup.get("heartbeat_epochs")
    heartbeats = (
        Heartbeats(setup["base"], setup["token"], {int(b): e for b, e in epochs.items()}).start()
        if epochs
        else None
    )
    try:
        await group.until(lambda: all(f.polling_at is not None for f in group.followers), 60)
        conn.send("ready")
        while True:
            command, arguments = await loop.run_in_executor(None, conn.recv)
            if command == "stop":
                beats = heartbeats.stop() if heartbeats is not None else None
                conn.send({"errors": dict(group.errors), "heartbeats": beats})
                return
            handler = group.await_head if command == "await_head" else group.window
            conn.send(await handler(**arguments))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for follower in group.followers:
            await follower.client.close()


def follower_process(conn: Connection, setup: dict[str, Any]) -> None:
    asyncio.run(_follow(conn, setup))


class FollowerFleet:
    """The followers' processes, driven over one pipe each."""

    def __init__(self, *, processes: int, broker_ids: list[int], **setup: Any) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self.pipes: list[Connection] = []
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.heartbeats: dict[str, Any] | None = None  # the one-process mode's
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
            for reply in self.ask("stop", {}, 90):
                errors.update(reply["errors"])
                if reply.get("heartbeats") is not None:
                    self.heartbeats = reply["heartbeats"]
        finally:
            for proc in self.procs:
                proc.join(10)
                if proc.is_alive():
                    proc.terminate()
        return dict(errors)
