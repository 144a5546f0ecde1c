"""The controller's timeline: what each committed write did and why, told from its records
and the state before them (`describe_commit`). The timeline projection stores its entries;
the UI reads them. Pure: no Django, no I/O."""

from controlplane.controller.timeline.describe import (
    KIND_LABELS,
    Kind,
    Severity,
    TimelineEntry,
    WriteSummary,
    describe_commit,
)
from controlplane.controller.timeline.facts import Move

__all__ = [
    "KIND_LABELS",
    "Kind",
    "Move",
    "Severity",
    "TimelineEntry",
    "WriteSummary",
    "describe_commit",
]
