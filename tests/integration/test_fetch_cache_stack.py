"""The fetch cache on a real stack: brokers long-poll in every wire form while the controller is
killed (SIGKILL) in the middle of a 20,000-partition commit. Whatever any broker was answered,
before, during and after, is in the log once everything settles: no web process ever served a
range that was not committed, though the next controller writes other records at the offsets
the killed commit would have taken."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid
from typing import Any

import httpx
import msgspec
import psycopg
import pytest

from tests.integration.conftest import Stack, wait_for

pytestmark = pytest.mark.integration

FETCH = "/internal/v1/metadata"
WIRE_FORMS = [
    (media_type, encoding)
    for media_type in ("application/json", "application/msgpack")
    for encoding in (None, "gzip", "zstd")  # None: identity, no Content-Encoding
]
BIG_TOPIC = "twenty-thousand"


class Follower(threading.Thread):
    """A broker following the log in one wire form: every record it was answered, by offset."""

    def __init__(self, url: str, token: str, media_type: str, encoding: str | None) -> None:
        super().__init__(daemon=True, name=f"follower-{media_type}-{encoding}")
        self.url = url
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": media_type,
            "Accept-Encoding": encoding or "identity",
        }
        self.media_type, self.encoding = media_type, encoding
        self.records: dict[int, dict[str, Any]] = {}
        self.offset = -1
        self.stopping = threading.Event()
        self.trouble: list[str] = []

    def run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stopping.is_set():
                params = {"after_offset": self.offset, "max_records": 100_000, "wait_ms": 1000}
                try:
                    response = client.get(self.url + FETCH, params=params, headers=self.headers)
                except httpx.TransportError as error:
                    self.trouble.append(repr(error))
                    continue
                self.take(response)

    def take(self, response: httpx.Response) -> None:
        wire = (response.headers["Content-Type"], response.headers.get("Content-Encoding"))
        if response.status_code != 200 or wire != (self.media_type, self.encoding):
            self.trouble.append(f"HTTP {response.status_code} {wire}: {response.text[:200]}")
            return
        # httpx undid the Content-Encoding (gzip, zstd) itself.
        if self.media_type == "application/msgpack":
            answer = msgspec.msgpack.decode(response.content)
        else:
            answer = msgspec.json.decode(response.content)
        for record in answer["records"]:
            if record["offset"] != self.offset + 1:
                self.trouble.append(f"offset {record['offset']} after {self.offset}")
            self.records[record["offset"]] = record
            self.offset = record["offset"]


def register(stack: Stack, broker_ids: range) -> dict[int, int]:
    """The brokers registered, by id: their epochs."""
    http = stack.http
    assert http is not None
    _, head = http.get(f"{FETCH}?after_offset=-1&max_records=1", stack.tokens["broker"])
    epochs = {}
    for broker_id in broker_ids:
        status, answer = http.post(
            "/internal/v1/broker-registration",
            {
                "broker_id": broker_id,
                "cluster_id": head["cluster_id"],
                "incarnation_id": str(uuid.uuid4()),
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": "h",
                        "port": 9092,
                        "security_protocol": "PLAINTEXT",
                    }
                ],
                "rack": "r1",
                "pod": "broker",
                "log_dirs": [str(uuid.uuid4())],
            },
            stack.tokens["broker"],
        )
        assert status == 200 and answer["error_code"] == 0, answer
        epochs[broker_id] = int(answer["broker_epoch"])
    unfence(stack, epochs)
    return epochs


def unfence(stack: Stack, epochs: dict[int, int]) -> None:
    """A heartbeat each (caught up): unfenced, for a session (brokers to place partitions on)."""
    assert stack.http is not None
    for broker_id, epoch in epochs.items():
        body = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 2**62}
        # Until unfenced, as a broker does: a busy controller's answer is the committed state
        # (CP_HEARTBEAT_PATIENCE_MS), and the next heartbeat learns the change.
        deadline = time.monotonic() + 15
        while True:
            status, beat = stack.http.post(
                "/internal/v1/broker-heartbeat", body, stack.tokens["broker"]
            )
            assert status == 200, beat
            if beat["is_fenced"] is False:
                break
            assert time.monotonic() < deadline, beat
            time.sleep(0.1)


def log_end(stack: Stack) -> int:
    return int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def create_topic(stack: Stack, name: str, partitions: int, timeout: float) -> tuple[int, Any]:
    assert stack.http is not None
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}]}
    return stack.http.post("/api/v1/create-topics", body, stack.tokens["admin"], timeout=timeout)


def send_and_forget(stack: Stack, name: str, partitions: int) -> None:
    """The request whose commit is killed: its answer (a timeout) is nobody's concern."""

    def send() -> None:
        # The controller dies under it (a 504 later), or the stack stops under it.
        with contextlib.suppress(Exception):
            create_topic(stack, name, partitions, timeout=60)

    threading.Thread(target=send, daemon=True).start()


