"""The metadata fetch as "encode once, serve to every broker": its wire forms (JSON or
MessagePack, gzip or zstd or neither), its bounds (clamped, never refused), the per-process
cache of encoded answers, and the server's own pool for it."""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import msgspec
import pytest
import zstandard
from django.db import connection
from django.test.utils import CaptureQueriesContext

from controlplane import selectors
from controlplane.runtime import fetch_cache as fc
from controlplane.runtime.notifier import notifier
from controlplane.server.listener import ListenerApp
from controlplane.server.longpoll import ENVIRON_KEY
from controlplane.server.worker import internal_keep_alive_s
from devtools.stack import wait_for
from simulator.client import ControllerClient
from simulator.state import SimulatorCounters

FETCH = "/internal/v1/metadata"
ENCODINGS = [fc.IDENTITY, fc.GZIP, fc.ZSTD]


@pytest.fixture(autouse=True)
def _empty_fetch_cache() -> None:
    fc.fetch_cache().clear()


def fetch(api: Any, token: str, query: str = "", **headers: str) -> Any:
    extra = {f"HTTP_{name.upper()}": value for name, value in headers.items()}
    return api.client.get(f"{FETCH}?{query}", HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


def decoded(response: Any) -> dict[str, Any]:
    """The answer as a broker reads it: undo the Content-Encoding, then the media type."""
    body = response.content
    encoding = response.get("Content-Encoding", fc.IDENTITY)
    if encoding == fc.GZIP:
        body = gzip.decompress(body)
    elif encoding == fc.ZSTD:
        body = zstandard.ZstdDecompressor().decompress(body)
    if response["Content-Type"] == fc.MSGPACK:
        answer: dict[str, Any] = msgspec.msgpack.decode(body)
    else:
        answer = msgspec.json.decode(body)
    return answer


@pytest.fixture
def log_of_brokers(register: Callable[..., int]) -> None:
    for broker_id in range(4):
        register(broker_id, unfence=True)


# --- wire forms ---------------------------------------------------------------------------


@pytest.mark.parametrize("media_type", [fc.JSON, fc.MSGPACK])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_wire_form_carries_the_same_answer(api, tokens, log_of_brokers, media_type, encoding):
    plain = fetch(api, tokens["broker"], "after_offset=-1")
    assert plain["Content-Type"] == fc.JSON and not plain.has_header("Content-Encoding")
    reference = plain.json()
    assert len(reference["records"]) == reference["last_offset"] + 1 > 4
    # The documented fields, no other (the internal API reference).
    assert set(reference) == {
        "cluster_id",
        "controller_id",
        "controller_epoch",
        "last_offset",
        "log_start_offset",
        "error_code",
        "records",
    }

    response = fetch(
        api, tokens["broker"], "after_offset=-1", ACCEPT=media_type, ACCEPT_ENCODING=encoding
    )
    assert response.status_code == 200 and response["Content-Type"] == media_type
    assert response.get("Content-Encoding", fc.IDENTITY) == encoding
    assert response["Vary"] == "Accept, Accept-Encoding"
    assert decoded(response) == reference


def test_what_brokers_send_picks_msgpack_and_zstd(api, tokens, log_of_brokers):
    response = fetch(
        api,
        tokens["broker"],
        ACCEPT="application/msgpack, application/json;q=0.5",
        ACCEPT_ENCODING="zstd, gzip",
    )
    assert response["Content-Type"] == fc.MSGPACK and response["Content-Encoding"] == fc.ZSTD
    assert decoded(response) == fetch(api, tokens["broker"]).json()


@pytest.mark.parametrize(
    ("accept", "accept_encoding", "wire"),
    [
        ("", "", (fc.JSON, fc.IDENTITY)),
        ("*/*", "gzip", (fc.JSON, fc.GZIP)),
        ("application/*", "*", (fc.JSON, fc.ZSTD)),
        ("application/msgpack;q=0, */*", "zstd;q=0, gzip;q=0.1", (fc.JSON, fc.GZIP)),
        ("application/json;q=0, application/*", "zstd;q=0.5, gzip", (fc.MSGPACK, fc.GZIP)),
        ("Application/MsgPack", "br, deflate", (fc.MSGPACK, fc.IDENTITY)),
        ("text/html, application/json;q=0.1", "identity, gzip;q=0", (fc.JSON, fc.IDENTITY)),
        ("application/msgpack, application/json", "gzip, zstd", (fc.JSON, fc.ZSTD)),
    ],
)
def test_negotiation_honours_q_values(accept, accept_encoding, wire):
    chosen = fc.negotiate(accept=accept, accept_encoding=accept_encoding)
    assert chosen == fc.WireForm(*wire)


@pytest.mark.parametrize(
    "accept", ["text/html", "application/msgpack;q=0, application/json;q=0", "*/*;q=0"]
)
def test_an_accept_of_nothing_served_is_406_naming_what_is(api, tokens, accept):
    response = fetch(api, tokens["broker"], ACCEPT=accept)
    assert response.status_code == 406 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["error_code"] == 35 and body["error"] == "UNSUPPORTED_VERSION"
    assert fc.JSON in body["error_message"] and fc.MSGPACK in body["error_message"]


def test_errors_stay_json_whatever_was_asked(api, tokens):
    response = fetch(api, tokens["broker"], "max_records=abc", ACCEPT=fc.MSGPACK)
    assert response.status_code == 400 and response.json()["error_code"] == 42
    response = fetch(api, None, ACCEPT=fc.MSGPACK)
    assert response.status_code == 401 and response.json()["error"] == "SASL_AUTHENTICATION_FAILED"


# --- bounds: clamped, never refused -------------------------------------------------------


def test_bounds_above_the_limits_are_clamped(api, tokens, log_of_brokers, settings):
    everything = fetch(api, tokens["broker"]).json()["records"]
    for query in ("max_records=1000000000", "max_bytes=1000000000000"):
        response = fetch(api, tokens["broker"], query)
        assert response.status_code == 200 and response.json()["records"] == everything
    settings.CP_FETCH_MAX_RECORDS = 2
    clamped = fetch(api, tokens["broker"], "max_records=1000000000").json()["records"]
    assert clamped == everything[:2]


@pytest.mark.parametrize(
    "query",
    ["max_records=abc", "max_records=-1", "max_records=0", "max_bytes=abc", "max_bytes=-5"],
)
def test_junk_bounds_are_invalid_requests(api, tokens, query):
    response = fetch(api, tokens["broker"], query)
    assert response.status_code == 400
    body = response.json()
    assert body["error_code"] == 42 and query.split("=")[0] in body["error_message"]


def records_text_size(body: bytes) -> int:
    """The records' JSON text in an answer, as max_bytes counts it (each record and a comma)."""
    text = body[body.index(b'"records":[') + len(b'"records":[') : -len(b"]}")]
    return len(text) + 1 if text else 0


def test_max_bytes_bounds_the_answer_to_at_least_one_record(api, tokens, log_of_brokers):
    token = tokens["broker"]
    whole = fetch(api, token).json()["records"]
    # What the first 1, 2, 3 records weigh, as max_bytes counts them.
    one, two, three = (
        records_text_size(fetch(api, token, f"max_records={n}").content) for n in (1, 2, 3)
    )
    cases = [(1, 1), (one, 1), (two - 1, 1), (two, 2), (three - 1, 2), (three, 3)]
    for max_bytes, count in cases:
        answer = fetch(api, token, f"max_bytes={max_bytes}")
        assert answer.json()["records"] == whole[:count], max_bytes
        # Within the bound, but for a first record larger than it alone.
        assert records_text_size(answer.content) <= max_bytes or count == 1


def test_max_bytes_counts_the_same_records_in_every_wire_form(api, tokens, log_of_brokers):
    size = records_text_size(fetch(api, tokens["broker"], "max_records=2").content)
    expected = fetch(api, tokens["broker"], f"max_bytes={size}").json()["records"]
    assert len(expected) == 2
    for encoding in ENCODINGS:
        response = fetch(
            api, tokens["broker"], f"max_bytes={size}", ACCEPT=fc.MSGPACK, ACCEPT_ENCODING=encoding
        )
        assert decoded(response)["records"] == expected


# --- the cache ----------------------------------------------------------------------------


def log_reads(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "cp_metadata_record" in q["sql"]]


def test_a_second_identical_fetch_is_served_from_the_cache(api, tokens, log_of_brokers):
    cache = fc.fetch_cache()
    with CaptureQueriesContext(connection) as first:
        miss = fetch(api, tokens["broker"], ACCEPT=fc.MSGPACK, ACCEPT_ENCODING=fc.ZSTD)
    assert log_reads(first) and cache.stats()["misses"] == 1
    with CaptureQueriesContext(connection) as second:
        hit = fetch(api, tokens["broker"], ACCEPT=fc.MSGPACK, ACCEPT_ENCODING=fc.ZSTD)
    assert not log_reads(second)  # the cluster row (the head) alone
    assert hit.content == miss.content
    stats = cache.stats()
    assert stats["hits"] == 1 and stats["misses"] == 1 and stats["entries"] == 1
    assert stats["bytes"] == len(hit.content)


def test_each_wire_form_is_a_key_of_its_own(api, tokens, log_of_brokers):
    for encoding in ENCODINGS:
        fetch(api, tokens["broker"], ACCEPT_ENCODING=encoding)
    assert fc.fetch_cache().stats()["entries"] == len(ENCODINGS)


def test_a_commit_moves_the_head_and_makes_a_new_entry(api, tokens, log_of_brokers, register):
    cache = fc.fetch_cache()
    before = fetch(api, tokens["broker"]).json()
    fetch(api, tokens["broker"])
    assert cache.stats()["hits"] == 1
    register(9)
    after = fetch(api, tokens["broker"]).json()
    assert after["last_offset"] > before["last_offset"]
    assert after["records"][: len(before["records"])] == before["records"]
    assert after["records"][-1]["offset"] == after["last_offset"]
    stats = cache.stats()
    assert stats["misses"] == 2 and stats["entries"] == 2


def test_fetches_at_the_head_share_one_entry_and_never_read_the_log(api, tokens, log_of_brokers):
    head = fetch(api, tokens["broker"], "max_records=1").json()["last_offset"]
    fc.fetch_cache().clear()
    with CaptureQueriesContext(connection) as captured:
        for after in (head, head + 1, 2**62):
            answer = fetch(api, tokens["broker"], f"after_offset={after}&max_records=7")
            assert answer.json()["records"] == [] and answer.json()["last_offset"] == head
    assert not log_reads(captured)
    assert fc.fetch_cache().stats() | {"bytes": 0} == {
        "hits": 2,
        "misses": 1,
        "coalesced": 0,
        "evictions": 0,
        "not_kept": 0,
        "entries": 1,
        "bytes": 0,
        "max_bytes": fc.fetch_cache().max_bytes,
    }


def key(n: int) -> fc.FetchKey:
    return fc.FetchKey(after_offset=n, max_records=1, max_bytes=1, wire=fc.WireForm(), head=())


def test_the_byte_bound_evicts_the_least_recently_used():
    cache = fc.FetchCache(max_bytes=100)
    fills: list[int] = []

    def fill(n: int, size: int = 40) -> Callable[[], fc.EncodedAnswer]:
        def encode() -> fc.EncodedAnswer:
            fills.append(n)
            return fc.EncodedAnswer(body=bytes(size), records=1)

        return encode

    for n in (1, 2):
        cache.get_or_fill(key(n), fill(n))
    cache.get_or_fill(key(1), fill(1))  # used again: 2 is now the least recent
    cache.get_or_fill(key(3), fill(3))
    assert cache.stats()["evictions"] == 1 and cache.stats()["bytes"] == 80
    cache.get_or_fill(key(1), fill(1))
    cache.get_or_fill(key(3), fill(3))
    assert fills == [1, 2, 3]
    cache.get_or_fill(key(2), fill(2))  # evicted: encoded again
    assert fills == [1, 2, 3, 2]


def test_an_answer_larger_than_the_bound_is_served_not_kept():
    cache = fc.FetchCache(max_bytes=100)
    cache.get_or_fill(key(1), lambda: fc.EncodedAnswer(body=bytes(50), records=1))
    huge = cache.get_or_fill(key(2), lambda: fc.EncodedAnswer(body=bytes(101), records=1))
    assert len(huge.body) == 101
    stats = cache.stats()
    assert stats["not_kept"] == 1 and stats["entries"] == 1 and stats["bytes"] == 50


def test_a_failed_fill_is_not_kept_and_reaches_its_waiters():
    cache = fc.FetchCache(max_bytes=100)

    def broken() -> fc.EncodedAnswer:
        raise RuntimeError("database gone")

    with pytest.raises(RuntimeError):
        cache.get_or_fill(key(1), broken)
    answer = cache.get_or_fill(key(1), lambda: fc.EncodedAnswer(body=b"x", records=1))
    assert answer.body == b"x" and cache.stats()["misses"] == 2


def run_together(count: int, call: Callable[[], Any]) -> list[Any]:
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        try:
            results[index] = call()
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_fetches_of_one_range_read_and_encode_once(
    api, tokens, log_of_brokers, monkeypatch
):
    brokers = 12
    cache = fc.fetch_cache()
    reads: list[dict[str, int]] = []
    read_records = selectors.metadata_records_json

    def first_read_waits_for_the_others(**range_: int) -> list[str]:
        reads.append(range_)
        # Hold the fill until every other fetch of the range is waiting for it.
        wait_for(lambda: cache.stats()["coalesced"] == brokers - 1, 10, "the others to wait")
        return read_records(**range_)

    monkeypatch.setattr(selectors, "metadata_records_json", first_read_waits_for_the_others)
    wire = fc.WireForm(fc.MSGPACK, fc.ZSTD)
    answers = run_together(
        brokers,
        lambda: fc.fetch_answer(after_offset=-1, max_records=1000, max_bytes=10**6, wire=wire),
    )
    assert len(reads) == 1
    assert all(answer is answers[0] for answer in answers)  # the very same bytes
    assert cache.stats()["misses"] == 1 and cache.stats()["coalesced"] == brokers - 1
    body = msgspec.msgpack.decode(zstandard.ZstdDecompressor().decompress(answers[0].body))
    assert body == fetch(api, tokens["broker"]).json()


# --- the server: a pool of its own for the fetch, and the keep-alive ----------------------


def thread_name_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """A WSGI app answering which thread answered; `?defer` defers a long-poll whose
    refetch answers which thread refetched."""
    if environ["QUERY_STRING"] == "defer":
        environ[ENVIRON_KEY].defer(
            generation=notifier.generation - 1,  # already moved on: the refetch runs at once
            timeout_s=5,
            refetch=lambda: threading.current_thread().name.encode(),
        )
    if environ["QUERY_STRING"] == "defer-and-fail":
        environ[ENVIRON_KEY].defer(
            generation=notifier.generation - 1,
            timeout_s=5,
            refetch=_refetch_fails,
        )
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [threading.current_thread().name.encode()]


def answered_by(app: ListenerApp, method: str, path: str, query: str = "") -> str:
    return bytes(asgi_answer(app, method, path, query)[1]["body"]).decode()


def asgi_answer(
    app: ListenerApp, method: str, path: str, query: str = "", body: bytes = b""
) -> list[dict[str, Any]]:
    """The ASGI messages `app` sends for one request (its start, then its body)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [],
        "server": ("127.0.0.1", 8001),
        "client": ("127.0.0.1", 40000),
    }
    asyncio.run(app(scope, receive, send))
    return sent


@pytest.fixture
def internal_app() -> Iterator[ListenerApp]:
    app = ListenerApp(
        thread_name_app,
        name="internal",
        threads=2,
        max_body_bytes=1000,
        body_timeout_s=5,
        fetch_threads=2,
    )
    yield app
    app.close()


def test_fetches_take_their_own_pool_and_never_count_as_lag(internal_app):
    for path in (FETCH, f"{FETCH}/snapshot"):
        assert answered_by(internal_app, "GET", path).startswith("internal-fetch")
    assert internal_app.take_longest_wait() == 0.0  # a queue of fetches is no broker's silence
    for method, path in (("POST", "/internal/v1/broker-heartbeat"), ("POST", FETCH)):
        assert answered_by(internal_app, method, path).startswith("internal-listener")
    assert internal_app.take_longest_wait() > 0.0


def test_a_deferred_long_poll_refetches_in_the_fetch_pool(internal_app):
    assert answered_by(internal_app, "GET", FETCH, "defer").startswith("internal-fetch")


def _refetch_fails() -> bytes:
    raise RuntimeError("the log could not be read (the database went away mid-poll)")


def test_a_long_poll_whose_refetch_fails_is_answered_empty_never_dropped(internal_app):
    """Issue 33: a long-poll that cannot be answered with records in time is answered with the
    empty answer it had (the broker polls again), never a dropped connection."""
    assert answered_by(internal_app, "GET", FETCH, "defer-and-fail").startswith("internal-fetch")


def test_the_public_listener_has_one_pool():
    app = ListenerApp(
        thread_name_app, name="public", threads=1, max_body_bytes=1000, body_timeout_s=5
    )
    try:
        assert answered_by(app, "GET", FETCH).startswith("public-listener")
    finally:
        app.close()


def test_the_internal_keep_alive_outlasts_three_heartbeat_intervals():
    assert internal_keep_alive_s(2, 2000) == 6  # gunicorn's 2 s, broker.heartbeat.interval.ms
    assert internal_keep_alive_s(30, 2000) == 30
    assert internal_keep_alive_s(0, 500) == 5  # never below the simulator's idle expiry


# --- the broker simulator negotiates the compact form -------------------------------------


def test_the_simulator_asks_for_msgpack_and_zstd_and_reads_it():
    answer = {"cluster_id": "c", "controller_id": 1, "controller_epoch": 2, "last_offset": 0}
    answer["records"] = [
        {"offset": 0, "type": "TopicRecord", "controller_epoch": 2, "timestamp_ms": 5, "data": {}}
    ]
    asked: list[httpx.Headers] = []

    def serve(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers)
        body = zstandard.ZstdCompressor().compress(msgspec.msgpack.encode(answer))
        headers = {"Content-Type": fc.MSGPACK, "Content-Encoding": fc.ZSTD}
        return httpx.Response(200, headers=headers, content=body)

    async def fetch_once() -> dict[str, Any]:
        client = ControllerClient(
            "http://public",
            "token",
            "sim",
            SimulatorCounters(),
            internal_url="http://internal",
            request_timeout_s=5,
            max_connections=2,
            trust_env=False,
            transport=httpx.MockTransport(serve),
        )
        client.open()
        try:
            return await client.fetch_metadata(after_offset=-1, max_records=10, wait_ms=0)
        finally:
            await client.close()

    assert asyncio.run(fetch_once()) == answer
    assert asked[0]["Accept"] == "application/msgpack, application/json;q=0.5"
    assert asked[0]["Accept-Encoding"] == "zstd, gzip"
