"""The benchmarks read the controller's own timings of a large commit from its log line
(bench.replica_state.COMMIT_LINE, bench.commit_scale.CommitLine): the line the controller writes
must be the line they parse."""

from __future__ import annotations

import logging

import pytest

from bench.commit_scale import CommitLine
from bench.replica_state import COMMIT_LINE
from controlplane.runtime import controller as controller_module
from controlplane.runtime.controller import LARGE_COMMIT_RECORDS, get_runtime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.lease import cluster_get_or_create
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_large_commits_log_line_is_the_one_the_benchmarks_parse() -> None:
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    for broker_id in range(3):
        registered = runtime.handle(
            ControllerEvent("BrokerRegistration", registration_body(broker_id, cluster_id))
        )
        beat = {
            "broker_id": broker_id,
            "broker_epoch": registered.response["broker_epoch"],
            "current_metadata_offset": 10**12,  # caught up: unfenced
        }
        runtime.handle(ControllerEvent("BrokerHeartbeat", beat))
    assignments = [
        {"partition_index": i, "broker_ids": [i % 3, (i + 1) % 3]}
        for i in range(LARGE_COMMIT_RECORDS)
    ]
    parsed, seen = CommitLine(), Lines()
    logger = controller_module.logger
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(parsed)
    logger.addHandler(seen)
    try:
        answer = runtime.handle(
            ControllerEvent(
                "CreateTopics", {"topics": [{"name": "large", "assignments": assignments}]}
            )
        )
    finally:
        logger.removeHandler(parsed)
        logger.removeHandler(seen)
        logger.setLevel(level)
    assert answer.response["topics"][0]["error_code"] == 0, answer.response
    lines = [m for message in seen.messages if (m := COMMIT_LINE.search(message))]
    assert len(lines) == 1
    groups = lines[0].groups()
    records, events, statements, timings = groups[0], groups[1], groups[6], groups[8]
    assert all(int(ms) >= 0 for ms in groups[2:6] + groups[7:8])  # the steps' milliseconds
    assert int(records) == LARGE_COMMIT_RECORDS + 1 and int(events) == 1  # the topic, too
    assert int(statements) > 0 and "cp_metadata_record" in timings
    assert parsed.timings["records"] == LARGE_COMMIT_RECORDS + 1
    assert parsed.timings["transaction_ms"] == (
        parsed.timings["log_transaction_ms"] + parsed.timings["tables_transaction_ms"]
    )
