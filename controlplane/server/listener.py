"""One listener's application: Django (WSGI) answering in the listener's own thread pool.

The event loop reads each request whole (its body within the body deadline, at most
`CP_MAX_BODY_BYTES`), hands it to a thread of this listener's pool, and writes the answer. A
deferred metadata long-poll (`controlplane.server.longpoll`) waits on the loop in between.

The internal listener has two more pools, each chosen by path before Django sees the request:

- the metadata fetch's (`GET /internal/v1/metadata` and the paths under it): one commit wakes
  every long-polling broker at once, and their refetches (or a catch-up of 100,000 records)
  must never queue ahead of the other requests;
- the heartbeats' (`POST /internal/v1/broker-heartbeat` and `/broker-registration`): a broker's
  lifeline never queues behind AlterPartition, AlterReplicaState or Envelopes, which wait for
  the controller while it commits a large change and would otherwise hold every thread. Only
  this pool's wait counts as the listener's lag for the fencing rule: a queue of other requests
  is no broker's silence. In that pool a broker has one heartbeat at a time, and a rate past
  which it is answered 429 THROTTLING_QUOTA_EXCEEDED before anything is applied
  (`controlplane.server.peer_limits`): one broker's flood never takes the others' threads.

A principal and address have at most `max_parked_per_peer` long-polls parked; one more is
answered at once with its empty answer.

A heartbeat's or registration's answer says where its time went on the server, in a
`Server-Timing` header (W3C Server Timing, milliseconds): `lane` from its headers read until it
was handed to its pool (its body read, its turn in its broker's lane), `wait` for a thread,
`handler` (Django's answer), `resume` until the event loop took the answer back to send it. What
the broker measures beyond their sum was spent outside them: the event loop reading the request's
headers, the network, the broker's own process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote_to_bytes

from controlplane.server.longpoll import ENVIRON_KEY, LongPoll
from controlplane.server.peer_limits import HeartbeatLanes, ParkedLongPolls

logger = logging.getLogger("controlplane.server")

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Headers = list[tuple[bytes, bytes]]

# The metadata fetch's path: its GETs (and those of the paths under it) take the fetch pool.
METADATA_FETCH_PATH = "/internal/v1/metadata"
# A broker's lifeline: their POSTs take the heartbeat pool.
HEARTBEAT_PATHS = frozenset({"/internal/v1/broker-heartbeat", "/internal/v1/broker-registration"})


class Refused(Exception):
    """A request the server answers itself (408, 413), closing the connection."""

    def __init__(self, status: int, error: str, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.code, self.message = status, error, code, message


def error_answer(status: int, error: str, code: int, message: str) -> tuple[Headers, bytes]:
    body = json.dumps({"error_code": code, "error": error, "error_message": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    return headers, body


THROTTLING_QUOTA_EXCEEDED = 89


def throttled_answer(wait_s: float) -> tuple[Headers, bytes]:
    """429 THROTTLING_QUOTA_EXCEEDED with Retry-After (whole seconds, at least 1) and Kafka's
    throttle_time_ms; the connection is kept: the broker sends its next heartbeat on it."""
    retry_after = max(1, math.ceil(wait_s))
    body = json.dumps(
        {
            "error_code": THROTTLING_QUOTA_EXCEEDED,
            "error": "THROTTLING_QUOTA_EXCEEDED",
            "error_message": "This broker's heartbeats and registrations exceed "
            f"CP_HEARTBEAT_RATE_LIMIT; not applied, retry after {retry_after} s.",
            "throttle_time_ms": math.ceil(wait_s * 1000),
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(retry_after).encode()),
    ]
    return headers, body


class ListenerApp:
    """The ASGI application of one listener (`name`: public or internal)."""

    def __init__(
        self,
        wsgi: WsgiApp,
        *,
        name: str,
        threads: int,
        max_body_bytes: int,
        body_timeout_s: float,
        fetch_threads: int = 0,
        heartbeat_threads: int = 0,
        heartbeat_rate: float = 0.0,
        heartbeat_burst: float = 0.0,
        max_parked_per_peer: int = 0,
    ) -> None:
        self.wsgi = wsgi
        self.name = name
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.executor = ThreadPoolExecutor(
            max_workers=max(1, threads), thread_name_prefix=f"{name}-listener"
        )
        # The metadata fetch's and the heartbeats' own pools (the internal listener's).
        self.fetch_executor = _pool(fetch_threads, f"{name}-fetch")
        self.heartbeat_executor = _pool(heartbeat_threads, f"{name}-heartbeat")
        # How long heartbeats wait for a thread (of their pool; without one, of `executor`):
        # part of the internal listener's lag that the controller's fencing rule reads
        # (controlplane.runtime.ingress). The other pools' wait is not: a queue of fetches or
        # of writes waiting for the controller is no broker's silence.
        self.longest_wait_s = 0.0
        # One heartbeat per broker in the lane at a time, and a rate per broker (0: none).
        self.heartbeat_lanes = HeartbeatLanes(heartbeat_rate, heartbeat_burst)
        self.parked = ParkedLongPolls(max_parked_per_peer)
        # What the limits did, for the tests and the bench (no Prometheus in the server).
        self.heartbeats_throttled = 0
        self.long_polls_answered_at_once = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan, no websockets
        arrived = time.perf_counter()
        try:
            body = await self._read_body(scope, receive)
        except Refused as refused:
            headers, payload = error_answer(
                refused.status, refused.error, refused.code, refused.message
            )
            await _send(send, refused.status, headers, payload)
            return
        except _Disconnected:
            return
        if self.heartbeat_executor is not None and is_heartbeat(scope):
            key = heartbeat_key(scope, body)
            async with self.heartbeat_lanes.turn(key):
                wait_s = self.heartbeat_lanes.admit(key)
                if wait_s > 0:
                    self.heartbeats_throttled += 1
                    await _send(send, 429, *throttled_answer(wait_s))
                    return
                await self._serve(scope, body, send, arrived)
            return
        await self._serve(scope, body, send, arrived)

    async def _serve(self, scope: Scope, body: bytes, send: Send, arrived: float) -> None:
        loop = asyncio.get_running_loop()
        long_poll = LongPoll()
        environ = wsgi_environ(scope, body, long_poll)
        executor, measured = self._pool_for(scope)
        timing = LaneTiming(arrived=arrived, submitted=time.perf_counter())
        status, headers, payload = await loop.run_in_executor(
            executor, self._answer, environ, timing if measured else None
        )
        if is_heartbeat(scope):
            headers = [*headers, (b"server-timing", timing.header(time.perf_counter()))]
        if long_poll.deferred:
            peer = (long_poll.owner, environ["REMOTE_ADDR"])
            if self.parked.park(peer):
                try:
                    payload = await self._finish_long_poll(long_poll, payload, executor)
                finally:
                    self.parked.unpark(peer)
            else:  # past its cap: the empty answer, at once
                self.long_polls_answered_at_once += 1
        await _send(send, status, _with_length(headers, len(payload)), payload)

    def _pool_for(self, scope: Scope) -> tuple[ThreadPoolExecutor, bool]:
        """The pool that answers this request, and whether its wait counts as lag."""
        if self.fetch_executor is not None and is_metadata_fetch(scope):
            return self.fetch_executor, False
        if self.heartbeat_executor is None:
            return self.executor, True
        if is_heartbeat(scope):
            return self.heartbeat_executor, True
        return self.executor, False

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _too_large(int(declared), self.max_body_bytes)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        chunks: list[bytes] = []
        size = 0
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except TimeoutError:
                raise Refused(
                    408,
                    "REQUEST_TIMED_OUT",
                    7,
                    f"The request body did not arrive within {self.body_timeout_s:g} s.",
                ) from None
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise _too_large(size, self.max_body_bytes)
                chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _answer(
        self, environ: dict[str, Any], timing: LaneTiming | None
    ) -> tuple[int, Headers, bytes]:
        """Django's answer, in a thread of this listener's pool (`timing`: when it was handed
        to a pool whose wait is measured, and when the answer began and ended)."""
        if timing is not None:
            timing.started = time.perf_counter()
            self._note_wait(timing.started - timing.submitted)
        try:
            return self._django_answer(environ)
        finally:
            if timing is not None:
                timing.finished = time.perf_counter()

    def _django_answer(self, environ: dict[str, Any]) -> tuple[int, Headers, bytes]:
        started: dict[str, Any] = {}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            started["status"] = int(status.split(" ", 1)[0])
            started["headers"] = headers
            return lambda data: None  # the legacy write(): Django never calls it

        result = self.wsgi(environ, start_response)
        try:
            payload = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in started["headers"]
        ]
        return started["status"], headers, payload

    async def _finish_long_poll(
        self, long_poll: LongPoll, empty: bytes, executor: ThreadPoolExecutor
    ) -> bytes:
        """Wait on the loop for the log to grow, then fetch again in the request's pool."""
        from controlplane.runtime.notifier import notifier

        if not await notifier.wait_async(long_poll.generation, long_poll.timeout_s):
            return empty
        refetch = long_poll.refetch
        assert refetch is not None
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(executor, _refetch, refetch)
        except Exception:  # the empty answer still holds: the broker simply polls again
            logger.exception("metadata long-poll refetch failed")
            return empty

    def _note_wait(self, waited_s: float) -> None:
        # A lost race between two threads only loses a smaller wait: no lock on the hot path.
        if waited_s > self.longest_wait_s:
            self.longest_wait_s = waited_s

    def take_longest_wait(self) -> float:
        """The longest a request waited for a thread of the pool since the last call (s)."""
        longest, self.longest_wait_s = self.longest_wait_s, 0.0
        return longest

    def close(self) -> None:
        for pool in (self.executor, self.fetch_executor, self.heartbeat_executor):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)


