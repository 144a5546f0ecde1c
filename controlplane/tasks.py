"""Thin Celery tasks of the controller."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent


@shared_task(name="controlplane.tasks.controller_event")  # type: ignore[untyped-decorator]
def controller_event(event: dict[str, Any]) -> dict[str, Any]:
    """One controller event (`ControllerEvent.to_wire`), on the active controller (the only
    consumer of this queue); its answer as `ControllerAnswer.to_wire`."""
    return get_runtime().submit(ControllerEvent.from_wire(event)).to_wire()


@shared_task(name="controlplane.tasks.metadata_snapshot_create")  # type: ignore[untyped-decorator]
def metadata_snapshot_create() -> int | None:
    """A snapshot of the metadata image at the log's head, then retention (sent by the active
    controller's timer when one is due); the snapshot's end offset, None when none was written
    (nothing to snapshot, or another creation under way)."""
    from controlplane.runtime.snapshots import metadata_snapshot_create as create

    snapshot = create()
    return None if snapshot is None else snapshot.end_offset
