"""Issue 33: `verify_metadata` on a live cluster. A 10,000-partition log dir failure, then most
brokers fenced at once (as after a lagging timer): while verify replays the log, the
controller commits the fencing. Verify read the tables after the log, so every partition and
broker the commit changed came out as the log and the tables disagreeing (83,678 and 139,656
"problems" in the issue's run), although each commit wrote both. It must read one snapshot."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from controlplane.runtime import replay
from controlplane.runtime.controller import get_runtime
from tests.conftest import need_postgres
from tests.integration.commit_driver import Driver

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

BROKERS = 60
PARTITIONS = 10_000


@pytest.fixture
def cluster() -> Driver:
    need_postgres()
    driver = Driver(get_runtime(), BROKERS)
    driver.register_all()
    driver.create_topic_led_by("orders", leader=1, partitions=PARTITIONS)
    return driver


def test_verify_reads_one_snapshot_while_the_controller_commits_mass_fencing(
    cluster: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.alter_replica_state(1, {"orders": list(range(PARTITIONS))})
    fenced: list[dict[str, Any]] = []
    replay_log = replay.image_from_log

    def log_replayed_then_the_controller_commits(through: int | None = None) -> Any:
        replayed = replay_log(through=through)

        # The fencing commit of 54 brokers lands after the log was read, before the tables
        # are (its own thread and connection, as the controller process's).
        def fence_most_brokers() -> None:
            try:
                fenced.append(cluster.lapse(range(6, 60)))
            finally:
                connection.close()

        thread = threading.Thread(target=fence_most_brokers)
        thread.start()
        thread.join(timeout=120)
        return replayed

    monkeypatch.setattr(replay, "image_from_log", log_replayed_then_the_controller_commits)
    problems = replay.metadata_verify()
    assert fenced and len(fenced[0]["fenced_brokers"]) == 54  # it did commit meanwhile
    assert problems == []
    monkeypatch.setattr(replay, "image_from_log", replay_log)
    assert replay.metadata_verify() == []  # and after it, the newer state agrees too
