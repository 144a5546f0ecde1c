"""The lease kept while one batch runs longer than a lease (controlplane.runtime.lease_keeper),
on the real database and the real controller: such a batch commits instead of finding its lease
lapsed; the keeper never takes back a lease another controller took over, and keeps one batch's
lease for a bounded time only."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction

from brokers.models import Broker
from controlplane.models import Cluster
from controlplane.runtime import lease_keeper
from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.lease import Lease, lease_renew, lease_renew_between_commits, now_ms
from controlplane.runtime.lease_keeper import LeaseKeeper
from controlplane.runtime.sessions import session_store
from tests.api.test_controller_runtime import registration_event

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_MS = 300


def short_leased() -> ControllerRuntime:
    runtime = ControllerRuntime(
        node_id="keeper-test",
        controller_id=1,
        lease_ms=LEASE_MS,
        session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
        sessions=session_store(),
    )
    assert runtime.handle(registration_event(1)).error_code == 0  # active, with an image
    return runtime


def lease_row() -> tuple[str, int, int]:
    cluster = Cluster.objects.get(pk=1)
    return cluster.lease_holder, cluster.controller_epoch, cluster.lease_expires_ms


def renewing(lease_ms: int = LEASE_MS) -> LeaseKeeper:
    return LeaseKeeper(
        lease_ms, lambda lease: lease_renew_between_commits(lease=lease, lease_ms=lease_ms)
    )


def handled_slowly(runtime: ControllerRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime's handler runs for three leases and a half before it handles (as one report
    naming a million partitions does)."""
    handle = runtime._run

    def slow_handler(*args: Any) -> Any:
        time.sleep(3.5 * LEASE_MS / 1000)
        return handle(*args)

    monkeypatch.setattr(runtime, "_run", slow_handler)


def test_a_batch_handled_for_longer_than_its_lease_commits(monkeypatch: pytest.MonkeyPatch):
    """The lease is renewed while the handler runs, and the batch commits and is answered."""
    runtime = short_leased()
    handled_slowly(runtime, monkeypatch)
    answer = runtime.handle(registration_event(2))
    assert answer.error_code == 0, answer.response
    assert Broker.objects.filter(pk=2).exists()
    assert runtime.lease_keeper.renewals >= 3
    assert runtime.is_active()


def test_without_the_keeper_the_same_batch_finds_its_lease_lapsed(
    monkeypatch: pytest.MonkeyPatch,
):
    """What the keeper is for: the same slow batch, with nothing renewing its lease, is
    refused whole (NOT_CONTROLLER) and writes nothing."""
    runtime = short_leased()
    handled_slowly(runtime, monkeypatch)
    monkeypatch.setattr(runtime.lease_keeper, "interval_s", 3600.0)  # never due
    answer = runtime.handle(registration_event(2))
    assert answer.response["error_code"] == 41, answer.response  # NOT_CONTROLLER
    assert "lapsed" in answer.response["error_message"]
    assert not Broker.objects.filter(pk=2).exists()


def test_the_keeper_never_takes_back_a_lease_another_controller_took_over():
    runtime = short_leased()
    lease = runtime.lease
    assert lease is not None
    keeper = renewing()
    taken_over = now_ms() + 60_000
    with keeper.keeping(lease):
        Cluster.objects.filter(pk=1).update(
            lease_holder="another", controller_epoch=lease.epoch + 1, lease_expires_ms=taken_over
        )
        time.sleep(3 * LEASE_MS / 1000)
    assert lease_row() == ("another", lease.epoch + 1, taken_over)
    assert keeper.renewals == 0


def test_one_batch_keeps_its_lease_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch):
    """A handler stuck in a loop does not hold the cluster's only writer for ever: after
    MAX_KEPT_LEASES leases of one batch, the lease is left to lapse."""
    monkeypatch.setattr(lease_keeper, "MAX_KEPT_LEASES", 2)
    runtime = short_leased()
    lease = runtime.lease
    assert lease is not None
    keeper = renewing()
    with keeper.keeping(lease):
        time.sleep(5 * LEASE_MS / 1000)
        _, _, expires = lease_row()
    assert expires < now_ms(), "the lease lapsed once the batch ran past its bound"
    assert 1 <= keeper.renewals <= 6  # renewed every third of a lease, for two leases only


def test_a_renewal_never_shortens_the_lease():
    """A renewal whose clock read came before a commit's renewal leaves the longer lease."""
    runtime = short_leased()
    lease = runtime.lease
    assert lease is not None
    later = now_ms() + 60_000
    Cluster.objects.filter(pk=1).update(lease_expires_ms=later)
    renewed = lease_renew(lease=lease, lease_ms=LEASE_MS)
    assert renewed is not None
    assert lease_row()[2] == later
    assert isinstance(renewed, Lease)


def test_a_renewal_does_not_wait_for_a_commit_holding_the_cluster_row():
    """A commit's transaction holds the row (and renews the lease as it ends): the keeper's
    renewal does not queue behind it, where its clock would date from before the wait."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL's (SQLite has one writer at a time)")
    runtime = short_leased()
    lease = runtime.lease
    assert lease is not None
    locked, release = threading.Event(), threading.Event()

    def committing() -> None:
        try:
            with transaction.atomic():
                Cluster.objects.select_for_update().get(pk=1)
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=committing)
    holder.start()
    try:
        assert locked.wait(10)
        before = lease_row()
        began = time.monotonic()
        assert lease_renew_between_commits(lease=lease, lease_ms=60_000) is lease
        assert time.monotonic() - began < 1.0
        assert lease_row() == before
    finally:
        release.set()
        holder.join(10)
    renewed = lease_renew_between_commits(lease=lease, lease_ms=60_000)
    assert renewed is not None and renewed is not lease
    assert lease_row()[2] == renewed.expires_ms >= now_ms() + 59_000
