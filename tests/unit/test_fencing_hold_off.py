"""The fencing rule: the controller holds off only what is its own blindness (issue 20).

It fences every broker silent past the session timeout whenever it demonstrably hears brokers,
however many are silent (a partial disruption, even of most brokers, is the brokers'); it holds
off only in a full disruption (nobody heard) or while its own ingress is measured overloaded, and
never longer than the hold-off's bound.
"""

from __future__ import annotations

import dataclasses
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.brokers import fencing
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import BrokerSession, ControllerEnv
from controlplane.runtime.fencing import FENCING_LISTENERS, FencingHoldOffWatch
from controlplane.runtime.ingress import LagWindow, ingress_overload, stale_reports
from controlplane.runtime.sessions import LocalSessionStore
from tests.unit.test_broker_core import _beat, registered_delta

NOW = 1_000_000
TIMEOUT = 9000
FRESH = BrokerSession(NOW - 100, 5)
LAPSED = BrokerSession(NOW - TIMEOUT - 1, 5)
OVERLOADED = "overloaded: the controller's queue lagged 4000 ms (bound 2000 ms) 10 ms ago"


def unfenced_cluster(n: int):
    d = registered_delta(n)
    for broker_id in range(n):
        run_event(d, "BrokerHeartbeat", _beat(broker_id, broker_id, 1000), env({}))
    assert not any(b.fenced for b in d.all_brokers())
    return d


def env(sessions, *, now: int = NOW, **extra) -> ControllerEnv:
    return ControllerEnv(now_ms=now, activated_ms=0, sessions=sessions, **extra)


def fence(d, sessions, **extra):
    before = d.last_offset
    response = run_event(d, "FenceStaleBrokers", {}, env(sessions, **extra))
    return response, d.last_offset - before


def fenced_ids(d) -> list[int]:
    return sorted(b.broker_id for b in d.all_brokers() if b.fenced)


# --- the rule, case by case ------------------------------------------------------------------
def test_losing_two_of_three_racks_fences_the_four_silent_brokers_at_once():
    """The operator's case: six brokers, four stop at once, two keep heartbeating."""
    d = unfenced_cluster(6)
    sessions = {b: LAPSED if b < 4 else FRESH for b in range(6)}
    response, written = fence(d, sessions)
    assert response["fenced_brokers"] == [0, 1, 2, 3] and response["held_off"] == []
    assert response["hold_off_reason"] is None and written >= 4
    assert fenced_ids(d) == [0, 1, 2, 3]


def test_a_full_disruption_is_held_off_and_writes_nothing():
    d = unfenced_cluster(6)
    response, written = fence(d, {b: LAPSED for b in range(6)})
    assert response["held_off"] == [0, 1, 2, 3, 4, 5] and response["fenced_brokers"] == []
    assert response["hold_off_reason"] == fencing.FULL_DISRUPTION
    assert written == 0 and fenced_ids(d) == []


def test_a_fenced_broker_heard_is_hearing_too():
    """A fenced broker's heartbeats reach the controller: it is not deaf."""
    d = unfenced_cluster(4)
    fence(d, {0: LAPSED, 1: FRESH, 2: FRESH, 3: FRESH})
    assert fenced_ids(d) == [0]
    response, _ = fence(d, {0: FRESH, 1: LAPSED, 2: LAPSED, 3: LAPSED})
    assert response["fenced_brokers"] == [1, 2, 3]


def test_a_measured_overload_holds_off_even_a_partial_disruption():
    d = unfenced_cluster(6)
    sessions = {b: LAPSED if b < 2 else FRESH for b in range(6)}
    response, written = fence(d, sessions, ingress_overload=OVERLOADED)
    assert response["held_off"] == [0, 1] and response["hold_off_reason"] == OVERLOADED
    assert written == 0


