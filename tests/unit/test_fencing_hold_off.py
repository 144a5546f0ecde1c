"""The controller suspects its own ingress before the brokers: when most brokers lapse at once it
holds off fencing them (no records), and fences as usual once heartbeats flow again."""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from controlplane.controller.brokers import control as core
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import BrokerSession, ControllerEnv
from controlplane.runtime.controller import FENCING_LISTENERS, FencingHoldOffWatch
from controlplane.runtime.sessions import LocalSessionStore
from tests.unit.test_broker_core import _beat, registered_delta

NOW = 1_000_000
TIMEOUT = 9000
FRESH = BrokerSession(NOW - 100, 5)
LAPSED = BrokerSession(NOW - TIMEOUT - 1, 5)


def unfenced_cluster(n: int):
    d = registered_delta(n)
    for broker_id in range(n):
        run_event(d, "BrokerHeartbeat", _beat(broker_id, broker_id, 1000), env({}))
    assert not any(b.fenced for b in d.all_brokers())
    return d


def env(sessions, **extra) -> ControllerEnv:
    return ControllerEnv(now_ms=NOW, activated_ms=0, sessions=sessions, **extra)


def fence(d, sessions, **extra):
    before = d.last_offset
    response = run_event(d, "FenceStaleBrokers", {}, env(sessions, **extra))
    return response, d.last_offset - before


def test_all_brokers_silent_at_once_is_held_off_and_writes_nothing():
    d = unfenced_cluster(6)
    response, written = fence(d, {b: LAPSED for b in range(6)})
    assert response["held_off"] == [0, 1, 2, 3, 4, 5] and response["fenced_brokers"] == []
    assert written == 0 and not any(b.fenced for b in d.all_brokers())


def test_most_brokers_silent_is_held_off_half_is_not():
    d = unfenced_cluster(6)
    four = {b: LAPSED if b < 4 else FRESH for b in range(6)}
    response, written = fence(d, four)
    assert response["held_off"] == [0, 1, 2, 3] and written == 0
    three = {b: LAPSED if b < 3 else FRESH for b in range(6)}
    response, written = fence(d, three)
    assert response["fenced_brokers"] == [0, 1, 2] and response["held_off"] == []
    assert written >= 3 and [b.fenced for b in d.all_brokers()] == [True] * 3 + [False] * 3


def test_fencing_resumes_once_heartbeats_flow_again():
    d = unfenced_cluster(6)
    sessions = {b: LAPSED for b in range(6)}
    assert fence(d, sessions)[0]["held_off"] == [0, 1, 2, 3, 4, 5]
    # The ingress recovers: five brokers are heard again, one really is gone.
    sessions.update({b: FRESH for b in range(5)})
    response, _ = fence(d, sessions)
    assert response["fenced_brokers"] == [5] and response["held_off"] == []
    assert [b.fenced for b in d.all_brokers()] == [False] * 5 + [True]


def test_small_clusters_fence_as_kafka_does():
    d = unfenced_cluster(2)
    response, _ = fence(d, {0: LAPSED, 1: LAPSED})
    assert response["fenced_brokers"] == [0, 1]


def test_the_threshold_is_the_controllers_setting():
    d = unfenced_cluster(4)
    lapsed = {b: LAPSED for b in range(4)}
    response, _ = fence(d, lapsed, fencing_hold_off_ratio=1.0)
    assert response["fenced_brokers"] == [0, 1, 2, 3]


@given(
    n=st.integers(0, 12),
    lapsed=st.sets(st.integers(0, 11)),
    ratio=st.sampled_from([0.5, 0.6, 0.9]),
    minimum=st.integers(1, 5),
)
def test_either_every_stale_broker_is_fenced_or_none_is(n, lapsed, ratio, minimum):
    d = unfenced_cluster(n)
    sessions = {b: LAPSED if b in lapsed else FRESH for b in range(n)}
    stale = sorted(b for b in lapsed if b < n)
    response, written = fence(
        d, sessions, fencing_hold_off_ratio=ratio, fencing_hold_off_min_brokers=minimum
    )
    suspects = core.fencing_suspects_ingress(len(stale), n, ratio=ratio, min_brokers=minimum)
    assert suspects == (n >= minimum and len(stale) > ratio * n)
    if suspects:
        assert response["held_off"] == stale and response["fenced_brokers"] == [] and not written
    else:
        assert response["fenced_brokers"] == stale and response["held_off"] == []
        assert sorted(b.broker_id for b in d.all_brokers() if b.fenced) == stale


def test_the_watch_is_loud_once_per_episode(caplog):
    store = LocalSessionStore()
    heard: list[tuple[str, list[int], int]] = []
    FENCING_LISTENERS.append(
        lambda what, brokers, unfenced: heard.append((what, brokers, unfenced))
    )
    try:
        watch = FencingHoldOffWatch(store)
        with caplog.at_level(logging.WARNING, logger="controlplane.controller"):
            watch.observe([1, 2, 3], 4, 1000)
            watch.observe([1, 2, 3], 4, 1500)
            assert store.fencing_hold_off() == ([1, 2, 3], 1000)
            watch.observe([], 4, 4000)
    finally:
        FENCING_LISTENERS.pop()
    assert heard == [("FencingHeldOff", [1, 2, 3], 4), ("FencingResumed", [1, 2, 3], 4)]
    assert store.fencing_hold_off() == ([], 0)
    messages = [r.getMessage() for r in caplog.records]
    assert any("suspecting this controller's own ingress" in m for m in messages)
    assert any("heartbeats flow again after 3000 ms" in m for m in messages)
