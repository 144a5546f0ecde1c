"""The fault campaign reads a stock broker's own log for its part of a lost log dir: when its
ReplicaManager began handling the dir's failure and when it had handed the dir to its heartbeat
(Kafka 4.1's lines, in the campaign's log4j pattern `[%d] %p %m (%c)`)."""

from __future__ import annotations

import datetime
from pathlib import Path

from devtools.campaign_kafka import broker_handled_dir_failure

LOST = Path("/tmp/broker-103/logs-1")
OTHER = Path("/tmp/broker-103/logs-10")  # a dir whose path starts with the lost one's


class LoggedBroker:
    def __init__(self, text: str) -> None:
        self.text = text

    def output(self) -> str:
        return self.text


def _wall(stamp: str) -> float:
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_the_brokers_part_is_read_from_its_own_lines_for_that_dir() -> None:
    log = "\n".join(
        [
            "[2026-11-30 02:34:05,100] WARN Stopped serving replicas in dir "
            f"{OTHER} (kafka.server.ReplicaManager)",
            "[2026-11-30 02:34:06,250] ERROR Error while writing to checkpoint file "
            f"{LOST}/replication-offset-checkpoint (kafka.server.LogDirFailureChannel)",
            f"[2026-11-30 02:34:06,300] WARN Stopping serving replicas in dir {LOST} with uuid "
            "Some(EGqyT2B8SJ2YHvGIoEr6sw) because the log directory has failed. "
            "(kafka.server.ReplicaManager)",
            "\tsome.config = 1",
            f"[2026-11-30 02:34:07,800] WARN Stopped serving replicas in dir {LOST} "
            "(kafka.server.ReplicaManager)",
        ]
    )
    began = _wall("2026-11-30 02:34:05,000")
    handled = broker_handled_dir_failure(LoggedBroker(log), LOST, began)  # type: ignore[arg-type]
    assert handled == {"broker_found_it_after_s": 1.3, "broker_reported_it_after_s": 2.8}


def test_a_line_the_broker_has_not_logged_is_none() -> None:
    log = (
        f"[2026-11-30 02:34:06,300] WARN Stopping serving replicas in dir {LOST} with uuid "
        "Some(EGqyT2B8SJ2YHvGIoEr6sw) because the log directory has failed. "
        "(kafka.server.ReplicaManager)"
    )
    began = _wall("2026-11-30 02:34:06,000")
    handled = broker_handled_dir_failure(LoggedBroker(log), LOST, began)  # type: ignore[arg-type]
    assert handled == {"broker_found_it_after_s": 0.3, "broker_reported_it_after_s": None}
