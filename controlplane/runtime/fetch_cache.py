"""The metadata fetch's answers, encoded once per web process and served to every broker.

An answer (`GET /internal/v1/metadata`) is fully determined by its `FetchKey`: the range asked
(`after_offset`, the effective `max_records` and `max_bytes`), the wire form (media type and
content encoding) and the log's head (cluster id, active controller, controller epoch, last
offset, the log's start). That holds because the log only ever holds committed records (a
commit writes its records and the head's `last_offset` in one transaction), the records read
are bounded by the head's `last_offset`, and retention moves the head's `log_start_offset` in
the transaction that deletes the records before it: nothing read from outside the database is
ever kept here. A fetch whose records retention deleted after it read the head finds them
missing (`selectors.LogStartMoved`), reads the head again and answers from it: records are
never skipped.

A fetch after an offset the log no longer holds (before `log_start_offset`) answers no records
and the latest snapshot's id (`snapshot_id`, as Kafka's FetchResponse): the broker loads it
(controlplane.runtime.snapshots) and fetches the log after it.

So a commit that wakes 60 long-polling brokers costs one read of the log and one encoding per
process (single flight: the others wait for the first one's fill), not 60. The head is read
per request (one query of the cluster row); a new commit moves it, and with it the key.

Kept answers are bounded in bytes (`CP_FETCH_CACHE_BYTES`, least recently used first out); an
answer larger than the bound is served but not kept. No answer is larger than its `max_bytes`
of records (`CP_FETCH_MAX_BYTES` at the most) besides a single record that is larger alone.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import gzip
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

import msgspec
import zstandard

from controlplane import selectors
from controlplane.controller.errors import Errors
from controlplane.runtime.notice_cache import NoticeCache
from controlplane.runtime.notifier import notifier

SNAPSHOT_NOT_FOUND = int(Errors.SNAPSHOT_NOT_FOUND)
JSON = "application/json"
MSGPACK = "application/msgpack"
# The media types served, the default first: it wins a tie (`*/*`, no Accept at all).
SERVED_TYPES = (JSON, MSGPACK)
IDENTITY, GZIP, ZSTD = "identity", "gzip", "zstd"
# Compressions in the order preferred on a tie: zstd is smaller and cheaper than gzip.
SERVED_ENCODINGS = (ZSTD, GZIP)
# Fast levels: the point is bytes on the wire at little CPU. Measured on 100,000 records
# (34 MB of JSON): gzip 3 and zstd 3 cost the same time as level 1 and are smaller.
GZIP_LEVEL = 3
ZSTD_LEVEL = 3


@dataclasses.dataclass(frozen=True, slots=True)
class WireForm:
    """How an answer travels: its media type and its content encoding."""

    media_type: str = JSON
    content_encoding: str = IDENTITY


@dataclasses.dataclass(frozen=True, slots=True)
class FetchKey:
    """Everything an answer depends on. `head` is the answer's head, its fields in order."""

    after_offset: int
    max_records: int
    max_bytes: int
    wire: WireForm
    head: tuple[tuple[str, Any], ...]
    # Asked for records before the log's start: the answer names the latest snapshot instead
    # (None: there is no intact one yet).
    behind: bool = False
    snapshot_id: tuple[tuple[str, int], ...] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedAnswer:
    body: bytes
    records: int  # how many records the body carries
    snapshot: bool = False  # it names a snapshot to load instead: answered at once, no waiting


def fetch_key(
    *,
    head: dict[str, Any],
    after_offset: int,
    max_records: int,
    max_bytes: int,
    wire: WireForm,
    snapshot_id: dict[str, int] | None = None,
) -> FetchKey:
    """The key of an answer, normalised so that every request whose answer is the same bytes
    has the same key: every fetch at or past the head (nothing to answer) shares one, every
    fetch before the log's start another (`snapshot_id` is the latest snapshot's), and a
    `max_records` above what the log holds counts as what it holds."""
    if is_behind(head=head, after_offset=after_offset):
        return FetchKey(
            after_offset=-1,
            max_records=0,
            max_bytes=0,
            wire=wire,
            head=tuple(head.items()),
            behind=True,
            snapshot_id=None if snapshot_id is None else tuple(snapshot_id.items()),
        )
    last_offset = int(head["last_offset"])
    after = min(after_offset, last_offset)
    available = last_offset - after
    max_records = min(max_records, available)
    return FetchKey(
        after_offset=after,
        max_records=max_records,
        max_bytes=max_bytes if max_records else 0,
        wire=wire,
        head=tuple(head.items()),
    )


