"""HTTP to the control plane: one pooled client, what its answers mean, and how to retry them.

The brokers' calls (`/internal/v1/...`) go to the control plane's internal listener, the admin's
(CreateTopics) to its public one: the two are different ports, as Kafka's inter-broker and client
listeners are.

Every call answers the parsed JSON body of a 200, or raises `Transient` (may succeed later: 503
NOT_CONTROLLER honouring `Retry-After`, 504, other 5xx, timeouts, connection trouble) or
`Refused` (4xx: the same request will never succeed). `until_answered` retries the transient
ones with Kafka's jittered exponential backoff until a deadline.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import msgspec

from controlplane.controller.errors import Errors
from simulator.state import SimulatorCounters

# The internal listener serves every path under this prefix, and the public one none of them.
INTERNAL_PREFIX = "/internal/"
REGISTRATION_PATH = "/internal/v1/broker-registration"
HEARTBEAT_PATH = "/internal/v1/broker-heartbeat"
METADATA_PATH = "/internal/v1/metadata"
SNAPSHOT_PATH = "/internal/v1/metadata/snapshot"  # the latest snapshot's id, size, checksum
SNAPSHOTS_PATH = "/internal/v1/metadata/snapshots/"  # + its end offset: its bytes
ALTER_REPLICA_STATE_PATH = "/internal/v1/alter-replica-state"
ALTER_PARTITION_PATH = "/internal/v1/alter-partition"
CREATE_TOPICS_PATH = "/api/v1/create-topics"
ENVELOPE_PATH = "/internal/v1/envelope"

# HTTP statuses that mean "try again later": no controller (503), a deadline passed (504), or a
# proxy/server hiccup. Anything else that is not 200 is the simulator's or the principal's fault.
RETRIABLE_STATUSES = frozenset({500, 502, 503, 504})
# Statuses that no retry will fix: the token is wrong or lacks CLUSTER_ACTION.
AUTH_STATUSES = frozenset({401, 403})
JSON_HEADERS = {"Content-Type": "application/json"}
# The client id prefixes X-Request-ID, which the server only takes as [A-Za-z0-9._:-]{1,128}.
CLIENT_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
# Drop idle connections before the server does: reusing one the server just closed fails the
# request with a ReadError. The internal listener keeps them three heartbeat intervals at least
# (6 s with `broker.heartbeat.interval.ms` 2000; controlplane.server.worker): past one interval,
# so that each broker's heartbeat reuses its connection, and below the server's. The public
# listener closes after gunicorn's 2 s: its rare calls (CreateTopics) go again once on a fresh
# connection when the one reused was closed under them.
KEEPALIVE_EXPIRY_S = 4.0
# The metadata fetch's wire form: MessagePack (JSON still welcome), compressed. httpx undoes
# gzip itself, and zstd when the zstandard package is there.
METADATA_ACCEPT = "application/msgpack, application/json;q=0.5"
METADATA_ACCEPT_ENCODING = (
    "zstd, gzip" if importlib.util.find_spec("zstandard") is not None else "gzip"
)
MSGPACK = "application/msgpack"
# A kept-alive connection the server closed meanwhile fails a request with one of these.
_STALE_CONNECTION_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)

T = TypeVar("T")


class Backoff:
    """Exponential backoff with jitter, as Kafka's ExponentialBackoff (factor 2, jitter 0.2)."""

    def __init__(self, initial_s: float, max_s: float, jitter: float = 0.2) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.jitter = jitter
        self.attempts = 0

    def next(self, at_least_s: float = 0.0) -> float:
        # The exponent is capped: a long outage must not overflow the float.
        delay = min(self.max_s, self.initial_s * 2.0 ** min(self.attempts, 32))
        self.attempts += 1
        delay *= random.uniform(1 - self.jitter, 1 + self.jitter)
        return min(max(delay, at_least_s), self.max_s)

    def reset(self) -> None:
        self.attempts = 0


