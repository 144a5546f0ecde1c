"""What one peer may take of a door's lanes, kept on the door's event loop (no lock: one loop).

- `HeartbeatLanes`: a broker's heartbeats and registrations (keyed by who sends them and the
  broker id they name) are in the heartbeat lane one at a time: the next of the same broker
  waits its turn on the loop, holding no thread, while other brokers' are answered. And a rate
  per broker (`CP_HEARTBEAT_RATE_LIMIT`, burst `CP_HEARTBEAT_RATE_BURST`): a broker past it
  is throttled as Kafka's request quota throttles (ClientRequestQuotaManager), for at most
  Kafka's quota window (`quota.window.size.seconds`, 1 s). The wire door applies the heartbeat
  and answers it with `throttle_time_ms`, then mutes the connection for that long (Kafka's
  sendResponseMaybeThrottle); the internal listener answers 429 THROTTLING_QUOTA_EXCEEDED
  with `Retry-After` before applying it (`admit`), as the public API's rate does.
- `ParkedLongPolls`: at most `limit` parked long-polls (the metadata fetch, the Raft Fetch)
  per principal and address; one more is answered at once with what there is (the empty
  answer), never parked, so no peer's thousands of long-polls hold the server's memory.

The key's principal is the authenticated one on the wire door; on the internal listener the
heartbeat's key is its credentials as sent (checked later, by Django): a peer that names
another broker's id under other credentials spends a bucket of its own, never that broker's.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter as Tally
from collections.abc import AsyncIterator, Callable, Hashable

# Kafka's ClientRequestQuotaManager throttles for at most one quota window (1 s by default).
MAX_THROTTLE_MS = 1000
MAX_KEYS = 100_000  # buckets kept at the most; past it they start again full


class _Bucket:
    __slots__ = ("tokens", "updated")

    def __init__(self, tokens: float, now: float) -> None:
        self.tokens, self.updated = tokens, now


class HeartbeatLanes:
    """One heartbeat per broker in the lane at a time, and a rate per broker."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.clock = clock
        self._locks: dict[Hashable, asyncio.Lock] = {}
        self._users: Tally[Hashable] = Tally()
        self._buckets: dict[Hashable, _Bucket] = {}

    @contextlib.asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """The broker's turn in the lane: the others of the same key wait on the loop."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        self._users[key] += 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if self._users[key] <= 0:
                del self._users[key], self._locks[key]

    def waiting(self, key: Hashable) -> int:
        """Requests of `key` in the lane or waiting for it."""
        return self._users.get(key, 0)

    def record(self, key: Hashable) -> int:
        """Count one applied request: the throttle time it is answered with (ms, 0: none). The
        debt is bounded by one throttle's worth, so a flood is not charged for ever."""
        if self.rate <= 0:
            return 0
        bucket = self._refilled(key)
        bucket.tokens = max(bucket.tokens - 1, -self.rate * MAX_THROTTLE_MS / 1000)
        if bucket.tokens >= 0:
            return 0
        return min(MAX_THROTTLE_MS, math.ceil(-bucket.tokens / self.rate * 1000))

    def admit(self, key: Hashable) -> float:
        """0 and one request counted, or the seconds until `key` may send again (refused
        requests are not counted)."""
        if self.rate <= 0:
            return 0.0
        bucket = self._refilled(key)
        if bucket.tokens < 1:
            return (1 - bucket.tokens) / self.rate
        bucket.tokens -= 1
        return 0.0

    def _refilled(self, key: Hashable) -> _Bucket:
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_KEYS:
                self._buckets.clear()
            bucket = self._buckets[key] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        return bucket


class ParkedLongPolls:
    """Parked long-polls per (principal, address), at most `limit` each (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parked: Tally[Hashable] = Tally()

    def park(self, peer: Hashable) -> bool:
        """Take a place for one more parked long-poll of `peer`; False: answer it at once."""
        if self.limit > 0 and self._parked[peer] >= self.limit:
            return False
        self._parked[peer] += 1
        return True

    def unpark(self, peer: Hashable) -> None:
        self._parked[peer] -= 1
        if self._parked[peer] <= 0:
            del self._parked[peer]

    def parked(self, peer: Hashable) -> int:
        return self._parked.get(peer, 0)
