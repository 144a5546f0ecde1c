"""When stock brokers themselves took leaderships, read from their own logs.

A benchmark that polls each broker's Metadata sees a change at the poll after it, and one poll
of a few thousand partitions through two brokers takes a few hundred ms: a figure's resolution.
A broker logs each metadata change that makes it a leader as it applies it
(`[Broker id=N] Transitioning K partition(s) to local leaders.`, ReplicaManager's state change
log, on every Kafka 4.x release), with its wall-clock time to the millisecond: the latest such
line in a phase is when the last broker had taken the last of its leaderships, whoever the
controller is.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

LEADERSHIP_LINE = re.compile(
    rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO \[Broker id=\d+\] "
    rb"Transitioning \d+ partition\(s\) to local leaders\.",
    re.MULTILINE,
)


class HasLog(Protocol):
    @property
    def log_path(self) -> Path: ...


def _logged_at(stamp: bytes, millis: bytes) -> float:
    """A log4j timestamp (the JVM's local time zone: the machine's, as this process's) as
    seconds since the epoch."""
    local = datetime.datetime.strptime(stamp.decode(), "%Y-%m-%d %H:%M:%S")
    return local.timestamp() + int(millis) / 1000


class LeadershipLog:
    """The brokers' logs from now on (`began`, wall clock): `last_taken_s` answers how long after
    `began` the last leadership line was written, up to a moment."""

    def __init__(self, brokers: Sequence[HasLog]) -> None:
        self.paths = [broker.log_path for broker in brokers]
        self.offsets = [_size(path) for path in self.paths]
        self.began = time.time()

    def last_taken_s(self, until: float) -> float | None:
        """Seconds from `began` to the latest leadership line logged before `until` (wall
        clock); None when no broker logged one."""
        latest = self.last_taken_at(until)
        return None if latest is None else round(max(0.0, latest - self.began), 3)

    def last_taken_at(self, until: float) -> float | None:
        """The wall-clock time of the latest leadership line logged from `began` to `until`."""
        latest: float | None = None
        for path, offset in zip(self.paths, self.offsets, strict=True):
            for match in LEADERSHIP_LINE.finditer(_read_from(path, offset)):
                logged = _logged_at(match.group(1), match.group(2))
                # The log's millisecond truncates: a line of the phase's first ms is its own.
                if self.began - 0.001 <= logged <= until and (latest is None or logged > latest):
                    latest = logged
        return latest


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read()
    except OSError:
        return b""
