"""The per-peer limits of a door (controlplane.server.peer_limits): a broker's rate, its lane,
the cap of parked long-polls. Time is the test's own clock."""

from __future__ import annotations

import asyncio

from controlplane.server.peer_limits import MAX_THROTTLE_MS, HeartbeatLanes, ParkedLongPolls


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_record_counts_every_request_and_throttles_at_most_one_window() -> None:
    clock = Clock()
    lanes = HeartbeatLanes(rate=2.0, burst=2.0, clock=clock)
    assert [lanes.record("b1") for _ in range(2)] == [0, 0]  # the burst
    assert lanes.record("b1") == 500  # one token short at 2 a second
    assert all(lanes.record("b1") == MAX_THROTTLE_MS for _ in range(100))  # a flood: capped
    assert lanes.record("b2") == 0  # another broker's own bucket
    clock.now += MAX_THROTTLE_MS / 1000 + 0.5  # the debt (one window) paid, and one token more
    assert lanes.record("b1") == 0


def test_admit_refuses_without_counting_the_refused() -> None:
    clock = Clock()
    lanes = HeartbeatLanes(rate=1.0, burst=1.0, clock=clock)
    assert lanes.admit("b1") == 0.0
    assert [lanes.admit("b1") for _ in range(50)] == [1.0] * 50  # refused: the debt stays 1 s
    clock.now += 1.0
    assert lanes.admit("b1") == 0.0


def test_no_rate_is_no_limit() -> None:
    lanes = HeartbeatLanes(rate=0.0, burst=0.0)
    assert {lanes.record("b1") for _ in range(1000)} == {0}
    assert {lanes.admit("b1") for _ in range(1000)} == {0.0}


def test_one_request_of_a_key_in_the_lane_at_a_time() -> None:
    lanes = HeartbeatLanes(rate=0.0, burst=0.0)
    inside: list[str] = []
    most = {"b1": 0, "b2": 0}

    async def request(key: str) -> None:
        async with lanes.turn(key):
            inside.append(key)
            most[key] = max(most[key], inside.count(key))
            await asyncio.sleep(0)
            inside.remove(key)

    async def flood() -> None:
        await asyncio.gather(*(request("b1") for _ in range(20)), request("b2"), request("b2"))

    asyncio.run(flood())
    assert most == {"b1": 1, "b2": 1}
    assert lanes.waiting("b1") == 0 and not lanes._locks  # nothing kept once idle


def test_parked_long_polls_are_capped_per_peer() -> None:
    parked = ParkedLongPolls(limit=2)
    peer, other = ("User:broker", "10.0.0.1"), ("User:broker", "10.0.0.2")
    assert [parked.park(peer) for _ in range(3)] == [True, True, False]
    assert parked.park(other)
    parked.unpark(peer)
    assert parked.park(peer) and parked.parked(peer) == 2
    assert all(ParkedLongPolls(limit=0).park(peer) for _ in range(1000))
