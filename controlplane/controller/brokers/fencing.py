"""Fencing the brokers whose session lapsed, and when the controller holds off (its own
blindness rather than the brokers'): the controller's timer runs it as FenceStaleBrokers.

Pure, as the rest of the broker core: the metadata view, the session tracker's view and the
runtime's measurements in; records and an answer out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from controlplane.controller.brokers.control import (
    S,
    has_valid_session,
    leaving_brokers,
    moved_off,
    moved_off_bounded,
    transition_records,
)
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.env import (
    DEFAULT_FENCING_HOLD_OFF_MAX_MS,
    DEFAULT_FENCING_HOLD_OFF_MIN_BROKERS,
    DEFAULT_SESSION_TIMEOUT_MS,
    BrokerSession,
)
from controlplane.controller.image import MetadataDelta
from controlplane.controller.partitions.changes import PartitionChanges
from controlplane.controller.partitions.leadership import config_view, elect_leaderless
from controlplane.controller.records import Record
from controlplane.controller.result import ControllerResult


@dataclasses.dataclass(frozen=True, slots=True)
class FencingHoldOff:
    """What decides whether a lapse is the controller's blindness rather than the brokers'.

    `ingress_overload`: the runtime's measurement of its own ingress within the last session
    (controller queue delay, listener lag, timer lateness over their bound), None when it kept
    up. `since_ms`: when the current hold-off began (0: none). `max_ms`: how long one may last.
    `min_brokers`: the smallest cluster (unfenced brokers) in which hearing nobody means the
    controller is deaf rather than every broker dead.
    """

    ingress_overload: str | None = None
    since_ms: int = 0
    max_ms: int = DEFAULT_FENCING_HOLD_OFF_MAX_MS
    min_brokers: int = DEFAULT_FENCING_HOLD_OFF_MIN_BROKERS


FULL_DISRUPTION = "full disruption: no broker was heard within the session timeout"


def fence_stale_brokers(
    view: MetadataDelta,
    *,
    sessions: Mapping[int, BrokerSession],
    now_ms: int,
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
    activated_ms: int,
    configs: ConfigView | None = None,
    hold_off: FencingHoldOff = FencingHoldOff(),
    max_moves: int | None = None,
    continue_moves: bool = False,
) -> ControllerResult:
    """Fence every unfenced broker whose session lapsed, in one step; no records when none did.

    A broker the tracker has never heard from since this controller became active gets a full
    session from the activation (as Kafka's new controller does on failover).

    The controller holds off only what is its own blindness (`fencing_blindness`): a full
    disruption (nobody heard, as Kubernetes' node lifecycle controller stops evicting only when
    every zone is down) or a measured overload of its own ingress (as Kafka's KAFKA-15019 does
    not blame a broker for a heartbeat stuck in the controller's queue). A hold-off ends when
    the blindness does, or after `max_ms` at the latest: whoever is still silent is fenced then.
    Every stale broker is fenced in the same commit, so leadership moves once, to live replicas
    only, instead of hopping onto a broker that is fenced a moment later.

    With `max_moves`, one round moves at most that many partitions (what the leaving brokers
    led first); `moves_pending` in the answer says more may be left, and a round with
    `continue_moves` goes on with every fenced or shutting-down broker's, whatever the
    hold-off (those brokers are fenced already).
    """
    stale = stale_brokers(
        view,
        sessions=sessions,
        now_ms=now_ms,
        session_timeout_ms=session_timeout_ms,
        activated_ms=activated_ms,
    )
    unfenced = sum(1 for broker in view.all_brokers() if not broker.fenced)
    reason = (
        fencing_blindness(
            view,
            sessions=sessions,
            now_ms=now_ms,
            session_timeout_ms=session_timeout_ms,
            ingress_overload=hold_off.ingress_overload,
            unfenced=unfenced,
            min_brokers=hold_off.min_brokers,
        )
        if stale
        else None
    )
    expired = reason is not None and hold_off_expired(hold_off, now_ms=now_ms)
    answer: dict[str, object] = {
        "error_code": 0,
        "unfenced": unfenced,
        "hold_off_reason": reason,
        "hold_off_expired": expired,
        "next_session_expiry_ms": next_session_expiry_ms(
            view,
            sessions=sessions,
            now_ms=now_ms,
            session_timeout_ms=session_timeout_ms,
            activated_ms=activated_ms,
        ),
    }
    if reason is not None and not expired:
        moved, pending = _moves(view, [], configs, max_moves, continue_moves)
        return ControllerResult(
            moved,
            {**answer, "fenced_brokers": [], "held_off": stale, "moves_pending": pending},
        )
    records: list[Record] = []
    for broker_id in stale:
        broker = view.broker(broker_id)
        assert broker is not None
        records.extend(transition_records(broker, S.FENCED))
    moved, pending = _moves(view, stale, configs, max_moves, continue_moves)
    records += moved
    return ControllerResult(
        records,
        {**answer, "fenced_brokers": stale, "held_off": [], "moves_pending": pending},
    )


def _moves(
    view: MetadataDelta,
    stale: list[int],
    configs: ConfigView | None,
    max_moves: int | None,
    continue_moves: bool,
) -> tuple[list[Record], bool]:
    """The partition moves of a fencing round: off the brokers fenced now, and with
    `continue_moves` off every broker already fenced or shutting down too, then the elections
    of leaderless partitions a live replica can lead (brokers unfenced since the last round),
    all within `max_moves` partitions."""
    leaving = sorted({*stale, *leaving_brokers(view)}) if continue_moves else stale
    changes = PartitionChanges(view)
    more = False
    if leaving:
        if max_moves is None:
            moved_off(view, leaving, configs, changes=changes)
        else:
            more = moved_off_bounded(view, leaving, configs, max_moves, changes)[1]
    if continue_moves and not more:
        more = elect_leaderless(changes, configs=configs or config_view(view), limit=max_moves)
    return list(changes.records), more


def stale_brokers(
    view: MetadataDelta,
    *,
    sessions: Mapping[int, BrokerSession],
    now_ms: int,
    session_timeout_ms: int,
    activated_ms: int,
) -> list[int]:
    """The unfenced brokers whose session lapsed, by id."""
    stale: list[int] = []
    for broker in sorted(view.all_brokers(), key=lambda b: b.broker_id):
        if broker.fenced:
            continue
        session = sessions.get(broker.broker_id) or BrokerSession(activated_ms, -1)
        if not has_valid_session(session, now_ms=now_ms, session_timeout_ms=session_timeout_ms):
            stale.append(broker.broker_id)
    return stale


def next_session_expiry_ms(
    view: MetadataDelta,
    *,
    sessions: Mapping[int, BrokerSession],
    now_ms: int,
    session_timeout_ms: int,
    activated_ms: int,
) -> int | None:
    """When the next session of an unfenced broker lapses if nothing is heard (the first
    millisecond it is no longer valid), among those valid now; None when there is none. Kafka's
    controller schedules its next fencing check then (maybeScheduleNextFenceStaleBroker)
    rather than at the next tick of a period."""
    expiries = []
    for broker in view.all_brokers():
        if broker.fenced:
            continue
        session = sessions.get(broker.broker_id) or BrokerSession(activated_ms, -1)
        if has_valid_session(session, now_ms=now_ms, session_timeout_ms=session_timeout_ms):
            expiries.append(session.last_contact_ms + session_timeout_ms + 1)
    return min(expiries, default=None)


def fencing_blindness(
    view: MetadataDelta,
    *,
    sessions: Mapping[int, BrokerSession],
    now_ms: int,
    session_timeout_ms: int,
    ingress_overload: str | None,
    unfenced: int,
    min_brokers: int,
) -> str | None:
    """Why the brokers' silence may be the controller's own deafness, or None when it is not.

    A measured overload of the controller's ingress always is. Otherwise only a full disruption
    is: not one registered broker (fenced ones too) heard within the session timeout, in a
    cluster of at least `min_brokers` unfenced brokers (a lone broker's silence is its own).
    A partial disruption, even of most brokers, is the brokers': the controller hears others.
    """
    if ingress_overload:
        return ingress_overload
    if unfenced < max(1, min_brokers):
        return None
    heard = any(
        has_valid_session(
            sessions.get(broker.broker_id), now_ms=now_ms, session_timeout_ms=session_timeout_ms
        )
        for broker in view.all_brokers()
    )
    return None if heard else FULL_DISRUPTION


def hold_off_expired(hold_off: FencingHoldOff, *, now_ms: int) -> bool:
    """Whether the hold-off under way has lasted its longest (a new one has not begun yet)."""
    return hold_off.since_ms > 0 and now_ms - hold_off.since_ms >= hold_off.max_ms