def is_behind(*, head: dict[str, Any], after_offset: int) -> bool:
    """Whether records after `after_offset` were deleted (the log starts after the next)."""
    return after_offset + 1 < int(head.get("log_start_offset", 0))


class FetchCache:
    """Encoded answers by key, bounded in bytes (LRU), filled once per key at a time."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._kept: collections.OrderedDict[FetchKey, EncodedAnswer] = collections.OrderedDict()
        self._kept_bytes = 0
        self._filling: dict[FetchKey, Future[EncodedAnswer]] = {}
        self._counts = collections.Counter[str]()

    def get_or_fill(self, key: FetchKey, fill: Callable[[], EncodedAnswer]) -> EncodedAnswer:
        """The kept answer, or the one being filled (waiting for it), or `fill()`'s."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                self._counts["hits"] += 1
                return kept
            filling = self._filling.get(key)
            if filling is None:
                filling = self._filling[key] = Future()
                self._counts["misses"] += 1
                mine = True
            else:
                self._counts["coalesced"] += 1
                mine = False
        if not mine:
            return filling.result()  # the filler's answer, or its exception
        try:
            answer = fill()
        except BaseException as error:
            with self._lock:
                del self._filling[key]
            filling.set_exception(error)
            raise
        with self._lock:
            del self._filling[key]
            self._keep(key, answer)
        filling.set_result(answer)
        return answer

    def _keep(self, key: FetchKey, answer: EncodedAnswer) -> None:
        size = len(answer.body)
        if size > self.max_bytes:
            self._counts["not_kept"] += 1  # served, never kept: it would evict everything
            return
        self._kept[key] = answer
        self._kept_bytes += size
        while self._kept_bytes > self.max_bytes:
            _, evicted = self._kept.popitem(last=False)
            self._kept_bytes -= len(evicted.body)
            self._counts["evictions"] += 1

    def stats(self) -> dict[str, int]:
        """hits, misses (fills), coalesced (waited for another's fill), evictions, not_kept
        (larger than the bound), and what is kept now: entries, bytes, max_bytes."""
        with self._lock:
            counts = {
                name: self._counts[name]
                for name in ("hits", "misses", "coalesced", "evictions", "not_kept")
            }
            return {
                **counts,
                "entries": len(self._kept),
                "bytes": self._kept_bytes,
                "max_bytes": self.max_bytes,
            }

    def clear(self) -> None:
        """Forget every kept answer and count (fills under way finish and are kept)."""
        with self._lock:
            self._kept.clear()
            self._kept_bytes = 0
            self._counts.clear()


_cache: FetchCache | None = None
_cache_lock = threading.Lock()


def fetch_cache() -> FetchCache:
    """This process's cache (`CP_FETCH_CACHE_BYTES`)."""
    global _cache
    if _cache is None:
        from django.conf import settings

        with _cache_lock:
            if _cache is None:
                _cache = FetchCache(max_bytes=settings.CP_FETCH_CACHE_BYTES)
    return _cache


def fetch_answer(
    *, after_offset: int, max_records: int, max_bytes: int, wire: WireForm
) -> EncodedAnswer:
    """The answer to a fetch now: the head read, the body from the cache or encoded once.
    Records deleted by retention after the head was read: the head is read again."""
    for attempt in range(MAX_HEAD_READS):
        head = head_cache.get() if attempt == 0 else head_cache.fresh()
        behind = is_behind(head=head, after_offset=after_offset)
        key = fetch_key(
            head=head,
            after_offset=after_offset,
            max_records=max_records,
            max_bytes=max_bytes,
            wire=wire,
            snapshot_id=selectors.metadata_snapshot_id() if behind else None,
        )
        try:
            return fetch_cache().get_or_fill(key, functools.partial(encode_answer, key))
        except selectors.LogStartMoved:
            if attempt == MAX_HEAD_READS - 1:
                raise
    raise AssertionError("unreachable")


