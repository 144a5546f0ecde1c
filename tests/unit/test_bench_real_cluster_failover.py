"""bench.real_cluster_failover's summaries: repeated controlled shutdowns as their medians, and
each figure both sides measured as a ratio."""

from __future__ import annotations

from typing import Any

from bench.side_by_side import across_rounds, median_phase, ratios


def _shutdown(broker: int, led: int, live: float, logged: float | None) -> dict[str, Any]:
    return {
        "broker": broker,
        "led": led,
        "live_leaders_s": live,
        "leaderships_logged_s": logged,
        "exited_s": live * 2,
        "window": (10.0 * broker, 10.0 * broker + live),
    }


def test_one_shutdown_is_reported_as_measured() -> None:
    sample = _shutdown(2, 1500, 0.92, 0.24)
    assert median_phase([sample]) == sample


def test_repeated_shutdowns_report_each_figures_median_and_every_sample() -> None:
    samples = [
        _shutdown(2, 1500, 0.92, 0.24),
        _shutdown(3, 1490, 0.41, 0.15),
        _shutdown(1, 1510, 0.63, None),  # no broker logged a leadership line in time
    ]
    phase = median_phase(samples)
    assert phase["live_leaders_s"] == 0.63
    assert phase["leaderships_logged_s"] == 0.195  # the median of the samples that have one
    assert [s["broker"] for s in phase["samples"]] == [2, 3, 1]
    assert [s["live_leaders_s"] for s in phase["samples"]] == [0.92, 0.41, 0.63]
    assert phase["exited_s"] == 1.26
    assert "window" not in phase["samples"][0]
    # The first sample's window: the producer's figures stay those of one failure.
    assert phase["window"] == (20.0, 20.92) and phase["broker"] == 2


def test_ratios_divide_this_side_by_kafkas_for_the_figures_both_measured() -> None:
    ours = {
        "kill_9": {"live_leaders_s": 3.5, "leaderships_logged_s": 3.2},
        "controlled_shutdown": {"live_leaders_s": 0.6, "leaderships_logged_s": 0.2},
        "create_topics": {"acknowledged_ms": 1500.0, "every_partition_led_ms": 16000.0},
        "controller_failover": {"controller_failover_s": 0.5},
    }
    kafkas = {
        "kill_9": {"live_leaders_s": 4.0, "leaderships_logged_s": 3.0},
        "controlled_shutdown": {"live_leaders_s": 0.5, "leaderships_logged_s": 0.25},
        "create_topics": {"acknowledged_ms": 1000.0},  # its led figure missing
        "controller_failover": {"controller_failover_s": 2.0},
    }
    found = ratios(ours, kafkas, session_s=3.0)
    assert found == {
        "kill_9_live_leaders": 0.88,
        "kill_9_live_leaders_after_the_session": 0.5,
        "kill_9_leaderships_logged": 1.07,
        # Kafka's 3.0 s is no longer than the session: no ratio after it.
        "controlled_shutdown_live_leaders": 1.2,
        "controlled_shutdown_leaderships_logged": 0.8,
        "controller_failover": 0.25,
        "create_topics_answered": 1.5,
    }


def test_no_ratios_with_one_side() -> None:
    assert ratios({"kill_9": {"live_leaders_s": 3.5}}, None, session_s=3.0) == {}


def _round(ours_s: float | None, kafkas_s: float, failover_s: float) -> dict[str, Any]:
    ours = {
        "kill_9": {"live_leaders_s": ours_s},
        "controller_failover": {"controller_failover_s": failover_s},
    }
    kafkas = {
        "kill_9": {"live_leaders_s": kafkas_s},
        "controller_failover": {"controller_failover_s": 2.0},
    }
    return {
        "this_control_plane": ours,
        "kafka_controller": kafkas,
        "ratios": ratios(ours, kafkas, session_s=3.0),
    }


def test_rounds_report_each_ratios_median_and_every_rounds_ratio() -> None:
    rounds = [_round(3.5, 4.0, 0.5), _round(4.4, 4.0, 0.6), _round(3.3, 3.0, 0.4)]
    summary = across_rounds(rounds)
    # The median of the rounds' own ratios (0.88, 1.1, 1.1), not the ratio of the medians.
    assert summary["ratios_per_round"]["kill_9_live_leaders"] == [0.88, 1.1, 1.1]
    assert summary["ratios"]["kill_9_live_leaders"] == 1.1
    # Kafka's 3.0 s in the last round is no longer than the session: no such ratio in that round.
    assert summary["ratios_per_round"]["kill_9_live_leaders_after_the_session"] == [0.5, 1.4, None]
    assert summary["ratios"]["kill_9_live_leaders_after_the_session"] == 0.95
    assert summary["ratios"]["controller_failover"] == 0.25
    assert summary["figures_median"]["kill_9_live_leaders"] == {
        "this_control_plane": 3.5,
        "kafka_controller": 4.0,
    }
    assert "create_topics_answered" not in summary["ratios"]
    assert "create_topics_answered" not in summary["figures_median"]


def test_a_round_missing_a_figure_leaves_it_out_of_the_median() -> None:
    summary = across_rounds([_round(None, 4.0, 0.5), _round(4.4, 4.0, 0.5)])
    assert summary["ratios_per_round"]["kill_9_live_leaders"] == [None, 1.1]
    assert summary["ratios"]["kill_9_live_leaders"] == 1.1
    assert summary["figures_median"]["kill_9_live_leaders"]["this_control_plane"] == 4.4
