"""Which partitions of a topic are canary, as the control plane says (KIP-1095).

A partition's canary status is fixed when it is created, so a topic's canary partitions only
change when the topic grows (or is deleted and created again): the directory caches each topic's
answer for `ttl_s`, and asks again sooner when a client sees a partition count other than the
one it cached (rate-limited to one call per `min_refresh_s`). When the control plane cannot be
reached it keeps answering what it last knew (availability over isolation, as the KIP says),
and nothing at all, i.e. no canary partition, for a topic it never learnt.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("canary.clients")

Fetch = Callable[[str], Any]  # topic -> the JSON answer of GET /api/v1/canary?topic=


@dataclasses.dataclass(frozen=True, slots=True)
class _Known:
    fetched_at: float
    partition_count: int
    canary: frozenset[int]


class CanaryDirectory:
    """Canary partitions by topic, from the control plane's REST API, cached and refreshed."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        ttl_s: float = 30.0,
        min_refresh_s: float = 1.0,
        timeout_s: float = 5.0,
        fetch: Fetch | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.ttl_s = ttl_s
        self.min_refresh_s = min_refresh_s
        self.timeout_s = timeout_s
        self._fetch = fetch or self._http_fetch
        self._clock = clock
        self._known: dict[str, _Known] = {}
        self._asked: dict[str, float] = {}
        self._lock = threading.Lock()
        self.fetches = 0  # calls made to the control plane (tests and curious operators)

    def canary_partitions(self, topic: str, partition_count: int | None = None) -> frozenset[int]:
        """The topic's canary partitions; `partition_count` is how many partitions the caller
        sees (a different count than the cached one triggers a refresh)."""
        now = self._clock()
        with self._lock:
            known = self._known.get(topic)
            stale = known is None or now - known.fetched_at >= self.ttl_s
            grown = known is not None and partition_count not in (None, known.partition_count)
            recently = now - self._asked.get(topic, float("-inf")) < self.min_refresh_s
            if not (stale or grown) or (recently and known is not None):
                return known.canary if known is not None else frozenset()
            if recently:
                return frozenset()
            self._asked[topic] = now
        learnt = self._learn(topic, now, partition_count)
        with self._lock:
            if learnt is not None:
                self._known[topic] = learnt
            current = self._known.get(topic)
        return current.canary if current is not None else frozenset()

    def forget(self, topic: str | None = None) -> None:
        """Drop what is cached (one topic, or all): the next question asks again."""
        with self._lock:
            if topic is None:
                self._known.clear()
                self._asked.clear()
            else:
                self._known.pop(topic, None)
                self._asked.pop(topic, None)

    def _learn(self, topic: str, now: float, partition_count: int | None) -> _Known | None:
        try:
            answer = self._fetch(topic)
            self.fetches += 1
            for entry in answer.get("topics", ()):
                if entry.get("name") == topic:
                    return _Known(
                        now,
                        int(entry.get("partition_count", 0)),
                        frozenset(int(i) for i in entry.get("canary_partitions", ())),
                    )
            # No canary partition (or no such topic): as many partitions as the caller sees.
            return _Known(now, -1 if partition_count is None else partition_count, frozenset())
        except Exception as error:  # any failure: keep what we knew (availability)
            logger.warning("canary partitions of %s unknown for now: %s", topic, error)
            return None

    def _http_fetch(self, topic: str) -> Any:
        query = urllib.parse.urlencode({"topic": topic})
        request = urllib.request.Request(
            f"{self.url}/api/v1/canary?{query}",
            headers={"Authorization": f"Bearer {self._token}", "Accept": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            return json.loads(response.read().decode())
