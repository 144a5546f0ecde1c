"""A hot standby: a controller that does not hold the lease follows the metadata log, so that
on taking over it applies only the records it has not seen (Kafka's standby controllers replay
the log as it is written), instead of loading the whole image from the state tables.

The first time, the standby loads the image from the state tables in one snapshot of the
database (REPEATABLE READ on PostgreSQL: the active controller commits meanwhile, and a load
spread over several reads could mix two offsets). Then it reads the records after its image's
offset, a bounded number at a time, and replays them. Records are read from the log table,
which holds committed records only, in offset order; a gap (a log cut by retention) starts the
standby over from the tables.

A standby checks its image against the log: once per new snapshot it takes a checkpoint (the
checksum its image would have as a snapshot, at its offset) and reports it; the next snapshot's
creation, which replays the log through that offset, judges it (controlplane.runtime.snapshots).
A standby whose image diverged loads again instead of ever taking over with it.
"""

from __future__ import annotations

import logging

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data
from controlplane.models import Cluster, ControllerNode, MetadataSnapshot
from controlplane.runtime.lease import now_ms
from controlplane.runtime.log_rows import log_rows
from controlplane.runtime.projections import consistent_read, load_image
from controlplane.runtime.snapshot_format import image_checksum

logger = logging.getLogger("controlplane.controller")

FOLLOW_MAX_RECORDS = 50_000  # per round of the standby's loop: it never holds a huge batch
STANDBY, ACTIVE = "standby", "active"
# A checkpoint's verdicts: awaiting the next snapshot's creation, and what it found.
PENDING, MATCH, DIVERGED = "pending", "match", "diverged"


class LogGap(Exception):
    """The log does not hold the next record the standby needs."""


class StandbyImage:
    """The image a standby controller keeps current."""

    def __init__(self) -> None:
        self.image: MetadataImage | None = None
        self.checkpoint: int | None = None  # the offset of the checkpoint awaiting its verdict
        self.checked_after = -1  # the latest snapshot's end offset when it was taken

    @property
    def last_offset(self) -> int | None:
        return None if self.image is None else self.image.last_offset

    def follow(self, *, max_records: int = FOLLOW_MAX_RECORDS) -> int:
        """Load the image (the first time) or replay up to `max_records` new records; answers
        how many were replayed."""
        if self.image is None:
            self.image = snapshot_image()  # None until a controller has created the cluster
            if self.image is None:
                return 0
        try:
            replayed = replay_after(self.image, max_records=max_records)
        except LogGap:
            logger.warning("standby: the log no longer holds its next record; loading again")
            self.forget()
            return 0
        return replayed

    def forget(self) -> None:
        """Drop the image (the next round loads one) and its checkpoints."""
        self.image, self.checkpoint, self.checked_after = None, None, -1

    def report(self, *, node_id: str, controller_id: int, caught_up: bool) -> None:
        """Say where this standby stands (the lag gauge reads it), take in the verdict on its
        last checkpoint, and take a new one when a snapshot appeared since (once caught up: the
        checkpoint then lies between this snapshot and the next)."""
        verdict = (
            ControllerNode.objects.filter(node_id=node_id, checkpoint_offset=self.checkpoint)
            .values_list("checkpoint_verdict", flat=True)
            .first()
            if self.checkpoint is not None
            else None
        )
        if verdict == DIVERGED:
            logger.error(
                "standby image at offset %d diverged from the log; loading it again",
                self.checkpoint,
            )
            self.forget()
        elif verdict == MATCH:
            self.checkpoint = None
        checkpoint: tuple[int, str] | None = None
        if self.image is not None and caught_up:
            latest = _latest_snapshot_end()
            if latest > self.checked_after:
                checkpoint = (self.image.last_offset, image_checksum(self.image))
                self.checkpoint, self.checked_after = checkpoint[0], latest
        controller_node_report(
            node_id=node_id,
            controller_id=controller_id,
            role=STANDBY,
            last_offset=self.last_offset if self.last_offset is not None else -1,
            checkpoint=checkpoint,
        )

    def take(self, cluster_id: str, last_offset: int) -> MetadataImage | None:
        """On taking over (the lease held: nothing commits meanwhile): the image of cluster
        `cluster_id` caught up to `last_offset`, or None when there is none to take (the
        caller loads the tables)."""
        image, self.image = self.image, None
        if image is None or image.cluster_id != cluster_id:
            return None
        try:
            while image.last_offset < last_offset:
                if not replay_after(image, max_records=FOLLOW_MAX_RECORDS):
                    raise LogGap
        except LogGap:
            logger.warning(
                "standby image stopped at %d, short of %d", image.last_offset, last_offset
            )
            return None
        if image.last_offset != last_offset:
            return None
        # Derived indexes (health) are built afresh by the first commit, as after a load.
        image.derived.clear()
        return image