def test_a_hold_off_ends_after_its_bound_and_fences_who_is_still_silent():
    d = unfenced_cluster(6)
    silent = {b: LAPSED for b in range(6)}
    held, _ = fence(d, silent, fencing_hold_off_since_ms=NOW - 29_999)
    assert held["held_off"] == [0, 1, 2, 3, 4, 5]
    response, _ = fence(d, silent, fencing_hold_off_since_ms=NOW - 30_000)
    assert response["fenced_brokers"] == [0, 1, 2, 3, 4, 5] and response["hold_off_expired"]
    assert fenced_ids(d) == [0, 1, 2, 3, 4, 5]


def test_fencing_resumes_once_heartbeats_flow_again():
    d = unfenced_cluster(6)
    sessions = {b: LAPSED for b in range(6)}
    assert fence(d, sessions)[0]["held_off"] == [0, 1, 2, 3, 4, 5]
    # Partial recovery: five brokers are heard again, one really is gone.
    sessions.update({b: FRESH for b in range(5)})
    response, _ = fence(d, sessions, fencing_hold_off_since_ms=NOW - 1000)
    assert response["fenced_brokers"] == [5] and response["held_off"] == []
    assert not response["hold_off_expired"]
    assert fenced_ids(d) == [5]


def test_small_clusters_fence_as_kafka_does():
    d = unfenced_cluster(2)
    response, _ = fence(d, {0: LAPSED, 1: LAPSED})
    assert response["fenced_brokers"] == [0, 1]


def test_the_smallest_cluster_held_off_is_the_controllers_setting():
    d = unfenced_cluster(4)
    lapsed = {b: LAPSED for b in range(4)}
    response, _ = fence(d, lapsed, fencing_hold_off_min_brokers=5)
    assert response["fenced_brokers"] == [0, 1, 2, 3]


def test_nobody_stale_is_no_records_and_no_reason_even_when_overloaded():
    d = unfenced_cluster(3)
    response, written = fence(d, {b: FRESH for b in range(3)}, ingress_overload=OVERLOADED)
    assert response["fenced_brokers"] == response["held_off"] == [] and written == 0
    assert response["hold_off_reason"] is None


# --- the rule, as a property over time --------------------------------------------------------
PERIOD = 500  # the controller's timer
HEARTBEAT = 2000
MAX_HOLD_OFF = 6000


@dataclasses.dataclass
class Timeline:
    """When each broker stops heartbeating (None: never), and when the ingress is overloaded."""

    brokers: int
    stops_at: list[int | None]
    overloaded: list[tuple[int, int]]  # [from, to) windows of a measured overload

    def overload_at(self, now: int) -> str | None:
        return OVERLOADED if any(a <= now < b for a, b in self.overloaded) else None

    def last_heartbeat(self, broker: int, now: int) -> int:
        stops = self.stops_at[broker]
        heard_until = now if stops is None else min(now, stops)
        return heard_until - heard_until % HEARTBEAT


timelines = st.integers(1, 9).flatmap(
    lambda n: st.builds(
        Timeline,
        brokers=st.just(n),
        stops_at=st.lists(st.one_of(st.none(), st.integers(0, 20_000)), min_size=n, max_size=n),
        overloaded=st.lists(
            st.tuples(st.integers(0, 30_000), st.integers(0, 8000)).map(
                lambda w: (w[0], w[0] + w[1])
            ),
            max_size=2,
        ),
    )
)


