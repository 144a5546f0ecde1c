"""Log replay equals state after every commit, on the real commit path (issue 33): PostgreSQL,
the write-behind writer, binary COPY and staged updates (changes of 500 partitions or more),
driven by random large batches of AlterReplicaState, fencing, unfencing, preferred elections,
both in one batch, a standby taking over between them, commits whose tables' transaction
failed after their log's (the tables trail the log until the controller catches them up on its
next event), and a report's slices whose tables wait for the timer or the next commit.
`metadata_verify` (one consistent snapshot, through the tables' offset) must find nothing after
each."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from hypothesis import HealthCheck, Phase, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from controlplane.models import Cluster
from controlplane.runtime import metadata_log
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.replay import metadata_verify
from controlplane.runtime.sessions import session_store
from tests.conftest import need_postgres
from tests.integration.commit_driver import Driver

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

BROKERS = 10

brokers = st.integers(min_value=0, max_value=BROKERS - 1)
step = st.one_of(
    st.tuples(st.just("topic"), brokers, st.integers(min_value=500, max_value=1500)),
    st.tuples(st.just("alter"), brokers, st.floats(min_value=0.1, max_value=1.0)),
    st.tuples(st.just("fence"), st.sets(brokers, min_size=1, max_size=BROKERS - 2)),
    st.tuples(st.just("unfence")),
    st.tuples(st.just("elect")),
    st.tuples(st.just("alter_and_fence"), brokers, st.sets(brokers, max_size=BROKERS - 2)),
    st.tuples(st.just("takeover")),
    st.tuples(st.just("tables_lost"), st.integers(min_value=1, max_value=600)),
    # A report in slices whose tables wait (the last one's too, or not), then perhaps a
    # heartbeat between slices; the timer writes them later, or the next step's commit does.
    st.tuples(st.just("slices"), brokers, st.integers(min_value=2, max_value=4), st.booleans()),
    st.tuples(st.just("timer_writes_the_tables")),
)


def tables_lost(driver: Driver, partitions: int) -> None:
    """A topic's commit reaches the log and not the tables (its tables' transaction fails):
    the answer stands, the tables trail the log, and the controller's next event (activating
    it again) catches them up from the log before it commits anything."""

    def breaks() -> None:
        raise RuntimeError("the tables' transaction broke")

    def failing(*args: Any) -> Iterator[Any]:
        yield breaks  # run in the tables' transaction, whenever it was built

    with mock.patch.object(metadata_log, "prepare_delta", failing):
        name = f"lost-{uuid.uuid4().hex[:8]}"
        created = driver.create_topic_led_by(name, 0, partitions, check=False)
    cluster = Cluster.objects.get(pk=1)
    if created:  # answered as applied: in the log, not yet in the tables
        assert cluster.projected_offset < cluster.last_offset
        assert driver.runtime.image is None
    assert metadata_verify() == []  # through the tables' offset
    driver.runtime.ensure_active()
    cluster = Cluster.objects.get(pk=1)
    assert cluster.projected_offset == cluster.last_offset


def standby_takes_over(driver: Driver) -> None:
    """The active controller resigns; another, which followed the log as a standby, takes
    over with its image (only the records it had not seen applied)."""
    standby = ControllerRuntime(
        node_id=f"standby-{uuid.uuid4().hex[:6]}",
        controller_id=2,
        lease_ms=settings.CP_LEASE_MS,
        session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
        sessions=session_store(),
    )
    standby.follow_log()
    driver.runtime.resign()
    standby.ensure_active()
    driver.runtime = standby


def run(driver: Driver, action: tuple[Any, ...]) -> None:
    kind = action[0]
    if kind == "topic":
        driver.create_topic_led_by(f"t-{uuid.uuid4().hex[:8]}", action[1], action[2], check=False)
    elif kind == "alter" and driver.topics:
        name, count = next(iter(driver.topics.items()))
        driver.handle(*driver.alter_replica_state_event(action[1], _some(name, count, action[2])))
    elif kind == "fence":
        driver.lapse(sorted(action[1]))
    elif kind == "unfence":
        driver.unfence(range(BROKERS))
    elif kind == "elect":
        driver.elect_preferred()
    elif kind == "alter_and_fence" and driver.topics:
        name, count = list(driver.topics.items())[-1]
        driver.lapse_sessions(sorted(action[2]))
        driver.handle_batch(
            [
                driver.alter_replica_state_event(action[1], _some(name, count, 1.0)),
                ("FenceStaleBrokers", {}),
            ]
        )
    elif kind == "takeover":
        standby_takes_over(driver)
    elif kind == "tables_lost":
        tables_lost(driver, action[1])
    elif kind == "slices" and driver.topics:
        slices(driver, *action[1:])
    elif kind == "timer_writes_the_tables":
        driver.runtime.write_tables_behind(all_of_them=True)
        cluster = Cluster.objects.get(pk=1)
        assert cluster.projected_offset == cluster.last_offset


def slices(driver: Driver, broker_id: int, count: int, last_waits: bool) -> None:
    """A report of a topic's partitions in `count` slices, each left to the log alone while
    another follows (and the last too when `last_waits`), a heartbeat of every broker between
    the first two."""
    name, partitions = list(driver.topics.items())[-1]
    size = max(1, partitions // count)
    for number in range(count):
        chosen = list(range(number * size, min(partitions, (number + 1) * size)))
        more = number < count - 1
        driver.handle_batch(
            [driver.alter_replica_state_event(broker_id, {name: chosen})],
            more_follows=more,
            answered_from_the_log=more or last_waits,
        )
        if number == 0:
            driver.unfence(range(BROKERS))  # heartbeats: answered from the log meanwhile
        assert metadata_verify() == []  # through the tables' offset, wherever they stand


# One cluster for the test's examples (the database is emptied after the test, not after each
# example): each example goes on from where the one before left it, and a controller that took
# over stays the active one.
_drivers: dict[int, Driver] = {}


def _driver() -> Driver:
    runtime = get_runtime()  # a new one for every test (tests/conftest.py)
    if id(runtime) not in _drivers:
        _drivers.clear()
        _drivers[id(runtime)] = Driver(runtime, BROKERS)
    return _drivers[id(runtime)]


def _some(name: str, count: int, fraction: float) -> dict[str, list[int]]:
    return {name: list(range(max(1, int(count * fraction))))}


@hypothesis_settings(
    max_examples=10,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=2, max_size=6))
@example(steps=[("tables_lost", 600), ("alter", 1, 0.5), ("takeover",), ("tables_lost", 1)])
@example(steps=[("slices", 1, 3, True), ("takeover",), ("slices", 2, 2, True), ("fence", {3})])
@example(steps=[("slices", 1, 2, True), ("timer_writes_the_tables",), ("slices", 2, 3, False)])
def test_log_replay_equals_the_state_tables_after_every_commit(steps: list[Any]) -> None:
    need_postgres()
    driver = _driver()
    if not driver.topics:
        driver.runtime.ensure_active()
        driver.register_all()
        driver.create_topic_led_by("base", leader=0, partitions=1000)
    assert metadata_verify() == []
    for action in steps:
        run(driver, action)
        assert metadata_verify() == [], action