def snapshot_image() -> MetadataImage | None:
    """The image of the state tables at their offset (which trails the log's end while a
    commit's tables follow its log), read in one snapshot of the database; None before any
    controller has created the cluster (its id is not known yet)."""
    with consistent_read():
        cluster = Cluster.objects.filter(pk=1).first()
        if cluster is None:
            return None
        return load_image(cluster.cluster_id, cluster.projected_offset)


def replay_after(image: MetadataImage, *, max_records: int) -> int:
    """Replay into `image` the committed records after its offset (at most `max_records`)."""
    rows = log_rows(
        ("offset", "record_type", "data"),
        after=image.last_offset,
        limit=max_records,
        page_rows=max_records,
    )
    delta = MetadataDelta(image)
    for offset, record_type, data in rows:
        if offset != delta.next_offset:
            raise LogGap(f"expected offset {delta.next_offset}, found {offset}")
        delta.replay(record_from_data(record_type, data))
    if not delta.replayed:
        return 0
    image.apply(delta)
    return len(delta.replayed)


def _latest_snapshot_end() -> int:
    end = (
        MetadataSnapshot.objects.filter(damaged=False)
        .order_by("-end_offset")
        .values_list("end_offset", flat=True)
        .first()
    )
    return -1 if end is None else int(end)


def controller_node_report(
    *,
    node_id: str,
    controller_id: int,
    role: str,
    last_offset: int,
    checkpoint: tuple[int, str] | None = None,
) -> None:
    """Record where a controller stands (one upsert): a standby's offset is what the lag gauge
    reads; an active controller's row says it no longer follows. A new `checkpoint` (offset,
    checksum) replaces the last one and awaits its verdict; without one, the last one and its
    verdict stay as they are."""
    node = ControllerNode(
        node_id=node_id,
        controller_id=controller_id,
        role=role,
        last_offset=last_offset,
        updated_ms=now_ms(),
    )
    fields = ["controller_id", "role", "last_offset", "updated_ms"]
    if checkpoint is not None:
        node.checkpoint_offset, node.checkpoint_checksum = checkpoint
        node.checkpoint_verdict = PENDING
        fields += ["checkpoint_offset", "checkpoint_checksum", "checkpoint_verdict"]
    ControllerNode.objects.bulk_create(
        [node], update_conflicts=True, unique_fields=["node_id"], update_fields=fields
    )


def standby_checkpoints_pending(
    *, after_offset: int, up_to_offset: int
) -> list[tuple[str, int, str]]:
    """Standbys' checkpoints awaiting a verdict within (`after_offset`, `up_to_offset`], by
    offset: (node id, offset, checksum)."""
    return list(
        ControllerNode.objects.filter(
            role=STANDBY,
            checkpoint_verdict=PENDING,
            checkpoint_offset__gt=after_offset,
            checkpoint_offset__lte=up_to_offset,
        )
        .order_by("checkpoint_offset")
        .values_list("node_id", "checkpoint_offset", "checkpoint_checksum")
    )


def standby_checkpoint_judge(*, node_id: str, offset: int, diverged: bool) -> None:
    """The verdict on a standby's checkpoint, by the image the log gives at its offset (a
    checkpoint replaced meanwhile is left alone)."""
    ControllerNode.objects.filter(
        node_id=node_id, checkpoint_offset=offset, checkpoint_verdict=PENDING
    ).update(checkpoint_verdict=DIVERGED if diverged else MATCH)
    if diverged:
        logger.error("standby %s: its image at offset %d is not the log's", node_id, offset)


def standby_lag_records(*, live_ms: int) -> int:
    """Records the furthest-behind live standby has yet to replay (the log's end minus its
    image's offset); -1 when no standby reported within `live_ms`."""
    offsets = ControllerNode.objects.filter(
        role=STANDBY, updated_ms__gte=now_ms() - live_ms
    ).values_list("last_offset", flat=True)
    lowest = min(offsets, default=None)
    if lowest is None:
        return -1
    head = Cluster.objects.filter(pk=1).values_list("last_offset", flat=True).first()
    return max(0, (head if head is not None else -1) - lowest)
