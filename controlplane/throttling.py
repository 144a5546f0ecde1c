"""Rate limits: Kafka's controller mutation quota (KIP-599) and a per-principal request rate.

Both are token buckets kept by each web process, as Kafka's brokers each keep their quota
managers: a client's limit holds per process it reaches.

- `controller_mutation_rate` (a client quota of a user and/or client id, set with
  alter-client-quotas): partitions created or deleted per second by CreateTopics,
  CreatePartitions and DeleteTopics. As Kafka's strict ControllerMutationQuota: a topic is
  refused with THROTTLING_QUOTA_EXCEEDED while the bucket is below zero, otherwise its
  partitions are recorded (which may take the bucket below zero: the next one is refused), and
  the answer's `throttle_time_ms` says how long until the bucket is back at zero. The burst is
  the rate times Kafka's quota window (`quota.window.num` 11 x `quota.window.size.seconds` 1).
- `CP_API_RATE_LIMIT` requests per second per principal on the public listener (burst:
  `CP_API_RATE_BURST`), answered 429 THROTTLING_QUOTA_EXCEEDED with `Retry-After` beyond it. The
  internal listener, the brokers' lifeline, is not held to it; a broker's heartbeats there and
  on the controller door have a rate per broker of their own (controlplane.server.peer_limits).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

clock = time.monotonic  # tests move time forward through this
QUOTA_WINDOW_S = 11.0  # Kafka: quota.window.num (11) samples of quota.window.size.seconds (1)
MAX_BUCKETS = 100_000


class TokenBucket:
    """`rate` tokens a second up to `burst`; spending may go below zero (then it is exceeded)."""

    __slots__ = ("burst", "rate", "tokens", "updated")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst, self.tokens, self.updated = rate, burst, burst, now

    def refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait_s(self, now: float) -> float:
        """Seconds until the bucket is back at zero (0: not exceeded)."""
        self.refill(now)
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def spend(self, amount: float, now: float) -> None:
        self.refill(now)
        self.tokens -= amount


class _Buckets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, ...], TokenBucket] = {}

    def get(self, key: tuple[str, ...], rate: float, burst: float, now: float) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None or bucket.rate != rate or bucket.burst != burst:
            if len(self._buckets) >= MAX_BUCKETS:
                self._buckets.clear()
            bucket = self._buckets[key] = TokenBucket(rate, burst, now)
        return bucket

    def clear(self) -> None:
        with self._lock:
            self._buckets.clear()


# --- KIP-599: the controller mutation quota ------------------------------------------------
# The quota of a (user, client id), or None; the configs app sets it (it owns client quotas).
MutationRateOf = Callable[[str, str], float | None]


def _no_quota(user: str, client_id: str) -> float | None:
    return None


class ControllerMutationQuota:
    """One request's view of its (user, client id)'s bucket: `check_and_record` per topic."""

    def __init__(self, bucket: TokenBucket | None, lock: threading.Lock) -> None:
        self.bucket = bucket
        self.lock = lock
        self.throttle_time_ms = 0

    def check_and_record(self, mutations: int) -> bool:
        """False (the topic is THROTTLING_QUOTA_EXCEEDED) while the quota is exceeded; else the
        topic's partitions are recorded and True."""
        if self.bucket is None or mutations <= 0:
            return True
        with self.lock:
            now = clock()
            wait = self.bucket.wait_s(now)
            if wait > 0:
                self.throttle_time_ms = max(self.throttle_time_ms, math.ceil(wait * 1000))
                return False
            self.bucket.spend(mutations, now)
            return True


def unlimited() -> ControllerMutationQuota:
    """A request that is not counted (no user, or validate_only)."""
    return ControllerMutationQuota(None, threading.Lock())


class ControllerMutationQuotas:
    def __init__(self) -> None:
        self.rate_of: MutationRateOf = _no_quota
        self._buckets = _Buckets()

    def for_request(self, user: str, client_id: str) -> ControllerMutationQuota:
        rate = self.rate_of(user, client_id)
        if rate is None or rate <= 0:
            return unlimited()
        with self._buckets._lock:
            bucket = self._buckets.get((user, client_id), rate, rate * QUOTA_WINDOW_S, clock())
        return ControllerMutationQuota(bucket, self._buckets._lock)

    def clear(self) -> None:
        self._buckets.clear()


MUTATION_QUOTAS = ControllerMutationQuotas()

THROTTLED = {
    "error_code": 89,  # THROTTLING_QUOTA_EXCEEDED
    "error_message": "The throttling quota has been exceeded.",
}


# --- the public API's request rate per principal ---------------------------------------------
class RequestRateLimiter:
    def __init__(self) -> None:
        self._buckets = _Buckets()

    def wait_s(self, principal: str, *, rate: float, burst: float) -> float:
        """0 and one request counted, or how long until the principal may send again."""
        if rate <= 0:
            return 0.0
        with self._buckets._lock:
            now = clock()
            bucket = self._buckets.get((principal,), rate, max(burst, 1.0), now)
            bucket.refill(now)
            if bucket.tokens < 1:
                return (1 - bucket.tokens) / bucket.rate
            bucket.tokens -= 1
            return 0.0

    def clear(self) -> None:
        self._buckets.clear()


REQUEST_RATE = RequestRateLimiter()
