"""A broker's lifeline on the internal listener: heartbeats and registrations are answered while
more metadata long-polls than the listener has threads are parked (they hold no thread), while
the fetch pool is taken by fetches waiting for an encoding, and while every thread of the
listener's pool holds a write waiting for a busy controller (heartbeats and registrations have a
pool of their own). A real listener (tests.api.live_listener) and this process's controller; no
timing: a heartbeat queued behind the held requests would never be answered while they are
held, and its read would time out."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench.fanout.heartbeat_shapes import server_timing
from controlplane import selectors
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.fetch_cache import fetch_cache
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.notifier import notifier
from controlplane.server.listener import ListenerApp
from devtools.stack import wait_for
from tests.api.live_listener import LiveListener, live_internal_listener
from tests.api.test_metadata_fetch_encodings import answered_by, asgi_answer, thread_name_app
from tests.conftest import heartbeat_body, registration_body

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 2  # each pool's: the listener's, the fetch's, the heartbeats'
HELD = THREADS + 2  # more held requests than a pool has threads
FETCH = "/internal/v1/metadata"


@pytest.fixture
def listener(settings: Any, transactional_db: None) -> Iterator[LiveListener]:
    fetch_cache().clear()
    with live_internal_listener(
        settings, threads=THREADS, fetch_threads=THREADS, heartbeat_threads=THREADS
    ) as running:
        yield running


class InFlight:
    """Requests sent each from a thread (and a connection) of its own; `answers()` joins them."""

    def __init__(self, count: int, send: Callable[[], tuple[int, Any]]) -> None:
        self._answers: list[Any] = [None] * count
        self._threads = [
            threading.Thread(target=self._run, args=(i, send), daemon=True) for i in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, index: int, send: Callable[[], tuple[int, Any]]) -> None:
        try:
            self._answers[index] = send()
        except Exception as error:  # the test reads it as a failed answer
            self._answers[index] = error

    def answers(self) -> list[Any]:
        for thread in self._threads:
            thread.join(timeout=30)
        return self._answers


def heartbeat(listener: LiveListener, token: str, broker_id: int, epoch: int) -> None:
    offset = cluster_read().last_offset
    status, beat = listener.request(
        "POST",
        "/internal/v1/broker-heartbeat",
        heartbeat_body(broker_id, epoch, offset),
        token=token,
    )
    assert status == 200, beat
    assert (beat["error_code"], beat["is_fenced"], beat["is_caught_up"]) == (0, False, True)


def registration(listener: LiveListener, token: str, broker_id: int) -> None:
    body = registration_body(broker_id, cluster_read().cluster_id)
    status, answer = listener.request("POST", "/internal/v1/broker-registration", body, token=token)
    assert status == 200 and answer["error_code"] == 0, answer


def queued(pool: Any) -> int:
    """Requests waiting for a thread of `pool` (its threads all busy)."""
    return int(pool._work_queue.qsize())


def test_heartbeats_are_answered_while_more_long_polls_than_threads_are_parked(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    token = tokens["broker"]
    epoch = register(1, unfence=True)
    head = cluster_read().last_offset
    parked = 3 * THREADS + 1  # more than every pool's threads together
    polls = InFlight(
        parked,
        lambda: listener.request("GET", f"{FETCH}?after_offset={head}&wait_ms=60000", token=token),
    )
    wait_for(lambda: notifier.parked == parked, 10, "every long-poll to be parked")

    for _ in range(3):
        heartbeat(listener, token, 1, epoch)
    assert notifier.parked == parked  # still parked: the heartbeats wrote nothing
    registration(listener, token, 2)

    # The registration's commit woke every long-poll, which answers its record.
    for status, answer in polls.answers():
        assert status == 200
        assert [record["type"] for record in answer["records"]] == ["RegisterBrokerRecord"]


@contextlib.contextmanager
def an_encoding_in_progress(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What fetches woken by a large commit meet: one reads and encodes it while the others
    wait for its answer (fetch_cache's single flight), each holding a thread of the fetch
    pool. Held here until the block ends, so the wait lasts as long as the test needs."""
    release = threading.Event()
    read_records = selectors.metadata_records_json

    def slow_read(**range_: int) -> list[str]:
        release.wait(timeout=30)
        return read_records(**range_)

    monkeypatch.setattr(selectors, "metadata_records_json", slow_read)
    try:
        yield
    finally:
        release.set()


