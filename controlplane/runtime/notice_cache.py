"""A value read from the database, kept in this process until a commit notice may have changed it.

The metadata notifier (controlplane.runtime.notifier) counts the commit notices this process has
heard: the log's (`generation`) and the state tables' (`tables_generation`). A value read under
one generation stays valid until the next notice, so a hot reader (every broker's long-poll reads
the log's head) reads the database once per commit instead of once per request. The generation is
taken before the read: a notice that arrives while the value is being read makes the next `get`
read again. A notice that never arrives (Redis lost one) is covered by `max_age_s`: no value is
kept longer than that, whatever was heard.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Every cache made, so that a process that changes the database under them (a test's fresh
# database) forgets them all at once (`forget_all`).
CACHES: list[NoticeCache[Any]] = []


class NoticeCache(Generic[T]):
    """`read()`'s value, read again once `generation()` moved or `max_age_s` passed."""

    def __init__(
        self, read: Callable[[], T], *, generation: Callable[[], int], max_age_s: float
    ) -> None:
        self._read = read
        self._generation = generation
        self.max_age_s = max_age_s
        # (generation, monotonic time of the read, value): replaced whole, never mutated, so
        # threads share it without a lock (two may read at once after a notice: both are fresh).
        self._kept: tuple[int, float, T] | None = None
        CACHES.append(self)

    def get(self) -> T:
        generation, now = self._generation(), time.monotonic()
        kept = self._kept
        if kept is not None and kept[0] == generation and now - kept[1] < self.max_age_s:
            return kept[2]
        return self._keep(generation, now)

    def fresh(self) -> T:
        """Read now, whatever is kept (and keep it)."""
        return self._keep(self._generation(), time.monotonic())

    def forget(self) -> None:
        self._kept = None

    def _keep(self, generation: int, now: float) -> T:
        value = self._read()
        self._kept = (generation, now, value)
        return value


def forget_all() -> None:
    for cache in CACHES:
        cache.forget()