@settings(max_examples=150, deadline=None)
@given(timeline=timelines, min_brokers=st.integers(1, 4))
def test_with_a_broker_heard_every_silent_broker_is_fenced_within_one_timer_period(
    timeline, min_brokers
):
    """Ticks every PERIOD ms through the real core and the real watch. Whenever a broker is
    heard and no overload is measured, nobody silent past the session timeout stays unfenced
    after the tick; whatever happens, nobody stays unfenced longer than the timeout, the
    hold-off's bound and one period; and a broker heard within its session is never fenced."""
    d = unfenced_cluster(timeline.brokers)
    watch = FencingHoldOffWatch(LocalSessionStore())
    for now in range(TIMEOUT, 60_000, PERIOD):
        sessions = {
            b: BrokerSession(timeline.last_heartbeat(b, now), 5) for b in range(timeline.brokers)
        }
        overload = timeline.overload_at(now)
        response = run_event(
            d,
            "FenceStaleBrokers",
            {},
            ControllerEnv(
                now_ms=now,
                activated_ms=0,
                sessions=sessions,
                session_timeout_ms=TIMEOUT,
                ingress_overload=overload,
                fencing_hold_off_since_ms=watch.since_ms,
                fencing_hold_off_max_ms=MAX_HOLD_OFF,
                fencing_hold_off_min_brokers=min_brokers,
            ),
        )
        watch.observe(response, now)
        fenced = {b.broker_id for b in d.all_brokers() if b.fenced}
        silent = {b for b, s in sessions.items() if s.last_contact_ms + TIMEOUT < now}
        heard = any(s.last_contact_ms + TIMEOUT >= now for s in sessions.values())
        assert not set(response["fenced_brokers"]) - silent  # never a broker still heard
        if heard and overload is None:
            assert silent <= fenced, (now, silent, fenced)
        for broker in silent - fenced:
            lapsed_at = sessions[broker].last_contact_ms + TIMEOUT
            assert now - lapsed_at <= MAX_HOLD_OFF + PERIOD, (now, broker, response)


# --- measuring the ingress ---------------------------------------------------------------------
def test_the_lag_window_keeps_the_worst_of_the_window():
    window = LagWindow(window_ms=9000)
    window.record("the controller's queue", 300, 1000)
    window.record("the controller's timer", 2500, 2000)
    window.record("the controller's queue", 100, 3000)
    assert window.worst(3000) == ("the controller's timer", 2500, 2000)
    assert window.worst(11_001) == ("the controller's queue", 100, 3000)
    assert window.worst(12_001) is None
    window.record("the controller's timer", -40, 12_001)  # early is no lag
    assert window.worst(12_001) == ("the controller's timer", 0, 12_001)


def test_an_overload_is_a_lag_over_the_bound_within_the_session():
    quiet = ingress_overload(
        own=("the controller's queue", 1500, 9000),
        listeners={"web-a:1": (2000, 9500)},
        now_ms=10_000,
        window_ms=9000,
        bound_ms=2000,
    )
    assert quiet is None
    loud = ingress_overload(
        own=("the controller's queue", 1500, 9000),
        listeners={"web-a:1": (4200, 9500), "web-b:2": (99_000, 500)},  # b's report is old
        now_ms=10_000,
        window_ms=9000,
        bound_ms=2000,
    )
    assert loud == (
        "overloaded: the internal listener of web-a:1 lagged 4200 ms (bound 2000 ms) 500 ms ago"
    )
    assert stale_reports({"gone:1": (0, 0), "here:2": (0, 600_000)}, now_ms=600_001) == ["gone:1"]
    # serve_kafka's report (stock brokers' BrokerHeartbeat) is named as that listener's.
    kafka = ingress_overload(
        own=None,
        listeners={"web-a:1": (900, 9500), "kafka@host-k:7": (3100, 9800)},
        now_ms=10_000,
        window_ms=9000,
        bound_ms=2000,
    )
    assert kafka == (
        "overloaded: the Kafka protocol listener of host-k:7 lagged 3100 ms (bound 2000 ms)"
        " 200 ms ago"
    )


