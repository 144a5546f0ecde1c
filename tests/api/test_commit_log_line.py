"""A large commit's log line says where its time went, the wait in the controller's queue
first: an answer's time before the controller handled it shows there."""

from __future__ import annotations

import logging
import re

import pytest

from controlplane.runtime.controller import LARGE_COMMIT_RECORDS, get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create, now_ms
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db


def create(name: str, *, queued_ms: int | None) -> ControllerEvent:
    topics = [{"name": name, "num_partitions": LARGE_COMMIT_RECORDS, "replication_factor": 1}]
    event = ControllerEvent(
        "CreateTopics", {"topics": topics}, RequestContext(principal="User:admin")
    )
    return event if queued_ms is None else event.queued(queued_ms)


def committed_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("committed ")]


def test_a_large_commit_logs_how_long_its_oldest_event_was_queued(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    epoch = runtime.handle(
        ControllerEvent("BrokerRegistration", registration_body(1, cluster_id))
    ).response["broker_epoch"]
    beat = {"broker_id": 1, "broker_epoch": epoch, "current_metadata_offset": 10**9}
    runtime.handle(ControllerEvent("BrokerHeartbeat", beat))

    with caplog.at_level(logging.INFO, logger="controlplane.controller"):
        answer = runtime.handle(create("waited", queued_ms=now_ms() - 250))
        assert answer.response["topics"][0]["error_code"] == 0, answer.response
        (line,) = committed_lines(caplog)
    waited = re.search(r"\((?:queued (\d+) ms before the controller took it; )", line)
    assert waited is not None, line
    assert 250 <= int(waited.group(1)) < 60_000

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="controlplane.controller"):
        runtime.handle(create("unqueued", queued_ms=None))  # the controller's own, say
        (line,) = committed_lines(caplog)
    assert "queued" not in line
    assert re.search(r"committed \d+ records of 1 event\(s\): handled in \d+ ms", line)