@dataclasses.dataclass
class LaneTiming:
    """When a request reached the application (its headers read), when it was handed to its
    pool, and when its answer began and ended there (`time.perf_counter()`)."""

    arrived: float
    submitted: float
    started: float = math.nan
    finished: float = math.nan

    def header(self, resumed: float) -> bytes:
        """The `Server-Timing` value, `resumed` being when the event loop had the answer."""
        phases = (
            ("lane", self.submitted - self.arrived),
            ("wait", self.started - self.submitted),
            ("handler", self.finished - self.started),
            ("resume", resumed - self.finished),
        )
        return ", ".join(f"{name};dur={seconds * 1000:.2f}" for name, seconds in phases).encode()


def _pool(threads: int, name: str) -> ThreadPoolExecutor | None:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name) if threads else None


class _Disconnected(Exception):
    pass


def _too_large(size: int, limit: int) -> Refused:
    return Refused(
        413,
        "INVALID_REQUEST",
        42,
        f"Request body of {size} bytes exceeds the limit of {limit} bytes.",
    )


def is_metadata_fetch(scope: Scope) -> bool:
    path = str(scope.get("path", ""))
    return scope.get("method") == "GET" and (
        path == METADATA_FETCH_PATH or path.startswith(METADATA_FETCH_PATH + "/")
    )


