"""The side-by-side benchmark's summaries (`bench.real_cluster_failover`): one failure measured
several times as its medians, and each figure both controllers measured as a ratio."""

from __future__ import annotations

import statistics
from typing import Any

SAMPLED_FIGURES = ("live_leaders_s", "leaderships_logged_s", "exited_s")


def median_phase(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One failure measured `len(samples)` times: the first sample's fields (the broker, what it
    led, its window for the producer's figures), each figure the median of the samples, and
    every sample's figures beside them (one sample on this machine spreads more than the gap
    between two controllers)."""
    if len(samples) == 1:
        return samples[0]
    phase = dict(samples[0])
    for figure in SAMPLED_FIGURES:
        taken = [s[figure] for s in samples if s[figure] is not None]
        phase[figure] = round(statistics.median(taken), 3) if taken else None
    phase["samples"] = [
        {key: s[key] for key in ("broker", "led", *SAMPLED_FIGURES)} for s in samples
    ]
    return phase


# Each figure both sides report, by where it is in a side's result.
COMPARED = {
    "kill_9_live_leaders": ("kill_9", "live_leaders_s"),
    "kill_9_leaderships_logged": ("kill_9", "leaderships_logged_s"),
    "controlled_shutdown_live_leaders": ("controlled_shutdown", "live_leaders_s"),
    "controlled_shutdown_leaderships_logged": ("controlled_shutdown", "leaderships_logged_s"),
    "controlled_shutdown_exited": ("controlled_shutdown", "exited_s"),
    "controller_failover": ("controller_failover", "controller_failover_s"),
    "reassign_answered": ("reassign_partitions", "acknowledged_ms"),
    "reassign_completed": ("reassign_partitions", "reassignments_completed_ms"),
    "reassign_every_partition_moved": ("reassign_partitions", "every_partition_moved_ms"),
    "create_topics_answered": ("create_topics", "acknowledged_ms"),
    "create_topics_every_partition_led": ("create_topics", "every_partition_led_ms"),
    "create_topics_leaderships_logged": ("create_topics", "leaderships_logged_ms"),
}
# A kill -9 is learnt of by the session timeout on both sides: its ratio is also given without.
AFTER_THE_SESSION = ("kill_9_live_leaders", "kill_9_leaderships_logged")


def ratios(
    ours: dict[str, Any] | None, kafkas: dict[str, Any] | None, session_s: float
) -> dict[str, float]:
    """This control plane's time over Kafka's controller's for each figure both sides measured
    in the run (below 1: this side was faster); none with one side only."""
    if not ours or not kafkas:
        return {}
    found: dict[str, float] = {}
    for name, (phase, figure) in COMPARED.items():
        mine = (ours.get(phase) or {}).get(figure)
        theirs = (kafkas.get(phase) or {}).get(figure)
        if mine is None or not theirs:
            continue
        found[name] = round(mine / theirs, 2)
        if name in AFTER_THE_SESSION and theirs > session_s:
            found[f"{name}_after_the_session"] = round(
                max(0.0, mine - session_s) / (theirs - session_s), 2
            )
    return found


def across_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Both sides run in turn `len(rounds)` times (each round: `this_control_plane`,
    `kafka_controller`, `ratios`): each ratio as the median of the rounds' own ratios (each
    round's two sides ran minutes apart on the same machine, so a round's ratio pairs them), every
    round's ratio beside it, and each side's median figure."""
    named = {name for one in rounds for name in one["ratios"]}
    per_round = {
        name: [one["ratios"].get(name) for one in rounds]
        for name in [*COMPARED, *(f"{n}_after_the_session" for n in AFTER_THE_SESSION)]
        if name in named
    }
    figures: dict[str, dict[str, float | None]] = {}
    for name, (phase, figure) in COMPARED.items():
        sides = {
            side: [(one[side].get(phase) or {}).get(figure) for one in rounds if one.get(side)]
            for side in ("this_control_plane", "kafka_controller")
        }
        if any(value is not None for taken in sides.values() for value in taken):
            figures[name] = {side: _median(taken) for side, taken in sides.items()}
    return {
        "ratios": {name: _median(taken) for name, taken in per_round.items()},
        "ratios_per_round": per_round,
        "figures_median": figures,
    }


def _median(taken: list[float | None]) -> float | None:
    present = [value for value in taken if value is not None]
    return round(statistics.median(present), 3) if present else None
