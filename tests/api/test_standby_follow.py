"""A standby controller's loop (controlplane.runtime.standby_loop.wait_until_active) on the real
database: woken by each commit's notice it follows the log as it is written, without a notice it
still catches up, and where it stands is what `kafka_controller_standby_lag_records` reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from controlplane.models import Cluster, ControllerNode
from controlplane.runtime import notifier as notifier_module
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.lease import now_ms
from controlplane.runtime.snapshots import metadata_snapshot_create
from controlplane.runtime.standby import (
    ACTIVE,
    DIVERGED,
    MATCH,
    PENDING,
    STANDBY,
    controller_node_report,
    standby_lag_records,
)
from controlplane.runtime.standby_loop import wait_until_active
from devtools.stack import wait_for
from tests.api.test_standby import some_writes, standby_runtime, tables_image


class Following:
    """A standby's loop in a thread of its own, as run_controller runs it before it is active."""

    def __init__(self, runtime: ControllerRuntime) -> None:
        self.runtime = runtime
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.failure: BaseException | None = None

    def _run(self) -> None:
        try:
            wait_until_active(self.runtime, self.stop)
        except SystemExit:
            pass  # stopped
        except BaseException as failure:  # surfaced by the test, not lost in the thread
            self.failure = failure
        finally:
            from django.db import connection

            connection.close()

    def caught_up(self) -> bool:
        assert self.failure is None, self.failure
        head = Cluster.objects.get(pk=1).last_offset
        return self.runtime.standby.last_offset == head


@pytest.fixture
def following() -> Iterator[Following]:
    get_runtime().ensure_active()  # the lease is the active's: the standby only follows
    loop = Following(standby_runtime())
    loop.thread.start()
    yield loop
    loop.stop.set()
    loop.thread.join(timeout=10)
    assert not loop.thread.is_alive()


@pytest.mark.django_db(transaction=True)
def test_a_standby_follows_each_commit_and_says_where_it_stands(following):
    active = get_runtime()
    some_writes(active, 0, "orders")
    wait_for(following.caught_up, 10, "the standby to replay the commits")
    some_writes(active, 10, "payments")
    wait_for(following.caught_up, 10, "the standby to replay the next commits")
    assert following.runtime.standby.image is not None
    assert following.runtime.standby.image.as_comparable() == tables_image()
    assert following.runtime.lease is None  # it never took the lease from the active one

    def reported_head() -> bool:
        row = ControllerNode.objects.filter(node_id="standby").first()
        return row is not None and row.last_offset == Cluster.objects.get(pk=1).last_offset

    wait_for(reported_head, 10, "the standby to report its offset")
    row = ControllerNode.objects.get(node_id="standby")
    assert (row.role, row.controller_id) == (STANDBY, 3001)
    assert standby_lag_records(live_ms=60_000) == 0


@pytest.mark.django_db(transaction=True)
def test_a_standby_that_misses_the_notices_still_catches_up(following, monkeypatch):
    monkeypatch.setattr(notifier_module.notifier, "publish", lambda last_offset: None)
    monkeypatch.setattr(notifier_module.notifier, "bump", lambda: None)
    active = get_runtime()
    some_writes(active, 0, "orders")
    some_writes(active, 10, "payments")
    # No notice woke it: it looks again within a quarter lease (at most a second) by itself.
    wait_for(following.caught_up, 10, "the standby to catch up without notices")
    assert following.runtime.standby.image is not None
    assert following.runtime.standby.image.as_comparable() == tables_image()


@pytest.mark.django_db
def test_the_lag_gauge_counts_the_furthest_behind_live_standby(client):
    some_writes(get_runtime(), 0, "orders")
    head = Cluster.objects.get(pk=1).last_offset
    assert head > 10
    assert standby_lag_records(live_ms=60_000) == -1  # no standby follows
    controller_node_report(node_id="a", controller_id=1, role=STANDBY, last_offset=head - 3)
    controller_node_report(node_id="b", controller_id=2, role=STANDBY, last_offset=head - 10)
    controller_node_report(node_id="c", controller_id=3, role=ACTIVE, last_offset=0)
    assert standby_lag_records(live_ms=60_000) == 10  # the furthest behind; never the active
    # A standby not heard for the live window has stopped: it is no standby to count on.
    ControllerNode.objects.filter(node_id="b").update(updated_ms=now_ms() - 600_000)
    assert standby_lag_records(live_ms=60_000) == 3
    # The report is an upsert: a standby that took over is no longer counted.
    controller_node_report(node_id="a", controller_id=1, role=ACTIVE, last_offset=head)
    assert standby_lag_records(live_ms=60_000) == -1
    controller_node_report(node_id="d", controller_id=4, role=STANDBY, last_offset=head - 2)
    text = client.get("/metrics").content.decode()
    assert "\nkafka_controller_standby_lag_records 2.0\n" in text


@pytest.mark.django_db
def test_taking_over_reports_the_new_role():
    active = get_runtime()
    some_writes(active, 0, "orders")
    standby = standby_runtime()
    standby.follow_log()
    assert ControllerNode.objects.get(node_id="standby").role == STANDBY
    active.resign()
    standby.ensure_active()
    row = ControllerNode.objects.get(node_id="standby")
    assert (row.role, row.last_offset) == (ACTIVE, Cluster.objects.get(pk=1).last_offset)


def checkpoint_row() -> tuple[int, str]:
    row = ControllerNode.objects.get(node_id="standby")
    return row.checkpoint_offset, row.checkpoint_verdict


@pytest.mark.django_db
@pytest.mark.parametrize("diverged", [False, True])
def test_the_next_snapshot_judges_a_standbys_checkpoint(diverged):
    active = get_runtime()
    some_writes(active, 0, "orders")
    assert metadata_snapshot_create() is not None
    standby = standby_runtime()
    standby.standby.follow()
    image = standby.standby.image
    assert image is not None
    if diverged:  # a standby whose image is not the log's (a bug, a bit flipped in memory)
        image.configs[("TOPIC", "orders")]["retention.ms"] = "1"
    # Caught up, after a snapshot it has not checked against: it takes a checkpoint.
    standby.standby.report(node_id="standby", controller_id=3001, caught_up=True)
    checked_at = image.last_offset
    assert checkpoint_row() == (checked_at, PENDING)
    some_writes(active, 10, "payments")
    standby.follow_log()  # follows on; the checkpoint stays where it was taken
    assert image.last_offset > checked_at
    assert checkpoint_row() == (checked_at, PENDING)
    # The next snapshot's creation replays the log through the checkpoint and judges it.
    assert metadata_snapshot_create() is not None
    assert checkpoint_row()[1] == (DIVERGED if diverged else MATCH)
    standby.standby.report(node_id="standby", controller_id=3001, caught_up=True)
    if diverged:  # it loads again rather than ever take over with that image
        assert standby.standby.image is None
        standby.follow_log()
    else:
        assert standby.standby.image is image
    assert standby.standby.image is not None
    assert standby.standby.image.as_comparable() == tables_image()
