"""Failed logins, on every door (the Kafka protocol's client and controller listeners, the UI's
login form): each is logged with the name tried and the address it came from, and counted per
(door, address, name), so failures on one door never count against another.

Kafka delays the answer to a failed authentication (`connection.failed.authentication.delay.ms`,
100 ms), so a guesser gets at most a few tries a second per connection; the SASL doors do the
same without holding a thread (they wait on their event loop). On the client listeners and the
UI, past `MAX_FAILURES` failures of one name from one address within `WINDOW_S`, that pair is
refused without its secret being checked until the window has passed (the UI answers 429 with
Retry-After: a login form must not hold a server thread for a guesser). The controller
listeners only delay, as Kafka does: brokers log in there, and a lock-out would let anyone who
names a broker from its address keep it from its controller. Tokens are 256 random bits; the
delay and the connections per address bound the guessing. Per process: each web or listener
process counts its own.
"""

from __future__ import annotations

import collections
import logging
import threading
import time

logger = logging.getLogger("controlplane.security")

WINDOW_S = 60.0
MAX_FAILURES = 10
# The doors, as failures are counted; the controller's only delays (no lock-out).
CLIENT_DOOR = "client listeners"
CONTROLLER_DOOR = "controller listeners"
UI_DOOR = "the UI"
DELAY_ONLY_DOORS = frozenset({CONTROLLER_DOOR})
FAILED_AUTHENTICATION_DELAY_S = 0.1  # Kafka's connection.failed.authentication.delay.ms
SHOWN_NAME_CHARS = 64


def shown(name: str) -> str:
    """A name as the log shows it: quoted, control characters escaped, bounded."""
    return repr(name[:SHOWN_NAME_CHARS])


class FailedLogins:
    def __init__(self, *, window_s: float = WINDOW_S, max_failures: int = MAX_FAILURES) -> None:
        self.window_s = window_s
        self.max_failures = max_failures
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str, str], collections.deque[float]] = {}

    def _recent(self, key: tuple[str, str, str], now: float) -> collections.deque[float]:
        times = self._failures.setdefault(key, collections.deque())
        while times and now - times[0] > self.window_s:
            times.popleft()
        return times

    def failed(self, *, host: str, name: str, door: str, why: str) -> None:
        now = time.monotonic()
        with self._lock:
            times = self._recent((door, host, name), now)
            times.append(now)
            count = len(times)
            if len(self._failures) > 100_000:  # bounded: forget the oldest pairs
                for stale in list(self._failures)[:10_000]:
                    del self._failures[stale]
        logger.warning(
            "failed authentication of %s from %s on %s: %s (%d in the last %d s)",
            shown(name),
            host,
            door,
            why,
            count,
            self.window_s,
        )

    def retry_after_s(self, *, door: str, host: str, name: str) -> float:
        """0 when (host, name) may try now on `door`, else how long until it may."""
        if door in DELAY_ONLY_DOORS:
            return 0.0
        now = time.monotonic()
        with self._lock:
            times = self._recent((door, host, name), now)
            if len(times) < self.max_failures:
                return 0.0
            return max(0.0, self.window_s - (now - times[0]))

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()


FAILED_LOGINS = FailedLogins()
