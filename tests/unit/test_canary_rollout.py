"""The canary rollout guard's verdicts (KIP-1095), pure: from registrations and what happened
since the bake started to PROCEED / HOLD / ROLLBACK / NOT_STARTED / COMPLETE, explained."""

from __future__ import annotations

from controlplane.controller.canary.rollout import (
    COMPLETE,
    HOLD,
    NOT_STARTED,
    PROCEED,
    ROLLBACK,
    BrokerNow,
    Fencing,
    Registration,
    Window,
    bake_of,
    rollout_verdict,
)

HOUR = 3_600_000
T0 = 1_700_000_000_000


def fleet(canary_version: str = "2.0", regular_version: str = "1.0") -> list[BrokerNow]:
    """Brokers 1-4 regular, 5-6 canary."""
    return [
        *(BrokerNow(i, "broker", regular_version, False) for i in range(1, 5)),
        *(BrokerNow(i, "canary-broker", canary_version, False) for i in (5, 6)),
    ]


def registrations(brokers: list[BrokerNow], at: int = T0) -> list[Registration]:
    return [
        Registration(
            offset=i,
            timestamp_ms=at + i,
            broker_id=b.broker_id,
            pod=b.pod,
            software_version=b.software_version,
        )
        for i, b in enumerate(brokers)
    ]


def verdict(brokers, log, window=None, *, now=T0 + 2 * HOUR, bake=HOUR, version="2.0"):
    bake_state = bake_of(version, brokers, log)
    return rollout_verdict(
        bake=bake_state, brokers=brokers, window=window or Window(), now_ms=now, bake_time_ms=bake
    )


def test_no_broker_runs_it_not_started():
    brokers = fleet()
    answer = verdict(brokers, registrations(brokers), version="3.0")
    assert answer["verdict"] == NOT_STARTED
    assert "No registered broker reports version 3.0" in answer["explanation"]


def test_every_broker_runs_it_complete():
    brokers = fleet("2.0", "2.0")
    answer = verdict(brokers, registrations(brokers))
    assert answer["verdict"] == COMPLETE and answer["brokers_running_version"] == [1, 2, 3, 4, 5, 6]


def test_a_healthy_canary_proceeds_after_the_bake_time_and_holds_before():
    brokers = fleet()
    log = registrations(brokers)
    baking = verdict(brokers, log, now=T0 + HOUR // 2)
    assert baking["verdict"] == HOLD
    assert "still baking" in baking["explanation"] and "no incident" in baking["explanation"]
    assert baking["evidence"]["bake_elapsed_ms"] == HOUR // 2 - 5
    done = verdict(brokers, log)
    assert done["verdict"] == PROCEED, done
    assert "baked on canary brokers 5, 6" in done["explanation"]
    evidence = done["evidence"]
    assert evidence["canary"]["brokers"] == [5, 6] and evidence["non_canary"]["brokers"] == [
        1,
        2,
        3,
        4,
    ]
    assert evidence["bake_time_ms"] == HOUR and evidence["bake_started_offset"] == 5


def test_canary_brokers_that_keep_losing_their_sessions_roll_back():
    brokers = fleet()
    log = registrations(brokers)
    expiries = [Fencing(10 + i, 5 + i % 2, session_expiry=True) for i in range(4)]
    answer = verdict(brokers, log, Window(fencings=expiries))
    assert answer["verdict"] == ROLLBACK, answer
    assert answer["evidence"]["canary"]["session_expiries"] == 4
    assert answer["evidence"]["canary"]["incidents_per_broker"] == 2.0
    assert "Roll version 2.0 back" in answer["explanation"]
    assert "4 session expiries" in answer["explanation"]


def test_one_or_two_incidents_hold_rather_than_roll_back():
    brokers = fleet()
    answer = verdict(
        brokers, registrations(brokers), Window(fencings=[Fencing(10, 5, session_expiry=True)])
    )
    assert answer["verdict"] == HOLD and "may be chance" in answer["explanation"]


def test_trouble_everywhere_is_not_blamed_on_the_canary():
    brokers = fleet()
    window = Window(
        fencings=[Fencing(10 + i, 1 + i % 4, session_expiry=True) for i in range(12)]
        + [Fencing(30, 5, session_expiry=True)],
        offline_reports={6: 1},
    )
    answer = verdict(brokers, registrations(brokers), window)
    # 2 incidents on 2 canary brokers (1.0 each) against 12 on 4 others (3.0 each).
    assert answer["verdict"] == PROCEED, answer
    assert "no more per broker than the non-canary brokers" in answer["explanation"]


def test_offline_replicas_and_leaderless_partitions_count_against_their_brokers():
    brokers = fleet()
    window = Window(offline_reports={5: 2, 1: 1}, leaderless=[(5, 6), (1, 5), (2, 3)])
    answer = verdict(brokers, registrations(brokers), window)
    canary, others = answer["evidence"]["canary"], answer["evidence"]["non_canary"]
    assert (canary["offline_replicas"], canary["leaderless_partitions"]) == (2, 1)
    assert (others["offline_replicas"], others["leaderless_partitions"]) == (1, 1)
    assert answer["verdict"] == ROLLBACK  # 3 incidents on 2 canary brokers, 2 on 4 others


def test_planned_fencings_are_shown_but_are_not_incidents():
    brokers = fleet()
    answer = verdict(
        brokers, registrations(brokers), Window(fencings=[Fencing(10, 5, session_expiry=False)])
    )
    assert answer["verdict"] == PROCEED
    assert answer["evidence"]["canary"]["fencings"] == 1
    assert answer["evidence"]["canary"]["incidents"] == 0


def test_a_fenced_canary_broker_holds():
    brokers = [*fleet()[:5], BrokerNow(6, "canary-broker", "2.0", True)]
    answer = verdict(brokers, registrations(brokers))
    assert answer["verdict"] == HOLD and "6 running it are fenced now" in answer["explanation"]


def test_a_version_that_skipped_the_canary_brokers_holds():
    brokers = [*fleet("1.0", "1.0")[:3], BrokerNow(4, "broker", "2.0", False), *fleet()[4:6]]
    brokers = [
        b if b.pod == "broker" else BrokerNow(b.broker_id, b.pod, "1.0", False) for b in brokers
    ]
    answer = verdict(brokers, registrations(brokers))
    assert answer["verdict"] == HOLD
    assert "no canary broker" in answer["explanation"]


def test_the_bake_starts_with_the_last_canary_broker_and_survives_re_registration():
    brokers = fleet()
    log = [
        Registration(0, T0, 5, "canary-broker", "1.0"),
        Registration(1, T0 + 10, 5, "canary-broker", "2.0"),  # 5 takes 2.0
        Registration(2, T0 + 20, 6, "canary-broker", "2.0"),  # 6 takes 2.0: the bake starts
        Registration(3, T0 + 30, 5, "canary-broker", "2.0"),  # 5 lost its session: same run
    ]
    bake = bake_of("2.0", brokers, log)
    assert bake.start == log[2]
    assert bake.running[5] == log[1]
    log.append(Registration(4, T0 + 40, 6, "canary-broker", "1.0"))
    log.append(Registration(5, T0 + 50, 6, "canary-broker", "2.0"))  # rolled back and again
    assert bake_of("2.0", brokers, log).start == log[5]


def test_when_the_rollout_went_past_the_canary_stage_it_says_so():
    brokers = [BrokerNow(1, "broker", "2.0", False), *fleet()[1:]]
    answer = verdict(brokers, registrations(brokers))
    assert answer["verdict"] == PROCEED
    assert "already runs on 1 non-canary broker(s) (1)" in answer["explanation"]