def test_heartbeats_and_registrations_are_answered_while_fetches_take_every_thread(
    listener: LiveListener,
    tokens: dict[str, str],
    register: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = tokens["broker"]
    epoch = register(1, unfence=True)
    pool = listener.app.fetch_executor
    with an_encoding_in_progress(monkeypatch):
        fetches = InFlight(
            HELD, lambda: listener.request("GET", f"{FETCH}?after_offset=-1", token=token)
        )
        wait_for(lambda: queued(pool) == HELD - THREADS, 10, "a full fetch pool")

        for _ in range(3):
            heartbeat(listener, token, 1, epoch)
        registration(listener, token, 2)
        assert queued(pool) == HELD - THREADS  # the fetches still wait

    for status, answer in fetches.answers():
        assert status == 200 and answer["records"][0]["offset"] == 0


@contextlib.contextmanager
def a_busy_controller() -> Iterator[None]:
    """The controller in the middle of a long commit (a 100,000-partition change): every write
    sent to it waits for its turn. Held here until the block ends."""
    runtime = get_runtime()
    runtime.ensure_active()
    runtime._lock.acquire()
    try:
        yield
    finally:
        runtime._lock.release()


def test_heartbeats_are_answered_while_writes_waiting_for_the_controller_take_every_thread(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    token = tokens["broker"]
    epoch = register(1, unfence=True)
    pool = listener.app.executor
    report = {"broker_id": 1, "broker_epoch": epoch, "topics": []}
    with a_busy_controller():
        writes = InFlight(
            HELD,
            lambda: listener.request("POST", "/internal/v1/alter-partition", report, token=token),
        )
        wait_for(lambda: queued(pool) == HELD - THREADS, 10, "a full listener pool")

        for _ in range(3):
            heartbeat(listener, token, 1, epoch)
        assert queued(pool) == HELD - THREADS  # the writes still wait

    for status, answer in writes.answers():
        assert status == 200 and answer["error_code"] == 0, answer


# --- which pool answers, and whose wait is the listener's lag -----------------------------


def one_thread_pools(wsgi: Any) -> ListenerApp:
    """An internal listener's application whose pools have a thread each."""
    return ListenerApp(
        wsgi,
        name="internal",
        threads=1,
        max_body_bytes=1000,
        body_timeout_s=5,
        fetch_threads=1,
        heartbeat_threads=1,
    )


@pytest.fixture
def internal_app() -> Iterator[ListenerApp]:
    app = one_thread_pools(thread_name_app)
    yield app
    app.close()


def test_heartbeats_and_registrations_take_their_own_pool_whose_wait_is_the_lag(
    internal_app: ListenerApp,
) -> None:
    for path in ("/internal/v1/broker-heartbeat", "/internal/v1/broker-registration"):
        assert answered_by(internal_app, "POST", path).startswith("internal-heartbeat")
        assert internal_app.take_longest_wait() > 0.0
    for method, path in (("POST", "/internal/v1/alter-partition"), ("GET", FETCH)):
        assert not answered_by(internal_app, method, path).startswith("internal-heartbeat")
    # A queue of writes waiting for the controller, or of fetches, is no broker's silence.
    assert internal_app.take_longest_wait() == 0.0


# --- where a heartbeat's time went: the answer's Server-Timing ---------------------------------

HANDLER_S = 0.05


def slow_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """A WSGI app that takes `HANDLER_S` to answer."""
    time.sleep(HANDLER_S)
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b"{}"]


def answer_headers(app: ListenerApp, method: str, path: str) -> dict[bytes, bytes]:
    return dict(asgi_answer(app, method, path, body=b"{}")[0]["headers"])


def test_heartbeat_and_registration_answers_say_where_their_time_went_on_the_server() -> None:
    app = one_thread_pools(slow_app)
    try:
        for path in ("/internal/v1/broker-heartbeat", "/internal/v1/broker-registration"):
            phases = server_timing(answer_headers(app, "POST", path)[b"server-timing"].decode())
            assert phases is not None and set(phases) == {"lane", "wait", "handler", "resume"}
            assert all(value >= 0 for value in phases.values()), phases
            assert phases["handler"] >= HANDLER_S * 1000, phases  # the handler's own sleep
            others = (phases["lane"], phases["wait"], phases["resume"])
            assert all(value < phases["handler"] for value in others), phases
        # Only the heartbeat pool's answers carry it.
        for method, path in (("POST", "/internal/v1/alter-partition"), ("GET", FETCH)):
            assert b"server-timing" not in answer_headers(app, method, path)
    finally:
        app.close()