# Each read of the head after a retention cut sees a later log start, so the second one
# answers; a bound all the same, against a log cut again and again meanwhile.
MAX_HEAD_READS = 100
# The longest a head is kept without a notice: how late a lapsed lease (no controller) shows.
HEAD_MAX_AGE_S = 0.25
head_cache = NoticeCache(
    lambda: selectors.metadata_head(),
    generation=notifier.watched_generation,
    max_age_s=HEAD_MAX_AGE_S,
)


def encode_answer(key: FetchKey) -> EncodedAnswer:
    """Read the key's records (bounded by its head) and encode and compress them; before the
    log's start, the latest snapshot's id instead (SNAPSHOT_NOT_FOUND when none is intact:
    the controller writes one)."""
    head = {**dict(key.head), "error_code": 0}
    records: list[str] = []
    if key.behind:
        if key.snapshot_id is None:
            head["error_code"] = SNAPSHOT_NOT_FOUND
        else:
            head["snapshot_id"] = dict(key.snapshot_id)
    elif key.max_records:
        records = selectors.metadata_records_json(
            after_offset=key.after_offset,
            up_to_offset=int(head["last_offset"]),
            max_records=key.max_records,
            max_bytes=key.max_bytes,
        )
    if key.wire.media_type == MSGPACK:
        body = msgpack_body(head, records)
    else:
        body = json_body(head, records)
    return EncodedAnswer(
        body=compress(body, key.wire.content_encoding), records=len(records), snapshot=key.behind
    )


def json_body(head: dict[str, Any], records: list[str]) -> bytes:
    # Record types are identifiers and data is stored JSON: the body is assembled as text.
    return b"".join(
        (msgspec.json.encode(head)[:-1], b',"records":[', ",".join(records).encode(), b"]}")
    )


_msgpack = msgspec.msgpack.Encoder()
_json = msgspec.json.Decoder()


def msgpack_body(head: dict[str, Any], records: Iterable[str]) -> bytes:
    """The JSON answer's fields as MessagePack. Each record is decoded and encoded on its own
    (msgspec.Raw): 114 ms for 100,000 records, where decoding the whole JSON body at once
    (millions of objects alive together, the garbage collector scanning them) took 566 ms."""
    encoded = [msgspec.Raw(_msgpack.encode(_json.decode(record))) for record in records]
    return _msgpack.encode({**head, "records": encoded})


def compress(body: bytes, content_encoding: str) -> bytes:
    if content_encoding == GZIP:
        return gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)  # mtime 0: same bytes
    if content_encoding == ZSTD:
        # A compressor per call: one is not safe to share between threads.
        return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(body)
    return body


# --- Negotiation: Accept and Accept-Encoding ---------------------------------------------


def negotiate(*, accept: str, accept_encoding: str) -> WireForm | None:
    """The wire form to answer in; None when Accept names only media types not served."""
    media_type = _media_type(accept)
    if media_type is None:
        return None
    return WireForm(media_type=media_type, content_encoding=_content_encoding(accept_encoding))


def _media_type(accept: str) -> str | None:
    ranges = _weighted(accept)
    if not ranges:
        return JSON
    best, best_q = None, 0.0
    for served in SERVED_TYPES:
        q = _media_range_q(served, ranges)
        if q > best_q:  # strictly: a tie keeps the one served first (JSON)
            best, best_q = served, q
    return best


def _media_range_q(served: str, ranges: dict[str, float]) -> float:
    """The q of the most specific range that matches (RFC 9110 12.5.1): exact, type/*, */*."""
    kind = served.split("/", 1)[0]
    for candidate in (served, f"{kind}/*", "*/*"):
        if candidate in ranges:
            return ranges[candidate]
    return 0.0


def _content_encoding(accept_encoding: str) -> str:
    codings = _weighted(accept_encoding)
    best, best_q = IDENTITY, 0.0
    for served in SERVED_ENCODINGS:
        q = codings.get(served, codings.get("*", 0.0))
        if q > best_q:
            best, best_q = served, q
    return best  # identity otherwise, even when refused: a body is better than a 406


def _weighted(header: str) -> dict[str, float]:
    """`a/b;q=0.5, c` → {name: q}, names lowercased; a malformed q counts as 0 (excluded)."""
    weights: dict[str, float] = {}
    for item in header.split(","):
        name, *params = (part.strip() for part in item.split(";"))
        if not name:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(1.0, max(0.0, float(value.strip())))
                except ValueError:
                    q = 0.0
        weights[name.lower()] = q
    return weights
