"""bench.broker_logs: when the brokers logged taking leaderships, from their own logs."""

from __future__ import annotations

import dataclasses
import datetime
import time
from pathlib import Path

from bench.broker_logs import LeadershipLog


@dataclasses.dataclass
class Broker:
    log_path: Path


def _stamp(at: float) -> str:
    moment = datetime.datetime.fromtimestamp(at)  # log4j's local time, to the millisecond
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"


def _leaders(at: float, broker_id: int, count: int) -> str:
    return (
        f"[{_stamp(at)}] INFO [Broker id={broker_id}] Transitioning {count} partition(s) to "
        "local leaders. (state.change.logger)\n"
    )


def _followers(at: float, broker_id: int) -> str:
    return (
        f"[{_stamp(at)}] INFO [Broker id={broker_id}] Transitioning 5 partition(s) to local "
        "followers. (state.change.logger)\n"
    )


def test_the_latest_leadership_line_of_the_phase_on_any_broker(tmp_path: Path) -> None:
    one, two = Broker(tmp_path / "1.log"), Broker(tmp_path / "2.log")
    before = time.time() - 5
    one.log_path.write_text(_leaders(before, 1, 900))  # an earlier phase's, already in the log
    taken = LeadershipLog([one, two])
    began = taken.began
    with open(one.log_path, "a") as log:
        log.write(_leaders(began + 0.25, 1, 10))
        log.write(_followers(began + 0.9, 1))  # not a leadership
        log.write("[not a log4j line] Transitioning 7 partition(s) to local leaders.\n")
    two.log_path.write_text(_leaders(began + 0.6, 2, 20) + _leaders(began + 9.0, 2, 1))
    # The line logged after the phase ended is not the phase's.
    assert taken.last_taken_s(until=began + 1.0) == round(
        int((began + 0.6) * 1000) / 1000 - began, 3
    )
    latest = taken.last_taken_at(until=began + 10)
    assert latest is not None and abs(latest - (began + 9.0)) < 0.002


def test_no_leadership_logged_is_none(tmp_path: Path) -> None:
    one = Broker(tmp_path / "1.log")  # no log written yet: the broker has not started
    taken = LeadershipLog([one])
    one.log_path.write_text(_followers(taken.began + 0.1, 1))
    assert taken.last_taken_s(until=taken.began + 1) is None
