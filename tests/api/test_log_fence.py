"""The commit's fence: each of its two transactions opens with one conditional update of the
cluster row, which holds only under the current epoch and lease holder, with the log and the
tables where the commit was built on. When it matches nothing the controller is told why
(NOT_CONTROLLER) and nothing of the transaction is written."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from controlplane.controller.errors import ApiError
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import ConfigRecord
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime import log_fence, metadata_log
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import Lease, cluster_get_or_create, now_ms
from controlplane.runtime.metadata_log import log_commit
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db


def active() -> tuple[Lease, MetadataImage]:
    runtime = get_runtime()
    event = ControllerEvent(
        "BrokerRegistration",
        registration_body(1, cluster_get_or_create().cluster_id),
        RequestContext(principal="User:test", request_id=str(uuid.uuid4())),
    )
    assert runtime.handle(event).error_code == 0
    assert runtime.lease is not None and runtime.image is not None
    return runtime.lease, runtime.image


def one_config(image: MetadataImage) -> MetadataDelta:
    delta = MetadataDelta(image)
    delta.replay(ConfigRecord("BROKER", "", "log.retention.ms", "1000"))
    return delta


def row() -> tuple[int, int, int]:
    cluster = Cluster.objects.get(pk=1)
    return cluster.last_offset, cluster.projected_offset, cluster.lease_expires_ms


def refused(lease: Lease, delta: MetadataDelta) -> str:
    before = row()
    with pytest.raises(ApiError) as error:
        log_commit(lease=lease, delta=delta, writes=[])
    assert error.value.error.name == "NOT_CONTROLLER"
    assert row() == before, "a refused commit moves nothing"
    assert not MetadataRecord.objects.filter(offset=delta.last_offset).exists()
    return error.value.message or ""


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda lease: {"epoch": lease.epoch + 1}, "is fenced"),
        (lambda lease: {"node_id": "someone-else"}, "is fenced"),
    ],
)
def test_a_commit_under_another_epoch_or_holder_is_refused_whole(
    change: Callable[[Lease], dict[str, Any]], reason: str
) -> None:
    lease, image = active()
    stale = dataclasses.replace(lease, **change(lease))
    assert reason in refused(stale, one_config(image))


def test_a_commit_after_the_lease_lapsed_is_refused_whole() -> None:
    lease, image = active()
    Cluster.objects.filter(pk=1).update(lease_expires_ms=now_ms() - 1_000)
    assert "lapsed" in refused(lease, one_config(image))


def test_the_tables_transaction_is_refused_when_the_epoch_moved_after_the_log_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another controller took over between the commit's two transactions: the log holds the
    records (they are applied), the tables do not follow them under the old epoch."""
    lease, image = active()
    delta = one_config(image)
    advance_tables = log_fence.advance_tables

    def taken_over_first(
        cursor: Any, lease: Lease, delta: MetadataDelta, base_offset: int | None = None
    ) -> None:
        cursor.execute("UPDATE cp_cluster SET controller_epoch = controller_epoch + 1")
        advance_tables(cursor, lease, delta, base_offset)

    monkeypatch.setattr(metadata_log, "advance_tables", taken_over_first)
    with pytest.raises(metadata_log.ProjectionsBehind) as behind:
        log_commit(lease=lease, delta=delta, writes=[])
    assert isinstance(behind.value.cause, ApiError) and "is fenced" in str(behind.value.cause)
    last, projected, _ = row()
    assert (last, projected) == (delta.last_offset, delta.base.last_offset)


def test_the_tables_fence_names_where_the_tables_stand() -> None:
    lease, image = active()
    delta = one_config(image)
    last, projected, _ = row()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE cp_cluster SET projected_offset = projected_offset - 1")
        with pytest.raises(ApiError) as error:
            log_fence.advance_tables(cursor, lease, delta)
        transaction.set_rollback(True)
    assert f"stand at offset {projected - 1}" in (error.value.message or "")
    assert row()[:2] == (last, projected)


def renewals(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].startswith("UPDATE cp_cluster SET lease_")]


def clock_moved_on_after(reads: int, monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """The commit's clock moves 10 s on after its first `reads` reads; the real clock."""
    moved = iter([0] * reads)
    real = now_ms
    monkeypatch.setattr(metadata_log, "now_ms", lambda: real() + next(moved, 10_000))
    return real


def test_a_short_commit_renews_its_lease_in_its_fence_and_a_long_one_again_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lease, image = active()
    first = one_config(image)
    with CaptureQueriesContext(connection) as queries:
        renewed = log_commit(lease=lease, delta=first, writes=[], lease_ms=60_000)
    assert row()[2] == renewed.expires_ms >= now_ms() + 59_000
    assert renewals(queries) == [], "renewed in the fence, no statement of its own"
    image.apply(first)
    # A commit whose statements ran longer than the slack (10 s here, on a clock moved on
    # after the fence) renews once more as its last statement: it leaves a whole lease.
    real = clock_moved_on_after(2, monkeypatch)
    with CaptureQueriesContext(connection) as queries:
        again = log_commit(lease=renewed, delta=one_config(image), writes=[], lease_ms=60_000)
    assert len(renewals(queries)) == 1
    assert row()[2] == again.expires_ms >= real() + 69_000


def test_a_long_tables_transaction_renews_the_lease_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tables' transaction holds the cluster row too (no standby can take the lease
    meanwhile): one that ran longer than the slack (the clock moved 10 s on once the log's
    transaction was done) leaves its controller a whole lease, as the log's does."""
    lease, image = active()
    # the commit's timestamp, the log's fence and the log's end read the clock before it moves
    real = clock_moved_on_after(3, monkeypatch)
    with CaptureQueriesContext(connection) as queries:
        renewed = log_commit(lease=lease, delta=one_config(image), writes=[], lease_ms=60_000)
    assert len(renewals(queries)) == 1
    assert row()[2] == renewed.expires_ms >= real() + 69_000
