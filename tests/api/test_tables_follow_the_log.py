"""A commit's log first, then its tables: the brokers are woken once the log holds the records,
and the state tables follow in a transaction of their own; tables left behind (the second
transaction failed, or the controller died between the two) are caught up from the log by the
next controller to take over, before it commits anything."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from brokers.models import Broker
from controlplane.authz import acl_cache
from controlplane.controller.errors import ApiError
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import ConfigRecord
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime import metadata_log
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.metadata_log import log_commit
from controlplane.runtime.notifier import notifier
from controlplane.runtime.replay import image_from_log, metadata_verify
from controlplane.runtime.standby import snapshot_image
from tests.api.test_configs_api import acl
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db


def registration(broker_id: int) -> ControllerEvent:
    return ControllerEvent(
        "BrokerRegistration",
        registration_body(broker_id, cluster_get_or_create().cluster_id),
        RequestContext(principal="User:test", request_id=str(uuid.uuid4())),
    )


def offsets() -> tuple[int, int]:
    cluster = Cluster.objects.get(pk=1)
    return cluster.last_offset, cluster.projected_offset


def fail_the_tables_once(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next commit's tables' transaction fails (its first statement raises on the server's
    turn, whenever it was built)."""
    failed: list[int] = []
    prepare = metadata_log.prepare_delta

    def breaks() -> None:
        raise RuntimeError("the tables' transaction broke")

    def failing(delta: MetadataDelta, *args: Any) -> Iterator[Any]:
        if not failed:
            failed.append(delta.last_offset)
            yield breaks
        yield from prepare(delta, *args)

    monkeypatch.setattr(metadata_log, "prepare_delta", failing)
    return failed


@pytest.mark.django_db(transaction=True)
def test_the_brokers_are_woken_when_the_log_committed_before_the_tables_follow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    seen: list[tuple[int, int, int]] = []
    publish = notifier.publish

    def noted(offset: int) -> None:
        seen.append((offset, *offsets()))
        publish(offset)

    monkeypatch.setattr(notifier, "publish", noted)
    before = offsets()[0]
    answer = runtime.handle(registration(2))
    assert answer.error_code == 0
    end = offsets()[0]
    # The notice named the log's new end while the tables still stood at the commit's base.
    assert seen == [(end, end, before)]
    assert offsets() == (end, end)  # and then they followed
    assert Broker.objects.filter(pk=2).exists()


@pytest.mark.django_db(transaction=True)
def test_what_is_built_from_the_tables_between_the_two_notices_is_built_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A web thread woken by the log's notice (each time the log's generation moves) reads the
    ACLs before the tables follow; the tables' notice, sent once they did, makes the next read
    see the new binding."""
    runtime = get_runtime()
    acl_cache.clear()
    assert len(acl_cache.index()) == 0
    early: list[int] = []
    bump = notifier.bump

    def read_on_the_log_notice() -> None:
        bump()
        early.append(len(acl_cache.index()))  # the tables still stand before the commit

    monkeypatch.setattr(notifier, "bump", read_on_the_log_notice)
    creation = acl("TOPIC", "orders", "READ")
    answer = runtime.handle(
        ControllerEvent(
            "CreateAcls", {"creations": [creation]}, RequestContext(principal="User:admin")
        )
    )
    assert answer.response["results"] == [{"error_code": 0, "error_message": None}]
    assert early and set(early) == {0}
    assert len(acl_cache.index()) == 1


def test_tables_that_could_not_follow_are_caught_up_by_the_next_activation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    failed = fail_the_tables_once(monkeypatch)
    answer = runtime.handle(registration(2))
    # The log holds the registration: it is answered as applied, never "not applied".
    assert failed and answer.error_code == 0
    assert (
        answer.offsets is not None
        and MetadataRecord.objects.filter(offset=answer.offsets[0]).exists()
    )
    last, projected = offsets()
    assert projected < last == answer.offsets[1]
    assert not Broker.objects.filter(pk=2).exists()  # the tables trail the log
    assert runtime.image is None  # the controller let its image go
    # The tables agree with the log through their own offset, and a cold image stands there.
    assert metadata_verify() == []
    cold = snapshot_image()
    assert cold is not None and cold.last_offset == projected
    # The next event activates the controller again: it catches the tables up first.
    third = runtime.handle(registration(3))
    assert third.error_code == 0
    assert offsets()[1] == offsets()[0]
    assert set(Broker.objects.values_list("broker_id", flat=True)) >= {1, 2, 3}
    assert metadata_verify() == []
    replayed, gaps = image_from_log()
    assert not gaps and runtime.image is not None
    assert replayed.as_comparable() == runtime.image.as_comparable()


def test_the_log_refuses_a_commit_while_the_tables_trail_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))
    lease, image = runtime.lease, runtime.image
    assert lease is not None and image is not None
    fail_the_tables_once(monkeypatch)
    runtime.handle(registration(2))  # in the log, not in the tables
    last, projected = offsets()
    # A controller still holding an image at the log's end may not commit past tables that
    # trail it: nothing is written.
    image.last_offset = last
    delta = MetadataDelta(image)
    delta.replay(ConfigRecord("BROKER", "", "log.retention.ms", "1000"))
    with pytest.raises(ApiError) as refused:
        log_commit(lease=lease, delta=delta, writes=[])
    assert refused.value.error.name == "NOT_CONTROLLER"
    assert f"not at {last} as this controller left them" in (refused.value.message or "")
    assert offsets() == (last, projected)
    assert not MetadataRecord.objects.filter(offset=last + 1).exists()


@pytest.mark.parametrize("more_follows", [False, True])
def test_the_log_s_transaction_builds_the_tables_statements_only_when_more_follows(
    monkeypatch: pytest.MonkeyPatch, more_follows: bool
) -> None:
    """The log's transaction is what the brokers wait for: nothing is built beside it unless
    another slice of the same change waits for the whole commit."""
    runtime = get_runtime()
    runtime.handle(registration(1))
    built_while: list[bool] = []
    build_while = metadata_log._Prebuilt.build_while

    def observed(tables: Any, busy: Any) -> None:
        built_while.append(True)
        build_while(tables, busy)

    monkeypatch.setattr(metadata_log._Prebuilt, "build_while", observed)
    answer = runtime.handle_batch([registration(2)], more_follows=more_follows)[0]
    assert answer.error_code == 0
    assert built_while == ([True] if more_follows else [])
    # A slice others follow leaves its tables for the next commit that is not deferred.
    assert Broker.objects.filter(pk=2).exists() is not more_follows
    runtime.handle(registration(3))
    assert offsets()[0] == offsets()[1]
    assert Broker.objects.filter(pk__in=[2, 3]).count() == 2


def test_the_tables_statements_built_while_the_log_is_written_run_once_in_order() -> None:
    ran: list[int] = []
    statements = (lambda i=i: ran.append(i) for i in range(5))
    tables = metadata_log._Prebuilt(statements)
    turns = iter([True, True, False])
    tables.build_while(lambda: next(turns))  # the server busy with two turns' worth
    tables.build_while(lambda: True)  # busy to the end: the rest are built too
    for write in tables:
        write()
    assert ran == [0, 1, 2, 3, 4]
    assert list(tables) == []  # each built statement is handed over once


def test_a_long_catch_up_of_the_tables_leaves_its_controller_a_whole_lease(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tables' catch-up of a large commit may run for seconds: like a commit's, its
    transaction renews the lease as it ends (the clock moved 10 s on here), so the controller
    that took over keeps its lease and epoch instead of finding it lapsed at its next event."""
    runtime = get_runtime()
    runtime.handle(registration(1))
    failed = fail_the_tables_once(monkeypatch)
    assert runtime.handle(registration(2)).error_code == 0
    assert failed
    assert runtime.image is None  # the tables trail the log: caught up on the next activation
    real = metadata_log.now_ms
    monkeypatch.setattr(metadata_log, "now_ms", lambda: real() + 10_000)
    with CaptureQueriesContext(connection) as queries:
        assert runtime.handle(registration(3)).error_code == 0
    renewals = [q["sql"] for q in queries if q["sql"].startswith("UPDATE cp_cluster SET lease_")]
    assert len(renewals) == 1, "renewed at the end of the catch-up's transaction"
    assert offsets()[1] == offsets()[0]
    assert metadata_verify() == []