# --- saying it loudly --------------------------------------------------------------------------
def test_the_watch_says_each_decision_once(caplog):
    store = LocalSessionStore()
    heard: list[tuple[str, list[int], int, str]] = []
    FENCING_LISTENERS.append(lambda *told: heard.append(told))
    reason = fencing.FULL_DISRUPTION
    try:
        watch = FencingHoldOffWatch(store)
        with caplog.at_level(logging.WARNING, logger="controlplane.controller"):
            held = {"held_off": [1, 2, 3], "fenced_brokers": [], "unfenced": 4}
            watch.observe({**held, "hold_off_reason": reason}, 1000)
            watch.observe({**held, "hold_off_reason": reason}, 1500)
            assert store.fencing_hold_off() == ([1, 2, 3], 1000) and watch.since_ms == 1000
            watch.observe({"held_off": [], "fenced_brokers": [3], "unfenced": 4}, 4000)
            assert watch.since_ms == 0
            again = {"unfenced": 3, "hold_off_reason": reason}
            watch.observe({**again, "held_off": [1], "fenced_brokers": []}, 5000)
            expired = {**again, "held_off": [], "fenced_brokers": [1], "hold_off_expired": True}
            watch.observe(expired, 35_000)
            watch.observe({"held_off": [], "fenced_brokers": [2], "unfenced": 2}, 40_000)
            watch.observe({"held_off": [], "fenced_brokers": [], "unfenced": 1}, 40_500)
    finally:
        FENCING_LISTENERS.pop()
    assert [(what, brokers) for what, brokers, _, _ in heard] == [
        ("FencingHeldOff", [1, 2, 3]),
        ("FencingResumed", [3]),
        ("FencingHeldOff", [1]),
        ("FencingHoldOffExpired", [1]),
        ("StaleBrokersFenced", [2]),
    ]
    assert heard[0][3] == reason
    assert store.fencing_hold_off() == ([], 0)
    messages = [r.getMessage() for r in caplog.records]
    assert any("not fencing 3 of 4 unfenced brokers" in m and reason in m for m in messages)
    assert any("fencing as usual again after 3000 ms" in m for m in messages)
    assert any("hold-off expired after 30000 ms" in m for m in messages)


def test_a_store_that_lost_its_sessions_is_noticed_once():
    store = LocalSessionStore()
    assert store.mark_sessions() and not store.mark_sessions()
    store.clear()  # what a restarted Redis is to the controller
    assert store.mark_sessions()


def test_the_answer_says_when_the_next_session_lapses():
    """Kafka's controller schedules its next fencing check when the next session lapses: the
    answer names that millisecond among the unfenced brokers whose session is still valid (a
    broker never heard counts from the activation), None when no session runs."""
    d = unfenced_cluster(4)
    sessions = {0: BrokerSession(NOW - 500, 5), 1: FRESH, 2: LAPSED}  # 3: never heard
    response = run_event(
        d,
        "FenceStaleBrokers",
        {},
        ControllerEnv(
            now_ms=NOW, activated_ms=NOW - 200, sessions=sessions, session_timeout_ms=TIMEOUT
        ),
    )
    assert response["fenced_brokers"] == [2]
    assert response["next_session_expiry_ms"] == NOW - 500 + TIMEOUT + 1
    # Its session lapses then: a round a millisecond earlier fences nobody, one then fences it.
    at = response["next_session_expiry_ms"]
    early = run_event(
        d,
        "FenceStaleBrokers",
        {},
        ControllerEnv(
            now_ms=at - 1, activated_ms=NOW - 200, sessions=sessions, session_timeout_ms=TIMEOUT
        ),
    )
    assert early["fenced_brokers"] == []
    due = run_event(
        d,
        "FenceStaleBrokers",
        {},
        ControllerEnv(
            now_ms=at, activated_ms=NOW - 200, sessions=sessions, session_timeout_ms=TIMEOUT
        ),
    )
    assert due["fenced_brokers"] == [0]
    assert due["next_session_expiry_ms"] == NOW - 200 + TIMEOUT + 1  # broker 3's, from activation
    everyone = {b: LAPSED for b in range(4)}
    assert (
        fencing.next_session_expiry_ms(
            d, sessions=everyone, now_ms=NOW, session_timeout_ms=TIMEOUT, activated_ms=0
        )
        is None
    )