def is_heartbeat(scope: Scope) -> bool:
    return scope.get("method") == "POST" and str(scope.get("path", "")) in HEARTBEAT_PATHS


def heartbeat_key(scope: Scope, body: bytes) -> Hashable:
    """Whose lane a heartbeat or registration takes: its credentials as sent and the broker id
    it names (None when it names none: Django refuses it)."""
    broker_id = None
    try:
        named = json.loads(body)
        if isinstance(named, dict) and type(named.get("broker_id")) is int:
            broker_id = named["broker_id"]
    except ValueError:
        pass
    return _header(scope, b"authorization") or "", broker_id


def _refetch(refetch: Callable[[], bytes]) -> bytes:
    from django.db import close_old_connections

    try:
        return refetch()
    finally:
        close_old_connections()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1").strip())
    return None


def _with_length(headers: Headers, length: int) -> Headers:
    kept = [(k, v) for k, v in headers if k != b"content-length"]
    kept.append((b"content-length", str(length).encode()))
    return kept


async def _send(send: Send, status: int, headers: Headers, payload: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


def wsgi_environ(scope: Scope, body: bytes, long_poll: LongPoll) -> dict[str, Any]:
    """PEP 3333's environ for an ASGI HTTP scope whose body was read whole."""
    raw_path = scope.get("raw_path") or scope["path"].encode()
    server_host, server_port = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": "",
        # PEP 3333: the path decoded from the URL's bytes, as latin-1 text.
        "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server_host),
        "SERVER_PORT": str(server_port),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        ENVIRON_KEY: long_poll,
    }
    for raw_name, raw_value in scope["headers"]:
        if b"_" in raw_name:
            continue  # X_Forwarded_For would pass for X-Forwarded-For: dropped, as gunicorn does
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        if name == "CONTENT_LENGTH":
            continue  # the body's real length, whatever was announced (or chunked)
        key = name if name == "CONTENT_TYPE" else f"HTTP_{name}"
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ
