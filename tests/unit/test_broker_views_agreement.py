"""`broker_views.agreement`'s verdict: the brokers are read seconds after the controller's view,
so a difference found while the controller's log moved is no verdict; past its timeout the
check goes on until a comparison over a log that stood still decides (within a bound).

The comparison itself (`differences`: a broker's Metadata and kafka-dump-log against the view)
runs against real brokers in the fault campaign and tests/kafka; here it is replaced by a
script of what each attempt found, so the retry and verdict rules are what is tested."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from devtools import broker_views
from devtools.kafka_view import KafkaView

DIFFERENCE = {"metadata": ["partition ('t', 0) (leader, leader epoch, replicas, isr): ..."]}
NONE: dict[str, list[str]] = {"metadata": [], "dump_log": []}


@dataclasses.dataclass
class Broker:
    node_id: int
    running: bool = True


class Script:
    """Per attempt: whether the log moves during it and whether the brokers differ."""

    def __init__(self, attempts: list[tuple[bool, bool]]) -> None:
        self.attempts = attempts
        self.offset = 100
        self.made = 0
        self.reads = 0

    def log_end(self) -> int:
        self.reads += 1
        return self.offset

    def differences(self, view: KafkaView, brokers: Any) -> dict[int, dict[str, list[str]]]:
        moves, differs = self.attempts[min(self.made, len(self.attempts) - 1)]
        self.made += 1
        if moves:
            self.offset += 1  # a commit lands while the brokers are read
        return {b.node_id: {**NONE, **DIFFERENCE} if differs else dict(NONE) for b in brokers}


def run(script: Script, monkeypatch: pytest.MonkeyPatch, timeout_s: float) -> dict[str, Any]:
    monkeypatch.setattr(broker_views, "differences", script.differences)
    return broker_views.agreement(
        KafkaView,
        [Broker(101), Broker(102)],  # type: ignore[list-item]
        timeout_s=timeout_s,
        log_end=script.log_end,
    )


def test_a_difference_while_the_log_moved_is_asked_again_past_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three attempts differ while commits land (the third past the 0.6 s), the fourth agrees.
    script = Script([(True, True), (True, True), (True, True), (False, False)])
    found = run(script, monkeypatch, timeout_s=0.6)
    assert found["agree"] is True and found["attempts"] == 4, found
    assert found["still_attempts"] == 1 and found["differences"] == {}


def test_a_difference_over_a_log_that_stood_still_is_the_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = Script([(True, True), (False, True)])
    found = run(script, monkeypatch, timeout_s=0.3)
    assert found["agree"] is False and found["attempts"] == 2, found
    assert found["log_moved_in_the_last_attempt"] is False
    assert set(found["differences"]) == {101, 102}


def test_a_log_that_never_stands_still_ends_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script([(True, True)])
    found = run(script, monkeypatch, timeout_s=0.2)
    assert found["agree"] is False and found["log_moved_in_the_last_attempt"] is True, found
    assert found["seconds"] > broker_views.MOVING_LOG_GRACE * 0.2
    assert found["still_attempts"] == 0


def test_agreement_while_the_log_moved_is_agreement(monkeypatch: pytest.MonkeyPatch) -> None:
    # The brokers matched the view read first: whatever landed after changed nothing compared.
    script = Script([(True, False)])
    found = run(script, monkeypatch, timeout_s=5)
    assert found["agree"] is True and found["attempts"] == 1, found
    assert script.reads == 2  # the log end read before the view and after the brokers