class Transient(Exception):
    """A call that may succeed later (503/504/5xx, timeout, connection trouble)."""

    def __init__(self, kind: str, retry_after_s: float | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after_s = retry_after_s


class Refused(Exception):
    """A call the server refused for good (4xx): retrying the same thing will not help."""

    retry_after_s: float | None = None  # never: read by code that handles both kinds alike

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class ControllerClient:
    """The simulator's one connection pool to the control plane, with the broker token: to its
    internal listener (`internal_url`) for the brokers' API, to its public one (`url`) else."""

    def __init__(
        self,
        url: str,
        token: str,
        client_id: str,
        counters: SimulatorCounters,
        *,
        internal_url: str,
        request_timeout_s: float,
        max_connections: int,
        trust_env: bool,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.url = url.rstrip("/")
        self.internal_url = internal_url.rstrip("/")
        self.client_id = client_id
        self.counters = counters
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        self.reachable = False  # the server answered at least once
        self._token = token
        self._trust_env = trust_env
        self._transport = transport
        self._http: httpx.AsyncClient | None = None

    @property
    def is_open(self) -> bool:
        return self._http is not None

    def open(self) -> None:
        if self._http is not None:
            raise RuntimeError("The simulator is already started.")
        self._http = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {self._token}", "X-Client-ID": self.client_id},
            timeout=httpx.Timeout(self.request_timeout_s),
            limits=httpx.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_connections,
                keepalive_expiry=KEEPALIVE_EXPIRY_S,
            ),
            http2=False,
            trust_env=self._trust_env,
            transport=self._transport,
        )

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def url_for(self, path: str) -> str:
        """The internal listener's URL for the brokers' API (`/internal/...`), else the public's."""
        base = self.internal_url if path.startswith(INTERNAL_PREFIX) else self.url
        return base + path

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("The simulator is not started.")
        return self._http

    async def post(
        self,
        path: str,
        body: bytes,
        request_id: str,
        broker_id: int,
        *,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """A broker's request (`broker_id` names it in X-Client-ID), with `request_id`."""
        headers = {
            **JSON_HEADERS,
            "X-Request-ID": request_id,
            "X-Client-ID": f"{self.client_id}-broker-{broker_id}",
        }
        timeout = httpx.USE_CLIENT_DEFAULT if timeout_s is None else httpx.Timeout(timeout_s)
        # Safe to send twice: heartbeats are idempotent, registrations and envelopes carry a
        # request id.
        answer = answer_of(await self._post_once_more(path, body, headers, timeout))
        self.reachable = True
        return answer

    async def _post_once_more(
        self, path: str, body: bytes, headers: dict[str, str], timeout: Any
    ) -> httpx.Response:
        """POST, and once more on a fresh connection when a kept-alive one was closed under
        it; any other transport error, or a second one, is Transient."""
        for attempt in (0, 1):
            try:
                return await self.http.post(
                    self.url_for(path), content=body, headers=headers, timeout=timeout
                )
            except _STALE_CONNECTION_ERRORS as error:
                if attempt == 1:
                    raise Transient(type(error).__name__) from None
            except httpx.TransportError as error:
                raise Transient(type(error).__name__) from None
        raise AssertionError("unreachable")

    async def post_as(
        self, path: str, body: bytes, *, token: str, request_id: str, timeout_s: float
    ) -> dict[str, Any]:
        """A request with another principal's token (an admin's: CreateTopics)."""
        headers = {
            **JSON_HEADERS,
            "Authorization": f"Bearer {token}",
            "X-Request-ID": request_id,
            "X-Client-ID": f"{self.client_id}-admin",
        }
        # Once more on a fresh connection when needed (the public listener's keep-alive is
        # shorter than KEEPALIVE_EXPIRY_S): safe, the request id makes it apply once.
        return answer_of(await self._post_once_more(path, body, headers, timeout_s))

    async def fetch_metadata(
        self, *, after_offset: int, max_records: int, wait_ms: int
    ) -> dict[str, Any]:
        """The log's head and the records after `after_offset`, long-polling `wait_ms`; asked
        as MessagePack, compressed (`answer_of` reads what came, JSON or MessagePack)."""
        params = {"after_offset": after_offset, "max_records": max_records, "wait_ms": wait_ms}
        headers = {"Accept": METADATA_ACCEPT, "Accept-Encoding": METADATA_ACCEPT_ENCODING}
        timeout = self.request_timeout_s + wait_ms / 1000
        self.counters.metadata_fetches += 1
        url = self.url_for(METADATA_PATH)
        for attempt in (0, 1):
            try:
                response = await self.http.get(url, params=params, headers=headers, timeout=timeout)
                break
            except _STALE_CONNECTION_ERRORS as error:
                if attempt == 1:  # a GET: once more on a fresh connection, as post() does
                    raise Transient(type(error).__name__) from None
            except httpx.TransportError as error:
                raise Transient(type(error).__name__) from None
        answer = answer_of(response)
        self.reachable = True
        return answer

    async def get_once_more(
        self, path: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx.Response:
        """GET, and once more on a fresh connection when a kept-alive one was closed under it;
        any other transport error, or a second one, is Transient."""
        url = self.url_for(path)
        for attempt in (0, 1):
            try:
                return await self.http.get(url, params=params, headers=headers)
            except _STALE_CONNECTION_ERRORS as error:
                if attempt == 1:
                    raise Transient(type(error).__name__) from None
            except httpx.TransportError as error:
                raise Transient(type(error).__name__) from None
        raise AssertionError("unreachable")

    async def latest_snapshot(self) -> dict[str, Any] | None:
        """The latest metadata snapshot `{end_offset, epoch, size_bytes, checksum,
        created_ms}`; None when the server has none (404 SNAPSHOT_NOT_FOUND)."""
        response = await self.get_once_more(SNAPSHOT_PATH, {})
        if response.status_code == 404 and _error_code(response) == Errors.SNAPSHOT_NOT_FOUND:
            return None
        return answer_of(response)

    async def snapshot_bytes(
        self, end_offset: int, *, position: int, max_bytes: int
    ) -> tuple[bytes, int] | None:
        """Kafka's FetchSnapshot: the snapshot's bytes from `position` and its whole size (from
        Content-Range); None when the server no longer has it (404 SNAPSHOT_NOT_FOUND:
        deleted by retention, or found damaged)."""
        response = await self.get_once_more(
            f"{SNAPSHOTS_PATH}{end_offset}", {"position": position, "max_bytes": max_bytes}
        )
        if response.status_code == 404 and _error_code(response) == Errors.SNAPSHOT_NOT_FOUND:
            return None
        if response.status_code != 200:
            answer_of(response)  # raises Transient or Refused, named
        _, _, size = response.headers.get("Content-Range", "").rpartition("/")
        if not size.isdigit():
            raise Refused("snapshot", f"no size in Content-Range of snapshot {end_offset}")
        return response.content, int(size)

    async def post_idempotent(self, path: str, body: bytes) -> httpx.Response:
        """The raw answer to an idempotent request (a heartbeat): when the connection dropped
        under it (a keep-alive the server closed), it goes once more on a fresh connection, as a
        broker would."""
        url = self.url_for(path)
        try:
            return await self.http.post(url, content=body, headers=JSON_HEADERS)
        except _STALE_CONNECTION_ERRORS:
            self.counters.retries += 1
            return await self.http.post(url, content=body, headers=JSON_HEADERS)


async def until_answered(
    attempt: Callable[[], Awaitable[T]],
    *,
    deadline: float,
    backoff: Backoff,
    on_transient: Callable[[Transient], None] | None = None,
    on_retry: Callable[[Transient, float], None] | None = None,
) -> T:
    """`attempt()` until it answers. A Transient failure goes to `on_transient`; then, when the
    next try can start before `deadline` (after the backoff, at least the answer's Retry-After),
    `on_retry` hears the delay and the try follows it; else the Transient is raised. Refused
    propagates at once: the same request will never succeed."""
    while True:
        try:
            return await attempt()
        except Transient as error:
            if on_transient is not None:
                on_transient(error)
            delay = backoff.next(error.retry_after_s or 0.0)
            if time.monotonic() + delay > deadline:
                raise
            if on_retry is not None:
                on_retry(error, delay)
            await asyncio.sleep(delay)


def answer_of(response: httpx.Response) -> dict[str, Any]:
    """A 200's body (JSON, or MessagePack by its Content-Type; httpx has undone any
    Content-Encoding); else Transient or Refused, named by the status and the error name."""
    status = response.status_code
    if status == 200:
        answer: dict[str, Any]
        if response.headers.get("Content-Type", "").startswith(MSGPACK):
            answer = msgspec.msgpack.decode(response.content)
        else:
            answer = response.json()
        return answer
    try:
        detail = response.json()
    except ValueError:
        detail = {}
    name = detail.get("error") if isinstance(detail, dict) else None
    message = detail.get("error_message") if isinstance(detail, dict) else None
    kind = f"HTTP {status}" + (f" {name}" if name else "")
    if status in RETRIABLE_STATUSES:
        raise Transient(kind, retry_after(response))
    raise Refused(kind, str(message or response.text[:200]))


def _error_code(response: httpx.Response) -> int | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error_code") if isinstance(body, dict) else None


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: ignore it, the backoff decides


def dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def error_name(code: Any) -> str:
    try:
        return Errors(int(code)).name
    except (TypeError, ValueError):
        return f"error {code}"
