"""Answers read from the state tables, cached per the tables' offset.

A commit is the log's transaction, then the tables' (`controlplane.runtime.metadata_log`), and
every tables' transaction moves `cp_cluster.projected_offset`. So an answer read from the
tables between two reads of that offset which agree is the state at that offset, and stays
true until the offset moves: the key of a cached answer is that offset (never the log's, which
runs ahead of what the tables show between a commit's two transactions). A read during which
a commit moved the tables may mix two offsets' rows: it is answered once and never kept.

Clients poll large reads (a Kafka tool's ListPartitionReassignments names every moving
partition, ten times a second, while the tables move only when the brokers report): a poll
between two changes then costs one read of the offset, not the whole answer again.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from controlplane.runtime.lease import cluster_fields

V = TypeVar("V")


def tables_offset() -> int:
    """The offset the state tables reached (-1: none yet)."""
    (offset,) = cluster_fields(("projected_offset",))
    return int(offset)


class AnswerCache(Generic[V]):
    """A bounded map of cached answers, the least recently used out first: at most `entries`,
    and at most `max_weight` in all when answers are weighed (`weigh`: a listing's partitions,
    an encoding's bytes); an answer heavier than that alone is never kept. Thread-safe (a
    listener's handlers run on a pool)."""

    def __init__(
        self,
        entries: int,
        *,
        max_weight: int | None = None,
        weigh: Callable[[V], int] | None = None,
    ) -> None:
        self._entries = entries
        self._max_weight = max_weight
        self._weigh = weigh
        self._answers: collections.OrderedDict[Hashable, tuple[V, int]] = collections.OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            kept = self._answers.get(key)
            if kept is None:
                self.misses += 1
                return None
            self._answers.move_to_end(key)
            self.hits += 1
            return kept[0]

    def put(self, key: Hashable, answer: V) -> None:
        weight = self._weigh(answer) if self._weigh is not None else 0
        if self._max_weight is not None and weight > self._max_weight:
            return
        with self._lock:
            replaced = self._answers.pop(key, None)
            if replaced is not None:
                self._weight -= replaced[1]
            self._answers[key] = (answer, weight)
            self._weight += weight
            while len(self._answers) > self._entries or (
                self._max_weight is not None and self._weight > self._max_weight
            ):
                _, (_, dropped) = self._answers.popitem(last=False)
                self._weight -= dropped

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()
            self._weight = 0
            self.hits = self.misses = 0


def read_through(
    cache: AnswerCache[V],
    key: Hashable,
    read: Callable[[], V],
    *,
    stamp: Callable[[V, int], None] | None = None,
) -> V:
    """`read()` of the tables for `key` at their current offset: the cached answer when one
    was read at that offset; else read now, and kept when no commit moved the tables meanwhile
    (`stamp` first tells the answer the offset it stands for, before anyone shares it). The
    caller treats the answer as immutable."""
    at = tables_offset()
    cached = cache.get((at, key))
    if cached is not None:
        return cached
    answer = read()
    if tables_offset() == at:
        if stamp is not None:
            stamp(answer, at)
        cache.put((at, key), answer)
    return answer
