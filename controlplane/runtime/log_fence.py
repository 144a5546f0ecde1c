"""The commit's fence: the conditional updates of the cluster row that let a commit's
transactions (the log's, then the tables') commit only under the current controller's lease.

Each is one statement that locks the row until its transaction ends, as SELECT ... FOR UPDATE
would, and moves the row on in the same breath: the log's end and the renewed lease, or the
tables' offset. When it matches nothing, the row is read to tell the controller why
(NOT_CONTROLLER), and the transaction is rolled back whole.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.runtime.lease import Lease

# How much of its lease a commit may spend before it renews the lease again at its end.
LEASE_RENEWAL_SLACK_MS = 100


def advance_log(
    cursor: Any,
    lease: Lease,
    delta: MetadataDelta,
    times: tuple[int, int],
    tables_at: int | None = None,
) -> int:
    """Move the log's end to `delta`'s and renew the lease until `renewal` (`times` is the
    commit's timestamp and the renewal) if the fence holds (answers the lease's expiry); else
    raise why not. The tables stand where `delta` was built on, or at `tables_at` when this
    controller still holds their statements for the commits after it (a bounded change's
    slices: controlplane.runtime.metadata_log.TablesBehind)."""
    timestamp, renewal = times
    tables = delta.base.last_offset if tables_at is None else tables_at
    cursor.execute(
        "UPDATE cp_cluster SET last_offset = %s,"
        " lease_expires_ms = CASE WHEN lease_expires_ms > %s THEN lease_expires_ms ELSE %s END,"
        " leader_elections_total = leader_elections_total + %s,"
        " unclean_leader_elections_total = unclean_leader_elections_total + %s"
        " WHERE id = 1 AND controller_epoch = %s AND lease_holder = %s"
        " AND lease_expires_ms >= %s AND last_offset = %s AND projected_offset = %s"
        " RETURNING lease_expires_ms",
        [
            delta.last_offset,
            renewal,
            renewal,
            delta.leader_elections,
            delta.unclean_leader_elections,
            lease.epoch,
            lease.node_id,
            timestamp,
            delta.base.last_offset,
            tables,
        ],
    )
    row = cursor.fetchone()
    if row is None:
        fence = read_fence(cursor)
        check_fence(fence, lease, delta, timestamp, tables)
        raise ApiError(Errors.NOT_CONTROLLER, f"The metadata log is not as expected: {fence}.")
    return int(row[0])


class ClusterFence(NamedTuple):
    controller_epoch: int
    lease_holder: str
    lease_expires_ms: int
    last_offset: int
    projected_offset: int


def read_fence(cursor: Any) -> ClusterFence:
    """Why a commit's fence did not hold (read after its conditional update matched nothing)."""
    cursor.execute(
        "SELECT controller_epoch, lease_holder, lease_expires_ms, last_offset, projected_offset"
        " FROM cp_cluster WHERE id = 1"
    )
    return ClusterFence(*cursor.fetchone())


def fenced(lease: Lease, cluster: ClusterFence) -> ApiError:
    return ApiError(
        Errors.NOT_CONTROLLER,
        f"Controller epoch {lease.epoch} is fenced: the current epoch is "
        f"{cluster.controller_epoch}.",
    )


def check_fence(
    cluster: ClusterFence, lease: Lease, delta: MetadataDelta, timestamp: int, tables_at: int
) -> None:
    if cluster.controller_epoch != lease.epoch or cluster.lease_holder != lease.node_id:
        raise fenced(lease, cluster)
    if cluster.lease_expires_ms < timestamp:
        raise ApiError(Errors.NOT_CONTROLLER, "The controller lease lapsed before the commit.")
    if cluster.last_offset != delta.base.last_offset:
        raise ApiError(
            Errors.NOT_CONTROLLER,
            f"The metadata log moved to offset {cluster.last_offset} under this controller "
            f"(expected {delta.base.last_offset}).",
        )
    if cluster.projected_offset != tables_at:
        raise ApiError(
            Errors.NOT_CONTROLLER,
            f"The state tables stand at offset {cluster.projected_offset}, not at {tables_at} "
            f"as this controller left them (the log ends at {cluster.last_offset}): they are "
            "caught up when a controller takes over.",
        )


def tables_refused(lease: Lease, offsets: tuple[int, int], fence: ClusterFence) -> ApiError:
    if fence.controller_epoch != lease.epoch or fence.lease_holder != lease.node_id:
        return fenced(lease, fence)
    base, last = offsets
    return ApiError(
        Errors.NOT_CONTROLLER,
        f"The state tables stand at offset {fence.projected_offset} and the log ends "
        f"at {fence.last_offset}: not where this controller projects {base + 1}-{last} from.",
    )


def advance_tables(
    cursor: Any, lease: Lease, delta: MetadataDelta, base_offset: int | None = None
) -> None:
    """Move the tables' offset to `delta`'s end if the fence holds (the lease's epoch and
    holder are the current ones, the tables stand where `delta` was built on, `base_offset`
    when given, and the log holds it); else raise why not. One statement, which locks the row
    as SELECT ... FOR UPDATE would: nothing of the tables' transaction commits unless it held."""
    base = delta.base.last_offset if base_offset is None else base_offset
    cursor.execute(
        "UPDATE cp_cluster SET projected_offset = %s WHERE id = 1 AND controller_epoch = %s"
        " AND lease_holder = %s AND projected_offset = %s AND last_offset >= %s",
        [
            delta.last_offset,
            lease.epoch,
            lease.node_id,
            base,
            delta.last_offset,
        ],
    )
    if cursor.rowcount != 1:
        raise tables_refused(lease, (base, delta.last_offset), read_fence(cursor))
