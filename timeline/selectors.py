"""Reads of the timeline: events newest first, filtered by kind, broker and topic (a deleted
topic by its name), the partitions each moved and how its offline replicas came back."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable

from django.db.models import Count, Q, QuerySet

from controlplane.controller.timeline import KIND_LABELS, Kind
from timeline.models import TimelineEvent, TimelineMove

# Events about brokers whose titles name no topic: shown whatever topics their moves touched
# (a principal's hidden topics are then left out of the moves alone).
BROKER_KINDS = frozenset(
    {
        Kind.LOG_DIR_FAILURE,
        Kind.LOG_DIR_RECOVERY,
        Kind.SESSION_EXPIRED,
        Kind.FENCED,
        Kind.CONTROLLED_SHUTDOWN,
        Kind.UNFENCED,
        Kind.REGISTERED,
        Kind.UNREGISTERED,
        Kind.ELECTION,
    }
)


def timeline_kinds() -> list[tuple[str, str]]:
    """(kind, label) for every kind the timeline knows, in its order."""
    return [(kind.value, KIND_LABELS[kind]) for kind in Kind]


def timeline_event_list(
    *,
    kinds: Collection[str] = (),
    broker_id: int | None = None,
    topic: str = "",
    incidents_only: bool = False,
    hidden_topics: Collection[str] | None = None,
) -> QuerySet[TimelineEvent]:
    """Events newest first. Lazy: a page is a count and a slice."""
    events = TimelineEvent.objects.order_by("-offset")
    if kinds:
        events = events.filter(kind__in=list(kinds))
    if broker_id is not None:
        events = events.filter(broker_ids__contains=f",{broker_id},")
    if topic:
        events = events.filter(topic_names__contains=f",{topic},")
    if incidents_only:
        events = events.filter(severity__in=("CRITICAL", "WARNING"))
    if hidden_topics:
        naming = Q()
        for name in hidden_topics:
            naming |= Q(topic_names__contains=f",{name},")
        events = events.exclude(naming & ~Q(kind__in=[k.value for k in BROKER_KINDS]))
    return events


def timeline_event_get(*, offset: int) -> TimelineEvent | None:
    return TimelineEvent.objects.filter(offset=offset).first()


@dataclasses.dataclass(frozen=True, slots=True)
class Resolution:
    """How many replicas an event marked offline, and how many have come back."""

    offline: int
    resolved: int

    @property
    def complete(self) -> bool:
        return self.offline > 0 and self.resolved == self.offline


def timeline_resolutions(*, offsets: Iterable[int]) -> dict[int, Resolution]:
    """Per event (of `offsets`), its offline replicas and those resolved (one query)."""
    rows = (
        TimelineMove.objects.filter(event_offset__in=list(offsets), failed_broker__isnull=False)
        .values("event_offset")
        .annotate(
            offline=Count("id"),
            resolved=Count("id", filter=Q(resolved_offset__isnull=False)),
        )
    )
    return {r["event_offset"]: Resolution(r["offline"], r["resolved"]) for r in rows}


def timeline_move_previews(
    *, offsets: Iterable[int], per_event: int, hidden_topics: Collection[str] | None = None
) -> dict[int, list[TimelineMove]]:
    """The first `per_event` partitions of each event (one query)."""
    moves = TimelineMove.objects.filter(event_offset__in=list(offsets), seq__lt=per_event)
    if hidden_topics:
        moves = moves.exclude(topic_name__in=list(hidden_topics))
    previews: dict[int, list[TimelineMove]] = {}
    for move in moves.order_by("event_offset", "seq"):
        previews.setdefault(move.event_offset, []).append(move)
    return previews


def timeline_move_list(
    *, offset: int, hidden_topics: Collection[str] | None = None
) -> QuerySet[TimelineMove]:
    """Every partition one event moved, in its order. Lazy: a page is a count and a slice."""
    moves = TimelineMove.objects.filter(event_offset=offset).order_by("seq")
    if hidden_topics:
        moves = moves.exclude(topic_name__in=list(hidden_topics))
    return moves
