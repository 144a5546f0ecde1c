"""The slices of a bounded change commit their log one after the other; their tables'
transactions wait for the first commit that is not deferred (the last slice's, an admin
write's), which writes them in order before its own. The brokers follow the log, so they get
the whole change without waiting for the tables; the tables trail the log meanwhile, and a
controller that dies then loses nothing: the next one catches them up from the log."""

from __future__ import annotations

import pytest
from django.test import override_settings

from brokers.models import Broker
from controlplane.controller.errors import ApiError
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import ConfigRecord
from controlplane.models import MetadataRecord
from controlplane.runtime.controller import ControllerRuntime, get_runtime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.metadata_log import log_commit
from controlplane.runtime.notifier import notifier
from controlplane.runtime.replay import image_from_log, metadata_verify
from tests.api.test_tables_follow_the_log import offsets, registration

pytestmark = pytest.mark.django_db


def heartbeat(broker_id: int, epoch: int) -> ControllerEvent:
    body = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 10**9}
    return ControllerEvent("BrokerHeartbeat", body)


def in_tables() -> set[int]:
    return set(Broker.objects.values_list("broker_id", flat=True))


def log_notices(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """(the notice's offset, the log's end, the tables' offset) at each log notice: what the
    brokers are woken on, and where the tables stood then."""
    seen: list[tuple[int, int, int]] = []
    publish = notifier.publish

    def noted(offset: int) -> None:
        seen.append((offset, *offsets()))
        publish(offset)

    monkeypatch.setattr(notifier, "publish", noted)
    return seen


def assert_tables_agree_with_the_log(runtime: ControllerRuntime) -> None:
    assert offsets()[0] == offsets()[1]
    assert metadata_verify() == []
    replayed, gaps = image_from_log()
    assert not gaps and runtime.image is not None
    assert replayed.as_comparable() == runtime.image.as_comparable()


@pytest.mark.django_db(transaction=True)
def test_the_slices_of_a_change_wake_the_brokers_and_their_tables_follow_with_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    start = offsets()[0]
    seen = log_notices(monkeypatch)
    for broker_id in (2, 3, 4):
        answer = runtime.handle_batch([registration(broker_id)], more_follows=True)[0]
        assert answer.error_code == 0 and answer.ahead_of_tables
        # In the log (the brokers have it), not yet in the tables.
        assert answer.offsets is not None
        assert MetadataRecord.objects.filter(offset=answer.offsets[1]).exists()
        assert broker_id not in in_tables()
    assert [tables for _, _, tables in seen] == [start, start, start]
    assert [end for _, end, _ in seen] == [notice for notice, _, _ in seen]
    assert len(runtime.tables_behind) == 3

    last = runtime.handle_batch([registration(5)])[0]  # the last slice: nothing follows
    assert last.error_code == 0 and not last.ahead_of_tables
    assert in_tables() >= {1, 2, 3, 4, 5}
    assert not runtime.tables_behind
    assert_tables_agree_with_the_log(runtime)


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_between_two_slices_leaves_the_tables_behind_a_registration_brings_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = get_runtime()
    epoch = runtime.handle(registration(1)).response["broker_epoch"]
    runtime.handle_batch([registration(2)], more_follows=True)
    # The broker's heartbeat unfences it (a record), answered from the log: deferred too.
    beat = runtime.handle(heartbeat(1, epoch))
    assert beat.error_code == 0 and beat.offsets is not None and beat.ahead_of_tables
    assert len(runtime.tables_behind) == 2
    assert Broker.objects.get(pk=1).fenced  # the tables trail
    # A registration is answered from the tables: every commit before it is written first.
    registered = runtime.handle(registration(3))
    assert registered.error_code == 0 and not registered.ahead_of_tables
    assert not Broker.objects.get(pk=1).fenced
    assert in_tables() >= {1, 2, 3}
    assert_tables_agree_with_the_log(runtime)


@pytest.mark.django_db(transaction=True)
@override_settings(CP_TABLES_BEHIND_IDLE_MS=60_000)
def test_once_the_last_slice_came_the_timer_writes_the_tables_one_commit_per_turn() -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    for broker_id in (2, 3):
        runtime.handle_batch([registration(broker_id)], more_follows=True)
        assert runtime.write_tables_behind() is False  # another slice is promised: they wait
        assert in_tables() == {1}
    # The last slice too, when its sender reads nothing of the tables for its answer.
    last = runtime.handle_batch([registration(4)], answered_from_the_log=True)[0]
    assert last.error_code == 0 and last.ahead_of_tables
    assert len(runtime.tables_behind) == 3 and in_tables() == {1}
    assert runtime.write_tables_behind() is True  # one written, more left
    assert in_tables() == {1, 2}
    runtime.tick()  # the rest
    assert not runtime.tables_behind
    assert in_tables() == {1, 2, 3, 4}
    assert_tables_agree_with_the_log(runtime)


@pytest.mark.django_db(transaction=True)
@override_settings(CP_TABLES_BEHIND_IDLE_MS=60_000, CP_TABLES_BEHIND_MAX_RECORDS=1)
def test_slices_still_coming_wait_for_the_timer_only_while_few_records_wait() -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    runtime.handle_batch([registration(2)], more_follows=True)
    assert runtime.write_tables_behind() is False  # one record waits, the slices go on
    assert runtime.tables_behind.records == 1
    runtime.handle_batch([registration(3)], more_follows=True)
    assert runtime.write_tables_behind() is False  # two were more than one: the oldest written
    assert in_tables() == {1, 2} and runtime.tables_behind.records == 1
    runtime.handle(registration(4))
    assert not runtime.tables_behind
    assert_tables_agree_with_the_log(runtime)


@pytest.mark.django_db(transaction=True)
@override_settings(CP_TABLES_BEHIND_IDLE_MS=0)
def test_a_promised_slice_that_does_not_come_leaves_the_tables_to_the_timer() -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    runtime.handle_batch([registration(2)], more_follows=True)  # its sender stops after it
    assert runtime.write_tables_behind() is False  # written: none left
    assert in_tables() == {1, 2}
    assert_tables_agree_with_the_log(runtime)


@pytest.mark.django_db(transaction=True)
def test_a_controller_that_loses_its_lease_with_tables_behind_loses_nothing() -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    for broker_id in (2, 3):
        runtime.handle_batch([registration(broker_id)], more_follows=True)
    last, projected = offsets()
    assert projected < last
    assert metadata_verify() == []  # the tables agree with the log through their own offset
    runtime.resign()  # as a controller that died between two slices: its statements are gone
    assert not runtime.tables_behind
    # The next activation catches the tables up from the log before it commits anything.
    assert runtime.handle(registration(4)).error_code == 0
    assert in_tables() >= {1, 2, 3, 4}
    assert_tables_agree_with_the_log(runtime)


@pytest.mark.django_db(transaction=True)
def test_the_log_s_fence_expects_the_tables_where_the_controller_left_them() -> None:
    """A commit that does not know of the tables left behind (another controller's view) is
    refused, nothing written; the controller that left them commits on."""
    runtime = get_runtime()
    runtime.handle(registration(1))
    runtime.handle_batch([registration(2)], more_follows=True)
    lease, image = runtime.lease, runtime.image
    assert lease is not None and image is not None
    last, projected = offsets()
    delta = MetadataDelta(image)
    delta.replay(ConfigRecord("BROKER", "", "log.retention.ms", "1000"))
    with pytest.raises(ApiError) as refused:
        log_commit(lease=lease, delta=delta, writes=[])
    assert refused.value.error.name == "NOT_CONTROLLER"
    assert f"not at {last} as this controller left them" in (refused.value.message or "")
    assert offsets() == (last, projected)
    assert not MetadataRecord.objects.filter(offset=last + 1).exists()
    assert runtime.handle(registration(3)).error_code == 0
    assert_tables_agree_with_the_log(runtime)
