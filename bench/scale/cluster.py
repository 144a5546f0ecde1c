"""The cluster under test: two controllers, one web node, 100 brokers heartbeating, the topics,
and what each process holds in memory."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.replica_state import Brokers, bearer_client, log
from bench.scale.common import (
    ACTIVE,
    CONTROLLER_IDS,
    STANDBY,
    Layout,
    assignments,
    memory_of,
    process_group_of,
    spread,
)
from devtools.stack import Http, Stack, wait_for


class Heartbeats(Brokers):
    """Brokers heartbeating every 2 s as bench.replica_state's do; a broker in `leaving` is left
    to its own heartbeats (its controlled shutdown)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.leaving: set[int] = set()
        self.failed_rounds = 0

    def beat_all(self) -> list[dict[str, Any]]:
        answers = []
        for broker_id, epoch in list(self.epochs.items()):
            if broker_id in self.leaving:
                continue
            body = {
                "broker_id": broker_id,
                "broker_epoch": epoch,
                "current_metadata_offset": self.offset,
            }
            answers.append(self.client.post("/internal/v1/broker-heartbeat", json=body).json())
        return answers

    def _beat_forever(self) -> None:
        while not self._stop.wait(2.0):
            try:
                self.beat_all()
            except (httpx.HTTPError, ValueError) as error:
                self.failed_rounds += 1
                log(f"  heartbeat round failed: {type(error).__name__}: {error}")


def _spawn_controller(stack: Stack, name: str) -> None:
    stack.spawn(
        name,
        [sys.executable, "manage.py", "run_controller", "--loglevel", "INFO"],
        {"CP_NODE_ID": name, "CP_CONTROLLER_ID": str(CONTROLLER_IDS[name])},
    )


class ControllerSupervisor:
    """What a deployment's supervisor does for `run_controller` (it exits when it loses its
    lease, for a standby to take over, and expects to be started again): a controller that
    exited on its own is started again at once, as a standby; one the benchmark killed is not.
    Every exit is recorded."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.killed: set[str] = set()
        self.exits: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def start(self) -> ControllerSupervisor:
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            for name in (ACTIVE, STANDBY):
                proc = self.stack.procs.get(name)
                if proc is None or name in self.killed or proc.poll() is None:
                    continue
                self.exits.append(
                    {"node": name, "exit_code": proc.returncode, "at_ms": time.time_ns() // 10**6}
                )
                log(f"  supervisor: {name} exited ({proc.returncode}); starting it again")
                _spawn_controller(self.stack, name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def start_controllers(stack: Stack) -> ControllerSupervisor:
    """The active controller first (it creates the cluster), then the standby, both at INFO (the
    commit and activation lines are read from their logs), under a supervisor."""
    _spawn_controller(stack, ACTIVE)
    stack.wait_active(ACTIVE, timeout=60)
    _spawn_controller(stack, STANDBY)
    return ControllerSupervisor(stack).start()


def brokers_heartbeating(stack: Stack, http: Http, count: int) -> Heartbeats:
    cluster_id = stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1")[0][0]
    brokers = Heartbeats(http.internal, stack.tokens["broker"], cluster_id, count)
    brokers.register_all()
    wait_for(
        lambda: stack.sql("SELECT count(*) FROM cp_broker WHERE NOT fenced")[0][0] == count,
        60,
        "every broker unfenced",
    )
    return brokers


def create_topics(admin: httpx.Client, layout: Layout, brokers: int) -> dict[str, Any]:
    """One CreateTopics per topic (the issue's way), with explicit assignments; the topic ids by
    name and each request's time."""
    times: list[float] = []
    topic_ids: dict[str, str] = {}
    started = time.perf_counter()
    first_partition = 0
    topics = layout.topics()
    every = max(1, len(topics) // 10)
    for number, (name, partitions) in enumerate(topics, start=1):
        placed = assignments(first_partition, partitions, brokers)
        body = {"topics": [{"name": name, "assignments": placed}]}
        sent = time.perf_counter()
        response = admin.post("/api/v1/create-topics", json=body)
        times.append(time.perf_counter() - sent)
        answer = response.json()["topics"][0]
        if response.status_code != 200 or answer["error_code"] != 0:
            raise SystemExit(f"create-topics {name} failed: HTTP {response.status_code} {answer}")
        topic_ids[name] = answer["topic_id"]
        first_partition += partitions
        if number % every == 0:
            log(
                f"  {number}/{len(topics)} topics ({first_partition} partitions) in "
                f"{time.perf_counter() - started:.1f} s"
            )
    total = time.perf_counter() - started
    return {
        "topic_ids": topic_ids,
        "figures": {
            "topics": len(topics),
            "partitions_per_topic": layout.per_topic,
            "total_s": round(total, 3),
            "partitions_per_s": round(layout.partitions / total) if total else None,
            "per_topic_s": spread(times),
        },
    }


# --- memory and disk -------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # the process ended meanwhile
        return None


def group_memory(leader_pid: int) -> dict[str, Any]:
    """VmRSS and VmHWM of a process group (a gunicorn arbiter and its workers), each and summed."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        text = _read(stat)
        if text is None or process_group_of(text) != leader_pid:
            continue
        status = _read(stat.with_name("status"))
        if status:
            members.append({"pid": int(stat.parent.name), **memory_of(status)})
    members.sort(key=lambda m: m["pid"])
    return {
        "processes": members,
        "VmRSS": sum(m.get("VmRSS", 0) for m in members),
        "VmHWM_each_max": max((m.get("VmHWM", 0) for m in members), default=0),
    }


def process_memory(pid: int) -> dict[str, int] | None:
    status = _read(Path(f"/proc/{pid}/status"))
    return None if status is None else memory_of(status)


def memory(stack: Stack) -> dict[str, Any]:
    """The controllers' (by role: the lease holder is the active one), the web node's and the
    Celery worker's (each a process group)."""
    holder = stack.lease()[0]
    figures: dict[str, Any] = {}
    for name in (ACTIVE, STANDBY):
        proc = stack.procs.get(name)
        if proc is None or proc.poll() is not None:
            continue
        role = "active" if name == holder else "standby"
        figures[role] = {"node": name, **(process_memory(proc.pid) or {})}
    for name in ("web", "worker"):
        proc = stack.procs.get(name)
        if proc is not None and proc.poll() is None:
            figures[name] = group_memory(proc.pid)
    return figures


def database_bytes(stack: Stack) -> int:
    return int(stack.sql("SELECT pg_database_size(current_database())")[0][0])


def standby_caught_up(stack: Stack, timeout_s: float) -> bool | None:
    """Whether the standby reported the log's head (cp_controller_node, where the product has
    it); None when the product does not report it."""
    try:
        stack.sql("SELECT 1 FROM cp_controller_node LIMIT 1")
    except Exception:  # an older schema: no table
        return None

    def at_head() -> bool:
        rows = stack.sql(
            "SELECT n.last_offset >= c.last_offset FROM cp_controller_node n, cp_cluster c"
            " WHERE n.node_id = %s AND n.role = 'standby'",
            STANDBY,
        )
        return bool(rows and rows[0][0])

    try:
        wait_for(at_head, timeout_s, "the standby at the log's head", every=0.5)
    except AssertionError:
        return False
    return True


def clients(http: Http, stack: Stack) -> tuple[httpx.Client, httpx.Client]:
    """(admin on the public listener, broker on the internal one), patient: a commit at 1M
    partitions, or a failover, can take a while."""
    return (
        bearer_client(http.base, stack.tokens["admin"], timeout_s=600),
        bearer_client(http.internal, stack.tokens["broker"], timeout_s=600),
    )
