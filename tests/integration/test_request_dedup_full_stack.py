"""A request id is applied once on real parts (issue 15): PostgreSQL, Redis, gunicorn, controllers.

Two ways copies of one request id meet in one controller batch: a client that retries while its
first attempt still waits (both copies sent at once), and a controller paused past its lease while
web nodes re-send the events it never answered (the originals still wait in the channel when the
next controller takes over and takes them all in one batch).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import itertools
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.stack import Http, Stack, running_stack, wait_for
from tests.conftest import need_service
from tests.integration.test_controller_full_stack import verify

pytestmark = pytest.mark.integration

PATH = "/api/v1/incremental-alter-configs"
VALUES = itertools.count(100_000)  # every write sets a new value, so none is a no-op


def set_retention(value: int) -> dict[str, Any]:
    config = {"name": "log.retention.ms", "config_operation": "SET", "value": str(value)}
    return {"resources": [{"resource_type": "BROKER", "resource_name": "", "configs": [config]}]}


def send(http: Http, token: str, request_id: str, value: int) -> tuple[int, Any]:
    try:
        return http.post(
            PATH, set_retention(value), token, headers={"X-Request-ID": request_id}, timeout=60
        )
    except Exception as error:  # a reset connection: no answer at all
        return -1, repr(error)


def acknowledged(status: int, answer: Any) -> bool:
    return status == 200 and answer["responses"][0]["error_code"] == 0


def writes_by_request(stack: Stack, prefix: str) -> dict[str, list[int]]:
    rows = stack.sql(
        'SELECT request_id, "offset" FROM cp_metadata_record WHERE request_id LIKE %s'
        ' ORDER BY "offset"',
        prefix + "%",
    )
    found: dict[str, list[int]] = {}
    for request_id, offset in rows:
        found.setdefault(request_id, []).append(offset)
    return found


def audit_rows_by_request(stack: Stack, prefix: str) -> dict[str, list[tuple[Any, ...]]]:
    rows = stack.sql(
        "SELECT request_id, outcome, first_offset FROM cp_audit_event"
        " WHERE request_id LIKE %s AND first_offset IS NOT NULL",
        prefix + "%",
    )
    found: dict[str, list[tuple[Any, ...]]] = {}
    for request_id, *row in rows:
        found.setdefault(request_id, []).append(tuple(row))
    return found


@contextlib.contextmanager
def stack_with(root: Path, **settings: str) -> Iterator[Stack]:
    need_service("PostgreSQL", "127.0.0.1", 5432)
    need_service("Redis", "127.0.0.1", 6379)
    # Its own Redis key prefix: no other stack's controller takes these events.
    with running_stack(root / "logs", settings=settings) as stack:
        yield stack


def test_two_copies_sent_at_once_are_applied_once_and_answered_alike(tmp_path: Path) -> None:
    with stack_with(tmp_path, CP_CONTROLLER_LEASE_MS="6000") as stack:
        stack.start_controller("controller-a", 3000)
        stack.wait_active("controller-a")
        http = stack.start_web(workers=2, threads=8)
        token, prefix = stack.tokens["admin"], f"twice-{uuid.uuid4().hex[:8]}-"

        def both_copies(n: int) -> tuple[str, list[tuple[int, Any]]]:
            request_id, value = f"{prefix}{n}", next(VALUES)
            start = threading.Barrier(2)

            def copy() -> tuple[int, Any]:
                start.wait(timeout=30)
                return send(http, token, request_id, value)

            with concurrent.futures.ThreadPoolExecutor(2) as pair:
                answers = list(pair.map(lambda _: copy(), range(2)))
            return request_id, answers

        with concurrent.futures.ThreadPoolExecutor(8) as clients:
            sent = dict(clients.map(both_copies, range(120)))

        written = writes_by_request(stack, prefix)
        twice = {r: offsets for r, offsets in written.items() if len(offsets) > 1}
        assert twice == {}, f"{len(twice)} request id(s) applied twice: {twice}"
        for request_id, answers in sent.items():
            assert all(acknowledged(*a) for a in answers), answers
            assert answers[0] == answers[1]  # the same answer, whichever copy ran
            assert len(written[request_id]) == 1
        audited = audit_rows_by_request(stack, prefix)
        assert {r: len(rows) for r, rows in audited.items()} == dict.fromkeys(sent, 1)
        assert all(rows[0][1] == written[r][0] for r, rows in audited.items())
        verify(stack)


@dataclasses.dataclass
class RetryingWriter:
    """A client that sends writes with unique request ids and retries each with the same id on
    any failure until it is acknowledged."""

    http: Http
    token: str
    prefix: str
    stop: threading.Event
    answers: dict[str, list[tuple[int, Any]]] = dataclasses.field(default_factory=dict)
    acknowledged: list[str] = dataclasses.field(default_factory=list)

    def run(self) -> None:
        for n in itertools.count():
            if self.stop.is_set():
                return
            request_id, value = f"{self.prefix}{n}", next(VALUES)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                status, answer = send(self.http, self.token, request_id, value)
                self.answers.setdefault(request_id, []).append((status, answer))
                if acknowledged(status, answer):
                    self.acknowledged.append(request_id)
                    break
                time.sleep(0.05)


def test_a_controller_paused_past_its_lease_leaves_no_request_id_applied_twice(
    tmp_path: Path,
) -> None:
    # The production lease (6 s): a gap with no consumer longer than the web nodes' 5 s re-send
    # is what puts an event and its re-sent copy in the channel together.
    with stack_with(tmp_path, CP_CONTROLLER_LEASE_MS="6000", CP_REQUEST_TIMEOUT_MS="30000") as st:
        st.start_controller("controller-a", 3000)
        epoch = st.wait_active("controller-a")
        st.start_controller("controller-b", 3001)
        st.start_controller("controller-c", 3002)
        nodes = [st.start_web("web-a", 2, 8), st.start_web("web-b", 2, 8)]
        prefix, stop = f"paused-{uuid.uuid4().hex[:8]}-", threading.Event()
        writers = [
            RetryingWriter(nodes[i % 2], st.tokens["admin"], f"{prefix}{i}-", stop)
            for i in range(8)
        ]
        threads = [threading.Thread(target=w.run, daemon=True) for w in writers]
        for thread in threads:
            thread.start()
        count = lambda: sum(len(w.acknowledged) for w in writers)  # noqa: E731
        wait_for(lambda: count() >= 40, 60, "writes through controller-a")

        st.kill("controller-a", signal.SIGSTOP)
        time.sleep(12)  # twice the lease: a standby takes over with the next epoch
        holder, new_epoch, _ = st.lease()
        assert holder in ("controller-b", "controller-c") and new_epoch > epoch
        st.kill("controller-a", signal.SIGCONT)
        resumed = count()
        wait_for(lambda: count() >= resumed + 40, 60, "writes after the takeover")
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a writer never got an answer"

        written = writes_by_request(st, prefix)
        twice = {r: offsets for r, offsets in written.items() if len(offsets) > 1}
        assert twice == {}, f"{len(twice)} request id(s) applied twice: {twice}"
        acked = [r for w in writers for r in w.acknowledged]
        assert acked and all(len(written.get(r, [])) == 1 for r in acked)
        # Every acknowledged answer of one request id is the same answer.
        for writer in writers:
            for request_id in writer.acknowledged:
                answers = [a for a in writer.answers[request_id] if acknowledged(*a)]
                assert all(a == answers[0] for a in answers)
        # Writes waited through the pause and were applied by the new epoch, exactly once.
        epochs = st.sql(
            "SELECT DISTINCT controller_epoch FROM cp_metadata_record WHERE request_id LIKE %s",
            prefix + "%",
        )
        assert {e for (e,) in epochs} >= {epoch, new_epoch}
        audited = audit_rows_by_request(st, prefix)
        assert all(len(rows) == 1 for rows in audited.values())
        assert set(acked) <= set(audited)
        verify(st)  # the log replays to the tables, and no request id was applied twice


def test_one_request_id_from_two_principals_at_once_is_two_writes(tmp_path: Path) -> None:
    """Request ids belong to their principal (issue 20): the same ids sent at once by two
    principals are two writes each, every principal answered with its own, and each reuse is
    audited once, by the controller process, as a RequestIdCollision."""
    with stack_with(tmp_path, CP_CONTROLLER_LEASE_MS="6000") as stack:
        stack.start_controller("controller-a", 3000)
        stack.wait_active("controller-a")
        http = stack.start_web(workers=2, threads=8)
        ops = stack.manage("create_principal", "ops", "--super-user").stdout.split()[-1]
        senders = {"User:admin": stack.tokens["admin"], "User:ops": ops}
        prefix = f"shared-{uuid.uuid4().hex[:8]}-"

        def both_principals(n: int) -> tuple[str, dict[str, tuple[int, Any]]]:
            request_id, start = f"{prefix}{n}", threading.Barrier(2)

            def one(token: str) -> tuple[int, Any]:
                start.wait(timeout=30)
                return send(http, token, request_id, next(VALUES))

            with concurrent.futures.ThreadPoolExecutor(2) as pair:
                answers = dict(zip(senders, pair.map(one, senders.values()), strict=True))
            return request_id, answers

        with concurrent.futures.ThreadPoolExecutor(8) as clients:
            sent = dict(clients.map(both_principals, range(60)))

        rows = stack.sql(
            'SELECT request_id, principal, "offset" FROM cp_metadata_record'
            ' WHERE request_id LIKE %s ORDER BY "offset"',
            prefix + "%",
        )
        written: dict[str, dict[str, list[int]]] = {}
        for request_id, principal, offset in rows:
            written.setdefault(request_id, {}).setdefault(principal, []).append(offset)
        assert {r: {p: len(o) for p, o in w.items()} for r, w in written.items()} == {
            r: dict.fromkeys(senders, 1) for r in sent
        }
        collided = stack.sql(
            "SELECT request_id, principal, resources FROM cp_audit_event"
            " WHERE api = 'RequestIdCollision' AND request_id LIKE %s",
            prefix + "%",
        )
        assert sorted(r for r, _, _ in collided) == sorted(sent)
        for _, principal, resources in collided:
            (earlier,) = set(senders) - {principal}
            assert [r["resource_name"] for r in resources] == ["IncrementalAlterConfigs", earlier]
        audited = stack.sql(
            "SELECT request_id, principal, first_offset FROM cp_audit_event"
            " WHERE api = 'IncrementalAlterConfigs' AND request_id LIKE %s",
            prefix + "%",
        )
        assert sorted((r, p) for r, p, _ in audited) == sorted(
            (r, p) for r in sent for p in senders
        )
        assert all(acknowledged(*a) for answers in sent.values() for a in answers.values())
        # Each principal's audit row names its own write.
        for request_id, principal, offset in audited:
            assert written[request_id][principal] == [offset]
        verify(stack)
