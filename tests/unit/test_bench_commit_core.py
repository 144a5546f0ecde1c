"""bench.commit_core times the commit's pure steps on records the controller would write."""

from __future__ import annotations

import pytest

from bench.commit_core import measure

STEPS = {"handle", "replay", "timeline", "health", "rows", "json", "kafka"}


@pytest.mark.django_db
def test_every_commit_is_timed_step_by_step() -> None:
    result = measure(partitions=300, repeat=2)
    assert result["setup"] == {"partitions": 300, "brokers": 60, "repeat": 2}
    for commit in ("creation", "log_dir_failure"):
        figures = result[commit]
        assert figures["records"] == 301  # the topic or the broker's log dirs, and 300 partitions
        assert set(figures["ms"]) == STEPS
        assert all(ms >= 0 for ms in figures["ms"].values())
        assert figures["total_ms"] == pytest.approx(sum(figures["ms"].values()), abs=0.6)
        assert figures["us_per_partition"] > 0
    moves = result["reassignment"]
    assert moves["records"] == 300  # one change per partition: a move started, nothing else
    assert set(moves["ms"]) == STEPS
