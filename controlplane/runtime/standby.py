"""A hot standby: a controller that does not hold the lease follows the metadata log, so that
on taking over it applies only the records it has not seen (Kafka's standby controllers replay
the log as it is written), instead of loading the whole image from the state tables.

The first time, the standby loads the image from the state tables in one snapshot of the
database (REPEATABLE READ on PostgreSQL: the active controller commits meanwhile, and a load
spread over several reads could mix two offsets). Then it reads the records after its image's
offset, a bounded number at a time, and replays them. Records are read from the log table,
which holds committed records only, in offset order; a gap (a log cut by retention) starts the
standby over from the tables.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime.projections import load_image

logger = logging.getLogger("controlplane.controller")

FOLLOW_MAX_RECORDS = 50_000  # per round of the standby's loop: it never holds a huge batch


class LogGap(Exception):
    """The log does not hold the next record the standby needs."""


class StandbyImage:
    """The image a standby controller keeps current."""

    def __init__(self) -> None:
        self.image: MetadataImage | None = None
        self.applied = 0  # records replayed since the image was loaded

    @property
    def last_offset(self) -> int | None:
        return None if self.image is None else self.image.last_offset

    def follow(self, *, max_records: int = FOLLOW_MAX_RECORDS) -> int:
        """Load the image (the first time) or replay up to `max_records` new records; answers
        how many were replayed."""
        if self.image is None:
            self.image = snapshot_image()  # None until a controller has created the cluster
            return 0
        try:
            replayed = replay_after(self.image, max_records=max_records)
        except LogGap:
            logger.warning("standby: the log no longer holds its next record; loading again")
            self.image = None
            return 0
        self.applied += replayed
        return replayed

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
    """The image of the state tables at one offset, read in one snapshot of the database; None
    before any controller has created the cluster (its id is not known yet)."""
    outermost = not connection.in_atomic_block  # else the caller's transaction is the snapshot
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cluster = Cluster.objects.filter(pk=1).first()
        if cluster is None:
            return None
        return load_image(cluster.cluster_id, cluster.last_offset)


def replay_after(image: MetadataImage, *, max_records: int) -> int:
    """Replay into `image` the committed records after its offset (at most `max_records`)."""
    rows = (
        MetadataRecord.objects.filter(offset__gt=image.last_offset)
        .order_by("offset")
        .values_list("offset", "record_type", "data")[:max_records]
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
