"""The metadata follower: one long-poll loop per process reads the log for every broker.

Why one follower per process, not one per broker: every broker in this process follows the same
log and would fetch the very same records, so one loop (`GET /internal/v1/metadata?wait_ms=...`)
reads it once and every broker reports the follower's offset as its own
`current_metadata_offset`. A long poll holds a server worker thread for up to `wait_ms`; N
followers would tie up N of them (and N times the bandwidth) for no extra information.

The follower replays the log from its start (as many records per fetch as the server allows
until it reaches the log's end as it was at start-up), or, with `track_partitions=False`, begins
at that end and knows only what comes after. When the log no longer holds the records it asks
for (retention deleted them behind a snapshot), the fetch answers a `snapshot_id`: the follower
loads the latest snapshot (`snapshot.bootstrap_from_snapshot`), as a Kafka broker does, and
follows the log after it. What it read is its `MetadataView` (see `metadata.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from controlplane.controller.errors import Errors
from controlplane.runtime.snapshot_format import SnapshotDamaged
from simulator.aio import wait_until
from simulator.client import (
    Backoff,
    ControllerClient,
    Refused,
    Transient,
    until_answered,
)
from simulator.metadata import LOG_START, MetadataView
from simulator.snapshot import bootstrap_from_snapshot
from simulator.state import SimulatorCounters, SimulatorError

# `after_offset` beyond any record: the fetch answers the log's head and no records.
HEAD_ONLY_OFFSET = 2**63 - 1
# Catching up with a long log (start-up): as many records per fetch as the server allows (it
# clamps a larger ask to its limits, CP_FETCH_MAX_RECORDS and CP_FETCH_MAX_BYTES).
CATCH_UP_MAX_RECORDS = 100_000
# The follower's least spacing between two fetches that brought nothing.
MIN_EMPTY_FETCH_INTERVAL_S = 0.1


class MetadataFollower:
    """Reads the metadata log into `view`, and tells `on_progress` each offset it reached."""

    def __init__(
        self,
        client: ControllerClient,
        counters: SimulatorCounters,
        *,
        wait_ms: int,
        max_records: int,
        track_partitions: bool,
        on_progress: Callable[[int], None],
    ) -> None:
        self.client = client
        self.counters = counters
        self.wait_ms = wait_ms
        self.max_records = max_records
        # Replaying the log from its start is what lets the follower know every partition; with
        # track_partitions=False it starts at the log's end and knows only what comes after
        # (fail/repair then see only partitions created since).
        self.track_partitions = track_partitions
        self.on_progress = on_progress
        self.view = MetadataView()
        self.cluster_id: str | None = None
        self.controller_id: int | None = None
        self.controller_epoch: int | None = None
        self.log_end_at_start = -1  # the log's end when the simulator first reached the server
        self.closing = False  # close() called: the loop stops even if a cancel was lost
        self.task: asyncio.Task[None] | None = None

    @property
    def offset(self) -> int:
        """How far the follower has read the log."""
        return self.view.last_offset

    async def first_contact(self, connect_timeout_s: float) -> None:
        """Reach the server (retrying for `connect_timeout_s`), learn the cluster id and the
        log's end, and start the view there. SimulatorError when it never answered or refused
        the broker token."""
        deadline = time.monotonic() + connect_timeout_s
        try:
            answer = await self._head_until(deadline)
        except Refused as error:
            url = self.client.internal_url
            if error.kind.startswith("HTTP 404"):
                raise SimulatorError(
                    f"{url} does not serve the brokers' API ({error}): give the control plane's "
                    "internal listener as the internal URL."
                ) from None
            raise SimulatorError(f"{url} refused the broker token: {error}") from None
        except Transient as error:
            raise SimulatorError(
                f"Could not reach {self.client.internal_url} within {connect_timeout_s:g} s "
                f"({error.kind})."
            ) from None
        self.log_end_at_start = int(answer["last_offset"])
        self.view = MetadataView(
            self.cluster_id or "",
            after_offset=LOG_START if self.track_partitions else self.log_end_at_start,
            complete=self.track_partitions,
        )

    async def _head_until(self, deadline: float) -> dict[str, Any]:
        return await until_answered(
            lambda: self.fetch(after_offset=LOG_START, max_records=1, wait_ms=0),
            deadline=deadline,
            backoff=Backoff(initial_s=0.1, max_s=2.0),
        )

    def start(self) -> None:
        self.closing = False
        self.task = asyncio.create_task(self.run(), name="metadata-follower")

    async def run(self) -> None:
        """Fetch and replay until closed; every failure is counted and retried with backoff."""
        backoff = Backoff(initial_s=0.1, max_s=2.0)
        while not self.closing:
            asked = time.monotonic()
            try:
                answer = await self._fetch_next()
            except (Transient, Refused) as error:
                self._count_failed_fetch(error)
                await asyncio.sleep(backoff.next(error.retry_after_s or 0.0))
                continue
            backoff.reset()
            records = answer.get("records") or []
            if answer.get("snapshot_id") or answer.get("error_code") == Errors.SNAPSHOT_NOT_FOUND:
                await self._load_snapshot(backoff)
            elif records:
                self._take(records)
                await asyncio.sleep(0)  # more may follow at once; let the brokers run first
            else:
                # Nothing new, and maybe at once (wait_ms=0, or a server that woke early or does
                # not long-poll): never poll faster than MIN_EMPTY_FETCH_INTERVAL_S.
                await asyncio.sleep(
                    max(0.0, MIN_EMPTY_FETCH_INTERVAL_S - (time.monotonic() - asked))
                )

    async def _fetch_next(self) -> dict[str, Any]:
        catching_up = self.offset < self.log_end_at_start
        if catching_up:  # no waiting, and as many records as the server gives
            return await self.fetch(
                after_offset=self.offset,
                max_records=max(self.max_records, CATCH_UP_MAX_RECORDS),
                wait_ms=0,
            )
        return await self.fetch(
            after_offset=self.offset, max_records=self.max_records, wait_ms=self.wait_ms
        )

    async def _load_snapshot(self, backoff: Backoff) -> None:
        """The records asked for are gone from the log: start again from the latest snapshot
        (none yet, or unreadable: counted, and asked again after a backoff)."""
        try:
            loaded = await bootstrap_from_snapshot(self.client)
        except (Transient, Refused, SnapshotDamaged) as error:
            kind = getattr(error, "kind", type(error).__name__)
            self.counters.errors += 1
            self.counters.errors_by_kind[f"metadata snapshot {kind}"] += 1
            await asyncio.sleep(backoff.next())
            return
        if loaded is None:  # the log was cut and the controller has not written one yet
            self.counters.errors_by_kind["metadata snapshot not there yet"] += 1
            await asyncio.sleep(backoff.next())
            return
        self.view = MetadataView.of_image(loaded.image)
        self.counters.snapshot_loads += 1
        self.counters.snapshot_bytes += loaded.size_bytes
        self.on_progress(self.offset)

    def _take(self, records: Sequence[dict[str, Any]]) -> None:
        for record in records:
            self.counters.records_by_type[str(record.get("type"))] += 1
        failures = self.view.apply(records)
        if failures:
            self.counters.errors += failures
            self.counters.errors_by_kind["metadata replay"] += failures
        self.counters.metadata_records += len(records)
        self.on_progress(self.offset)

    def _count_failed_fetch(self, error: Transient | Refused) -> None:
        self.counters.errors += 1
        self.counters.errors_by_kind[f"metadata {error.kind}"] += 1
        self.counters.retries += 1

    async def fetch(self, *, after_offset: int, max_records: int, wait_ms: int) -> dict[str, Any]:
        """One fetch; the cluster id and the active controller are learnt from its head."""
        answer = await self.client.fetch_metadata(
            after_offset=after_offset, max_records=max_records, wait_ms=wait_ms
        )
        self.cluster_id = answer.get("cluster_id") or self.cluster_id
        self.controller_id = answer.get("controller_id")
        self.controller_epoch = answer.get("controller_epoch")
        return answer

    async def sync(self, timeout_s: float = 10.0) -> bool:
        """Wait until the follower has read everything committed when this was called (what a
        broker does before acting on its metadata); False when the server could not be asked
        or the follower did not get there within `timeout_s`."""
        try:
            answer = await self.fetch(after_offset=HEAD_ONLY_OFFSET, max_records=1, wait_ms=0)
        except (Transient, Refused):
            return False
        target = int(answer["last_offset"])
        return await wait_until(lambda: self.offset >= target, timeout_s, poll_s=0.02)

    async def refresh_cluster_id(self) -> None:
        with contextlib.suppress(Transient, Refused):
            await self.fetch(after_offset=LOG_START, max_records=1, wait_ms=0)
