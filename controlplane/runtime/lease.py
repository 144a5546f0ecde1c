"""The controller lease: exactly one active controller, identified by a growing epoch.

The lease lives on the cluster row. Taking over a lapsed (or resigned) lease bumps the controller
epoch; every commit checks epoch, holder and expiry under the row lock, so a paused or partitioned
old controller can never write once another took over.
"""

from __future__ import annotations

import base64
import dataclasses
import time
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from controlplane.models import Cluster


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_cluster_id() -> str:
    """Kafka's cluster ids: a random UUID, URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclasses.dataclass(frozen=True, slots=True)
class Lease:
    node_id: str
    controller_id: int
    epoch: int
    expires_ms: int


def cluster_read() -> Cluster:
    """The cluster row for a read, never written: before any controller has run (it creates the
    row with the lease), an unsaved row with the configured cluster id and an empty log."""
    cluster = Cluster.objects.filter(pk=1).first()
    return cluster if cluster is not None else _unsaved_cluster()


def _unsaved_cluster() -> Cluster:
    return Cluster(pk=1, cluster_id=settings.CP_CLUSTER_ID)


class ClusterHead(NamedTuple):
    """What a reader of the log's head needs of the cluster row."""

    cluster_id: str
    controller_id: int | None
    controller_epoch: int
    last_offset: int
    log_start_offset: int


def cluster_head() -> ClusterHead:
    """The log's head and its controller, as `cluster_read` has them, in one plain query: the
    Kafka protocol listener reads it for every Raft Fetch, and the ORM's query cost five times
    the CPU (about 0.5 ms against 0.1 ms)."""
    return ClusterHead(*cluster_fields(ClusterHead._fields))


def cluster_fields(fields: Sequence[str]) -> tuple[Any, ...]:
    """These columns of the cluster row, in one plain query (the hot readers of the log's head
    ask for every fetch); before any controller has run, the unsaved row's (configured id,
    empty log)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(fields)} FROM cp_cluster WHERE id = 1")
        row = cursor.fetchone()
    if row is None:
        unsaved = _unsaved_cluster()
        return tuple(getattr(unsaved, field) for field in fields)
    return tuple(row)


def cluster_get_or_create() -> Cluster:
    cluster = Cluster.objects.filter(pk=1).first()
    if cluster is not None:
        return cluster
    try:
        with transaction.atomic():
            return Cluster.objects.create(
                pk=1, cluster_id=settings.CP_CLUSTER_ID or new_cluster_id()
            )
    except IntegrityError:
        return Cluster.objects.get(pk=1)


def lease_acquire(
    *,
    node_id: str,
    controller_id: int,
    lease_ms: int,
    take_over_from: tuple[str, int] | None = None,
) -> Lease | None:
    """Take the lease if it is free or lapsed (epoch + 1), renew it if it is ours. With
    `take_over_from` (a holder and its epoch, whose controller is known dead: its session ended,
    controlplane.runtime.presence), take it from that holder under that epoch before it lapses."""
    cluster_get_or_create()
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().get(pk=1)
        now = now_ms()
        ours = cluster.lease_holder == node_id and cluster.lease_expires_ms >= now
        dead = take_over_from == (cluster.lease_holder, cluster.controller_epoch)
        if not ours and not dead and cluster.lease_expires_ms >= now:
            return None
        if not ours:
            cluster.controller_epoch += 1
            cluster.lease_holder = node_id
            cluster.controller_id = controller_id
        cluster.lease_expires_ms = now + lease_ms
        cluster.save(
            update_fields=["controller_epoch", "lease_holder", "controller_id", "lease_expires_ms"]
        )
        return Lease(node_id, controller_id, cluster.controller_epoch, cluster.lease_expires_ms)


def lease_reclaim(*, lease: Lease, lease_ms: int) -> Lease | None:
    """Extend our lease even if it lapsed meanwhile, as long as nobody took it over (the holder
    and the epoch are still ours): what a controller does once it has loaded its image, which
    may take longer than a lease on a large cluster. It wrote nothing while it loaded, so no
    write of the epoch can be stale. None when another controller holds it now."""
    expires = now_ms() + lease_ms
    updated = Cluster.objects.filter(
        pk=1, lease_holder=lease.node_id, controller_epoch=lease.epoch
    ).update(lease_expires_ms=expires)
    if updated != 1:
        return None
    return dataclasses.replace(lease, expires_ms=expires)


def lease_renew(*, lease: Lease, lease_ms: int) -> Lease | None:
    """Extend our lease, never shortening it (a commit may have renewed it later than this
    renewal's clock read); None when it lapsed or another controller holds it now."""
    now = now_ms()
    expires = now + lease_ms
    updated = Cluster.objects.filter(
        pk=1,
        lease_holder=lease.node_id,
        controller_epoch=lease.epoch,
        lease_expires_ms__gte=now,
    ).update(lease_expires_ms=Greatest(F("lease_expires_ms"), Value(expires)))
    if updated != 1:
        return None
    return dataclasses.replace(lease, expires_ms=expires)


def lease_renew_between_commits(*, lease: Lease, lease_ms: int) -> Lease | None:
    """`lease_renew`, unless one of the controller's commits holds the cluster row now: that
    transaction renews the lease itself as it ends, and no standby can take it over meanwhile
    (taking it over locks the row), so the renewal is not waited for; `lease` itself is answered
    then. The clock is read once the row is locked, so a renewal never dates from before a
    wait. SQLite has no row locks: its one writer at a time is waited for (a read before the
    write would be refused at once while a commit writes)."""
    if connection.vendor == "sqlite":
        return lease_renew(lease=lease, lease_ms=lease_ms)
    with transaction.atomic():
        free = Cluster.objects.select_for_update(skip_locked=True).filter(pk=1)
        if not list(free.values_list("pk", flat=True)):
            return lease
        return lease_renew(lease=lease, lease_ms=lease_ms)


def lease_resign(*, lease: Lease) -> None:
    Cluster.objects.filter(pk=1, lease_holder=lease.node_id, controller_epoch=lease.epoch).update(
        lease_expires_ms=0
    )
