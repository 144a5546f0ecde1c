"""The fan-out benchmark's split of a heartbeat's latency by the answer's Server-Timing."""

from __future__ import annotations

import pytest

from bench.fanout.heartbeat_shapes import server_timing, where_time_went


def test_a_server_timing_header_reads_as_its_durations() -> None:
    header = "lane;dur=0.50, wait;dur=1.25, handler;dur=4.50, resume;dur=0.75"
    assert server_timing(header) == {"lane": 0.5, "wait": 1.25, "handler": 4.5, "resume": 0.75}


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "lane;dur=1, wait;dur=1, handler;dur=2",
        "lane;dur=1, wait;dur=x, handler;dur=2, resume;dur=3",
    ],
)
def test_a_header_without_every_phase_is_not_counted(header: str | None) -> None:
    assert server_timing(header) is None


def test_the_slowest_answers_are_split_into_server_phases_and_the_rest() -> None:
    fast = [(10.0, {"lane": 0.0, "wait": 1.0, "handler": 5.0, "resume": 1.0})] * 99
    slow = [(300.0, {"lane": 20.0, "wait": 100.0, "handler": 50.0, "resume": 10.0})]
    summary = where_time_went(fast + slow)
    assert summary["answers_timed"] == 100
    assert summary["wait"]["p50_ms"] == 1.0 and summary["wait"]["max_ms"] == 100.0
    assert summary["outside"]["p50_ms"] == 3.0 and summary["outside"]["max_ms"] == 120.0
    assert summary["slowest_1pct"] == {
        "answers": 1,
        "latency_mean_ms": 300.0,
        "mean_ms": {"lane": 20.0, "wait": 100.0, "handler": 50.0, "resume": 10.0, "outside": 120.0},
    }
