"""Rows of the timeline: events with their kind, severity and the partitions they moved (leader
and ISR before and after, and how an offline replica came back)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from controlplane.controller.records import NO_LEADER
from controlplane.controller.timeline import KIND_LABELS, Kind
from frontend.tables.common import format_ms
from timeline.models import TimelineEvent, TimelineMove
from timeline.selectors import Resolution

SEVERITY_BADGES = {"CRITICAL": "danger", "WARNING": "warn", "OK": "ok", "INFO": "muted"}


@dataclasses.dataclass(frozen=True, slots=True)
class MoveRow:
    topic: str
    partition_index: int
    previous_leader: int
    leader: int
    previous_isr: list[int]
    isr: list[int]
    offline_added: list[int]
    offline_cleared: list[int]
    unclean: bool
    failed_broker: int | None
    resolved_time: str
    resolution: str
    resolved: bool

    @property
    def leader_changed(self) -> bool:
        return self.leader != self.previous_leader

    @property
    def leaderless(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def previously_leaderless(self) -> bool:
        return self.previous_leader == NO_LEADER


def move_rows(moves: Iterable[TimelineMove]) -> list[MoveRow]:
    return [
        MoveRow(
            topic=m.topic_name,
            partition_index=m.partition_index,
            previous_leader=m.previous_leader,
            leader=m.leader,
            previous_isr=m.previous_isr_ids,
            isr=m.isr_ids,
            offline_added=TimelineMove.ids(m.offline_added),
            offline_cleared=TimelineMove.ids(m.offline_cleared),
            unclean=m.unclean,
            failed_broker=m.failed_broker,
            resolved_time=format_ms(m.resolved_ms) if m.resolved_ms is not None else "",
            resolution=m.resolution,
            resolved=m.resolved_offset is not None,
        )
        for m in moves
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class EventRow:
    offset: int
    last_offset: int
    time: str
    kind: str
    kind_label: str
    severity: str
    badge: str
    title: str
    api: str
    principal: str
    client_id: str
    request_id: str
    brokers: list[int]
    topics: list[str]
    unclean: bool
    details: Mapping[str, Any]
    moves: list[MoveRow]
    resolution: Resolution | None

    @property
    def moves_total(self) -> int:
        return int(self.details.get("partitions_changed", 0))

    @property
    def more_moves(self) -> int:
        return max(0, self.moves_total - len(self.moves))

    @property
    def is_incident(self) -> bool:
        return self.severity in ("CRITICAL", "WARNING")

    @property
    def is_log_dir_failure(self) -> bool:
        return self.kind == Kind.LOG_DIR_FAILURE.value

    @property
    def configs(self) -> list[dict[str, Any]]:
        return list(self.details.get("configs") or [])


def _listed(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def event_rows(
    events: Iterable[TimelineEvent],
    previews: Mapping[int, Iterable[TimelineMove]],
    resolutions: Mapping[int, Resolution],
    hidden_topics: Collection[str] | None = None,
) -> list[EventRow]:
    """Rows of events; topics the principal may not describe are not named."""
    hidden = set(hidden_topics or ())
    rows = []
    for event in events:
        try:
            label = KIND_LABELS[Kind(event.kind)]
        except ValueError:
            label = event.kind
        rows.append(
            EventRow(
                offset=event.offset,
                last_offset=event.last_offset,
                time=format_ms(event.timestamp_ms),
                kind=event.kind,
                kind_label=label,
                severity=event.severity,
                badge=SEVERITY_BADGES.get(event.severity, "muted"),
                title=event.title,
                api=event.api,
                principal=event.principal,
                client_id=event.client_id,
                request_id=event.request_id,
                brokers=[int(b) for b in _listed(event.broker_ids)],
                topics=[t for t in _listed(event.topic_names) if t not in hidden],
                unclean=event.unclean,
                details=event.details if isinstance(event.details, dict) else {},
                moves=move_rows(previews.get(event.offset, ())),
                resolution=resolutions.get(event.offset),
            )
        )
    return rows
