"""Read-your-writes where a write was answered once the log held it: the relaying process's
table reads wait for the tables (controlplane.runtime.tables_barrier), on the real database."""

from __future__ import annotations

import threading
import time

import pytest

from controlplane.models import Cluster
from controlplane.runtime.conversation import AuditEnvelope, ControllerEvent, Forwarding
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.notifier import notifier
from controlplane.runtime.tables_barrier import TablesBarrier

pytestmark = pytest.mark.django_db


def ahead_of_everything() -> int:
    """An offset neither the tables' row nor this process's notices have reached."""
    cluster_get_or_create()
    return max(notifier.tables_offset, Cluster.objects.get(pk=1).projected_offset) + 1000


def test_with_nothing_relayed_ahead_a_read_never_waits_nor_asks_the_database(
    django_assert_num_queries: object,
) -> None:
    with django_assert_num_queries(0):  # type: ignore[operator]
        assert TablesBarrier().wait(longest_s=5)


def test_a_read_waits_for_the_tables_notice_of_the_offset_relayed() -> None:
    barrier, target = TablesBarrier(), ahead_of_everything()
    barrier.note(target - 1)
    barrier.note(target)  # the highest one relayed counts
    threading.Timer(0.3, notifier.bump_tables, args=(target - 1,)).start()
    threading.Timer(0.6, notifier.bump_tables, args=(target,)).start()
    began = time.monotonic()
    assert barrier.wait(longest_s=10)
    assert time.monotonic() - began >= 0.55  # not at the lower offset's notice
    assert barrier.wait(longest_s=0)  # reached: no wait again


def test_a_notice_this_process_missed_is_read_from_the_cluster_row() -> None:
    barrier, target = TablesBarrier(), ahead_of_everything()
    barrier.note(target)
    Cluster.objects.filter(pk=1).update(projected_offset=target)
    assert barrier.wait(longest_s=10)
    assert notifier.tables_offset >= target


def test_tables_that_never_follow_hold_a_read_only_so_long_and_once() -> None:
    barrier, target = TablesBarrier(), ahead_of_everything()
    barrier.note(target)
    began = time.monotonic()
    assert not barrier.wait(longest_s=0.3)
    assert 0.3 <= time.monotonic() - began < 5
    assert barrier.relayed == -1  # dropped: the next read goes on at once
    assert barrier.wait(longest_s=0)


BROKER = Forwarding("User:broker", "10.0.0.1", 1, kafka_protocol=True)


@pytest.mark.parametrize(
    ("forwarding", "once_logged"),
    [
        (BROKER, True),
        (Forwarding("User:broker", "10.0.0.1", 1), False),  # the REST Envelope
        (None, False),  # the REST API, the client listener
    ],
)
def test_only_writes_a_broker_forwarded_in_kafkas_protocol_are_answered_once_logged(
    forwarding: Forwarding | None, once_logged: bool
) -> None:
    audit = AuditEnvelope("CreateTopics", 0, forwarding)
    assert ControllerEvent("CreateTopics", audit=audit).answered_once_logged is once_logged
    assert not ControllerEvent("CreateTopics").answered_once_logged  # nothing to audit
    wired = ControllerEvent.from_wire(ControllerEvent("CreateTopics", audit=audit).to_wire())
    assert wired.answered_once_logged is once_logged  # through the request channel
