"""A value kept between commit notices: read again once a notice moved the generation or the
value grew older than its bound, and never kept under a generation that moved during its read."""

from __future__ import annotations

import itertools

import pytest

from controlplane.runtime import notice_cache
from controlplane.runtime.notice_cache import NoticeCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(notice_cache.time, "monotonic", clock)
    return clock


def test_a_value_is_read_once_per_generation(clock: Clock) -> None:
    reads = itertools.count()
    generation = [0]
    cache = NoticeCache(lambda: next(reads), generation=lambda: generation[0], max_age_s=1.0)
    assert [cache.get(), cache.get(), cache.get()] == [0, 0, 0]
    generation[0] += 1  # a commit notice
    assert [cache.get(), cache.get()] == [1, 1]


def test_no_value_is_kept_past_its_age_without_a_notice(clock: Clock) -> None:
    reads = itertools.count()
    cache = NoticeCache(lambda: next(reads), generation=lambda: 0, max_age_s=0.25)
    assert cache.get() == 0
    clock.now += 0.24
    assert cache.get() == 0
    clock.now += 0.01
    assert cache.get() == 1  # as old as its bound: read again


def test_a_notice_heard_during_the_read_makes_the_next_get_read_again(clock: Clock) -> None:
    generation = [0]
    reads = itertools.count()

    def read() -> int:
        value = next(reads)
        generation[0] += 1  # the notice of a commit arrives while the value is being read
        return value

    cache = NoticeCache(read, generation=lambda: generation[0], max_age_s=60.0)
    assert cache.get() == 0
    assert cache.get() == 1  # kept under the generation before the read: stale at once


def test_fresh_reads_whatever_is_kept_and_forget_all_drops_every_cache(clock: Clock) -> None:
    reads = itertools.count()
    cache = NoticeCache(lambda: next(reads), generation=lambda: 0, max_age_s=60.0)
    assert cache.get() == 0
    assert cache.fresh() == 1
    assert cache.get() == 1
    notice_cache.forget_all()
    assert cache.get() == 2