def kill_inside_the_commit(stack: Stack, name: str) -> None:
    """SIGKILL the controller once its transaction writes the log (PostgreSQL says so)."""
    url = stack.env["DATABASE_URL"].replace("postgres://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as watcher:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            (writing,) = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND state <> 'idle' AND xact_start IS NOT NULL"
                " AND query ~* '^(COPY|INSERT INTO) \"?cp_(metadata_record|partition)'"
            ).fetchone()
            if writing:
                stack.kill(name, signal.SIGKILL)
                return
        raise AssertionError("the controller never began the large commit")


def test_no_broker_is_ever_answered_a_range_that_was_not_committed(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    killed_epoch = stack.wait_active("controller-a")
    http = stack.start_web()
    epochs = register(stack, range(1, 4))
    assert create_topic(stack, "before", 50, timeout=30)[0] == 200

    followers = [
        Follower(http.internal, stack.tokens["broker"], media_type, encoding)
        for media_type, encoding in WIRE_FORMS
        for _ in range(2)  # two of each: one range, one fill, per web process
    ]
    for follower in followers:
        follower.start()
    wait_for(lambda: all(f.offset >= log_end(stack) for f in followers), 30, "followers at head")

    unfence(stack, epochs)  # (their sessions may have lapsed meanwhile)
    send_and_forget(stack, BIG_TOPIC, 20_000)
    kill_inside_the_commit(stack, "controller-a")
    stack.start_controller("controller-b", 3001)
    stack.wait_active("controller-b")
    # The next controller writes other records at the offsets the killed commit would have had.
    register(stack, range(4, 6))
    assert create_topic(stack, "after", 30, timeout=30)[0] == 200
    after = log_end(stack)
    # Brokers' sessions lapse and are fenced meanwhile: the log may go on moving.
    wait_for(
        lambda: all(f.offset >= max(after, log_end(stack)) for f in followers),
        30,
        "followers at the new head",
    )
    for follower in followers:
        follower.stopping.set()
    for follower in followers:
        follower.join(timeout=10)

    # The killed controller's commit is not in the log. Its web node's retry (the same request
    # id) may since have been applied by the next controller: that is a commit of its own.
    big = stack.sql(
        "SELECT count(*) FROM cp_metadata_record WHERE record_type = 'TopicRecord'"
        " AND data->>'name' = %s AND controller_epoch = %s",
        BIG_TOPIC,
        killed_epoch,
    )[0][0]
    assert big == 0, "the kill landed after the commit: nothing was tested"
    # The brokers' sessions go on lapsing, and their fencings on committing: the log read up to
    # an end read first (each commit moves the end with its records, so all up to it are there).
    end = log_end(stack)
    log = {
        offset: {
            "offset": offset,
            "type": record_type,
            "controller_epoch": epoch,
            "timestamp_ms": timestamp,
            "data": data,
        }
        for offset, record_type, epoch, timestamp, data in stack.sql(
            'SELECT "offset", record_type, controller_epoch, timestamp_ms, data'
            ' FROM cp_metadata_record WHERE "offset" <= %s ORDER BY "offset"',
            end,
        )
    }
    assert sorted(log) == list(range(end + 1))
    for follower in followers:
        assert follower.trouble == [], (follower.name, follower.trouble[:5])
        assert sorted(follower.records) == list(range(follower.offset + 1)), follower.name
        assert follower.records == {offset: log[offset] for offset in follower.records}
    result = stack.manage("verify_metadata", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
