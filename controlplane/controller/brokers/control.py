"""Broker registration, heartbeats, fencing and unregistration (Kafka KRaft semantics).

Pure: every function takes the metadata view and plain data, and returns records and a response.
References: Kafka's ClusterControlManager (registration), BrokerHeartbeatManager (the heartbeat
state machine) and ReplicationControlManager.processBrokerHeartbeat (which records a transition
produces).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from controlplane.controller.canary.rules import (
    BROKER_POD,
    BROKER_PODS,
    CANARY_BROKER_POD,
    canary_brokers_of,
    isolated,
)
from controlplane.controller.config_schema import ConfigView
from controlplane.controller.env import (
    DEFAULT_FENCING_HOLD_OFF_MAX_MS,
    DEFAULT_FENCING_HOLD_OFF_MIN_BROKERS,
    DEFAULT_SESSION_TIMEOUT_MS,
    BrokerSession,
)
from controlplane.controller.errors import ApiError, Errors, InvalidStateTransition
from controlplane.controller.features import SupportedFeature, check_supported_features
from controlplane.controller.image import (
    BrokerControlState,
    BrokerRegistration,
    BrokerStatus,
    MetadataDelta,
)
from controlplane.controller.partitions.changes import PartitionChanges
from controlplane.controller.partitions.leadership import (
    config_view,
    elect_leaderless,
    remove_from_isrs,
)
from controlplane.controller.records import (
    BrokerRegistrationChangeRecord,
    ControlledShutdownChange,
    FencingChange,
    Listener,
    PartitionChangeRecord,
    Record,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from controlplane.controller.result import ControllerResult

__all__ = ["BROKER_POD", "BROKER_PODS", "CANARY_BROKER_POD"]  # the pods, re-exported
SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})

DEFAULT_HEARTBEAT_INTERVAL_MS = 2000

S = BrokerControlState
# The broker state machine as data: which control states a broker may move to from each state.
BROKER_TRANSITIONS: Mapping[BrokerControlState, frozenset[BrokerControlState]] = {
    S.FENCED: frozenset({S.UNFENCED, S.SHUTDOWN_NOW}),
    S.UNFENCED: frozenset({S.FENCED, S.CONTROLLED_SHUTDOWN, S.SHUTDOWN_NOW}),
    S.CONTROLLED_SHUTDOWN: frozenset({S.FENCED, S.SHUTDOWN_NOW}),
    S.SHUTDOWN_NOW: frozenset(),
}


def check_transition(current: BrokerControlState, target: BrokerControlState) -> None:
    """Same state is a no-op; anything the table does not list is refused."""
    if current != target and target not in BROKER_TRANSITIONS[current]:
        raise InvalidStateTransition("broker", current.value, target.value)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistrationRequest:
    broker_id: int
    cluster_id: str
    incarnation_id: str
    listeners: tuple[Listener, ...]
    rack: str | None
    pod: str
    log_dirs: tuple[str, ...]
    software_version: str | None = None
    features: tuple[SupportedFeature, ...] = ()  # what a Kafka broker supports, by name


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    offline_log_dirs: tuple[str, ...] = ()


def heartbeat_request(payload: Mapping[str, Any]) -> BrokerHeartbeatRequest:
    """A BrokerHeartbeat body as the request both the web node and the controller decide on."""
    return BrokerHeartbeatRequest(
        broker_id=payload["broker_id"],
        broker_epoch=payload["broker_epoch"],
        current_metadata_offset=payload["current_metadata_offset"],
        want_fence=payload.get("want_fence", False),
        want_shut_down=payload.get("want_shut_down", False),
        offline_log_dirs=tuple(payload.get("offline_log_dirs", ())),
    )


def has_valid_session(
    session: BrokerSession | None, *, now_ms: int, session_timeout_ms: int
) -> bool:
    return session is not None and session.last_contact_ms + session_timeout_ms >= now_ms


def validate_registration(request: BrokerRegistrationRequest) -> None:
    if request.broker_id < 0:
        raise ApiError(Errors.INVALID_REGISTRATION, "The broker id must not be negative.")
    if request.pod not in BROKER_PODS:
        raise ApiError(
            Errors.INVALID_REGISTRATION,
            f"Unknown pod {request.pod!r}; expected one of {sorted(BROKER_PODS)}.",
        )
    names = [listener.name for listener in request.listeners]
    if len(set(names)) != len(names):
        raise ApiError(Errors.INVALID_REGISTRATION, "Listener names must be unique.")
    for listener in request.listeners:
        if listener.security_protocol not in SECURITY_PROTOCOLS:
            raise ApiError(
                Errors.INVALID_REGISTRATION,
                f"Unknown security protocol {listener.security_protocol!r} "
                f"on listener {listener.name}.",
            )
    for log_dir in request.log_dirs:
        _require_uuid(log_dir, "log directory")
    _require_uuid(request.incarnation_id, "incarnation id")


def register_broker(
    view: MetadataDelta,
    request: BrokerRegistrationRequest,
    *,
    sessions: Mapping[int, BrokerSession],
    now_ms: int,
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
    configs: ConfigView | None = None,
) -> ControllerResult:
    if request.cluster_id != view.cluster_id:
        raise ApiError(
            Errors.INCONSISTENT_CLUSTER_ID,
            f"Expected cluster ID {view.cluster_id}, but got cluster ID {request.cluster_id}",
        )
    validate_registration(request)
    check_supported_features(view.finalized_features(), request.features)
    existing = view.broker(request.broker_id)
    if existing is not None:
        if existing.incarnation_id == request.incarnation_id:
            # A retried registration of the same process: it keeps its epoch, nothing changes.
            return ControllerResult(
                [], registration_response(existing.epoch), contacts=(request.broker_id,)
            )
        live = has_valid_session(
            sessions.get(request.broker_id), now_ms=now_ms, session_timeout_ms=session_timeout_ms
        )
        if live:
            raise ApiError(
                Errors.DUPLICATE_BROKER_REGISTRATION,
                "Another broker is registered with that broker id.",
            )
    record = RegisterBrokerRecord(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        broker_epoch=view.next_offset,
        listeners=request.listeners,
        rack=request.rack,
        pod=request.pod,
        log_dirs=request.log_dirs,
        fenced=True,
        software_version=request.software_version,
    )
    moved: list[Record] = []
    if existing is not None:
        # A new incarnation: the old one leaves every ISR, and its offline replicas are
        # forgotten (the restarted broker reports its log dirs afresh).
        moved = _moved_off(view, [request.broker_id], configs, clear_offline=True)
    records = [record, *_with_canary_isolation(view, request.broker_id, request.pod, moved)]
    return ControllerResult(
        records, registration_response(record.broker_epoch), contacts=(request.broker_id,)
    )


def _with_canary_isolation(
    view: MetadataDelta, broker_id: int, pod: str | None, moved: list[Record]
) -> list[Record]:
    """`moved` (the partition changes of a registration, or of an unregistration: `pod` None)
    with whether each canary partition with a replica on the broker is isolated, where the
    broker's new pod (or its going) changes that (KIP-1095): folded into the partition's change
    when it has one, else one change of its own. Isolated means on registered canary brokers."""
    canary = set(canary_brokers_of(view))
    if pod == CANARY_BROKER_POD:
        canary.add(broker_id)
    else:
        canary.discard(broker_id)
    position = {
        (r.topic_id, r.partition_id): i
        for i, r in enumerate(moved)
        if isinstance(r, PartitionChangeRecord)
    }
    records = list(moved)
    for tp in sorted(view.partitions_with_replica(broker_id)):
        partition = view.partition(tp)
        if partition is None or not partition.is_canary:
            continue
        now_isolated = isolated(partition.replicas, canary)
        if now_isolated == partition.canary_isolated:
            continue
        at = position.get(tp)
        if at is None:
            records.append(
                PartitionChangeRecord(
                    partition_id=tp[1], topic_id=tp[0], canary_isolated=now_isolated
                )
            )
        else:
            change = records[at]
            assert isinstance(change, PartitionChangeRecord)
            records[at] = dataclasses.replace(change, canary_isolated=now_isolated)
    return records


def _moved_off(
    view: MetadataDelta,
    broker_ids: list[int],
    configs: ConfigView | None,
    *,
    clear_offline: bool = False,
) -> list[Record]:
    changes = PartitionChanges(view)
    remove_from_isrs(
        changes, broker_ids, configs=configs or config_view(view), clear_offline=clear_offline
    )
    return list(changes.records)


def moved_off_bounded(
    view: MetadataDelta, broker_ids: list[int], configs: ConfigView | None, limit: int
) -> tuple[list[Record], bool]:
    """`_moved_off`, changing at most `limit` partitions; and whether more may be left."""
    changes = PartitionChanges(view)
    more = remove_from_isrs(changes, broker_ids, configs=configs or config_view(view), limit=limit)
    return list(changes.records), more


def leaving_brokers(view: MetadataDelta) -> list[int]:
    """Brokers whose partitions must move off them: fenced or in controlled shutdown."""
    return sorted(b.broker_id for b in view.all_brokers() if b.fenced or b.in_controlled_shutdown)


def _led_again(view: MetadataDelta, broker_id: int, configs: ConfigView | None) -> list[Record]:
    changes = PartitionChanges(view)
    elect_leaderless(changes, configs=configs or config_view(view), unfenced=[broker_id])
    return list(changes.records)


def partition_moves(
    view: MetadataDelta,
    broker: BrokerStatus | BrokerRegistration,
    target: BrokerControlState,
    configs: ConfigView | None,
    limit: int | None = None,
) -> tuple[list[Record], bool]:
    """What a broker state change does to partitions (Kafka's handleBrokerFenced, -Unfenced,
    -InControlledShutdown): leaving brokers leave every ISR, an unfenced one may lead again.
    With `limit`, a leaving broker's moves stop at that many partitions; the answer's second
    part says more may be left (the controller's fencing rounds go on with them)."""
    current = broker.control_state
    if current == target:
        return [], False
    if target is S.UNFENCED:
        return _led_again(view, broker.broker_id, configs), False
    if current is S.FENCED:
        return [], False
    if target is S.SHUTDOWN_NOW and current is S.CONTROLLED_SHUTDOWN:
        return [], False  # it left every ISR when its controlled shutdown began
    if limit is None:
        return _moved_off(view, [broker.broker_id], configs), False
    return moved_off_bounded(view, [broker.broker_id], configs, limit)


def registration_response(broker_epoch: int) -> dict[str, object]:
    return {"error_code": 0, "error_message": None, "broker_epoch": broker_epoch}


def require_broker_epoch(view: MetadataDelta, broker_id: int, epoch: int) -> BrokerRegistration:
    broker = view.broker(broker_id)
    if broker is None or broker.epoch != epoch:
        raise stale_broker_epoch(broker_id, None if broker is None else broker.epoch, epoch)
    return broker


def stale_broker_epoch(broker_id: int, registered_epoch: int | None, epoch: int) -> ApiError:
    """The refusal of broker `broker_id` sending `epoch`; `registered_epoch` None: unregistered."""
    return ApiError(
        Errors.STALE_BROKER_EPOCH,
        f"No broker registration found for broker {broker_id}"
        if registered_epoch is None
        else f"Expected broker epoch {registered_epoch}, but got broker epoch {epoch}",
    )


def next_broker_state(
    broker: BrokerStatus | BrokerRegistration,
    request: BrokerHeartbeatRequest,
    *,
    has_leaderships: bool,
    lowest_active_offset: int,
) -> BrokerControlState:
    """Kafka's BrokerHeartbeatManager.calculateNextBrokerState, as a decision table."""
    decided = state_decided_by_request(broker, request)
    if decided is not None:
        return decided
    if broker.control_state is S.UNFENCED:  # it asks to shut down, not to be fenced
        return S.CONTROLLED_SHUTDOWN if has_leaderships else S.SHUTDOWN_NOW
    # CONTROLLED_SHUTDOWN: leave only once leaderships moved and every active broker has seen it.
    if has_leaderships or broker.controlled_shutdown_offset > lowest_active_offset:
        return S.CONTROLLED_SHUTDOWN
    return S.SHUTDOWN_NOW


def state_decided_by_request(
    broker: BrokerStatus | BrokerRegistration, request: BrokerHeartbeatRequest
) -> BrokerControlState | None:
    """The state the heartbeat moves the broker to when its status and the heartbeat alone
    decide it; None when the cluster does, by whether the broker leads partitions and the lowest
    offset active brokers have seen (an unfenced broker's shutdown, a controlled shutdown)."""
    current = broker.control_state
    if current is S.FENCED:
        if request.want_shut_down:
            return S.SHUTDOWN_NOW
        if not request.want_fence and request.current_metadata_offset >= broker.epoch:
            return S.UNFENCED
        return S.FENCED
    if current is S.UNFENCED:
        if request.want_fence:
            return S.SHUTDOWN_NOW if request.want_shut_down else S.FENCED
        return None if request.want_shut_down else S.UNFENCED
    return None


def lowest_active_offset(view: MetadataDelta, sessions: Mapping[int, BrokerSession]) -> int:
    """The lowest metadata offset any unfenced broker has reported (Kafka: lowestActiveOffset)."""
    offsets = [
        sessions[b.broker_id].metadata_offset if b.broker_id in sessions else -1
        for b in view.all_brokers()
        if not b.fenced
    ]
    return min(offsets, default=2**63 - 1)


def transition_records(
    broker: BrokerStatus | BrokerRegistration, target: BrokerControlState
) -> list[Record]:
    """The records that move a broker to `target`; none when nothing changes."""
    current = broker.control_state
    check_transition(current, target)
    if current == target or (current is S.FENCED and target is S.SHUTDOWN_NOW):
        return []
    change = BrokerRegistrationChangeRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch)
    if target is S.UNFENCED:
        return [dataclasses.replace(change, fenced=FencingChange.UNFENCE)]
    if target is S.CONTROLLED_SHUTDOWN:
        return [
            dataclasses.replace(
                change, in_controlled_shutdown=ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN
            )
        ]
    # FENCED and SHUTDOWN_NOW both fence the broker (Kafka: handleBrokerFenced).
    return [dataclasses.replace(change, fenced=FencingChange.FENCE)]


def heartbeat_fast_answer(
    broker: BrokerStatus | BrokerRegistration, request: BrokerHeartbeatRequest
) -> dict[str, object] | None:
    """The answer to a heartbeat at the broker's current epoch that changes nothing, else None.

    Decided from the broker's status and the heartbeat alone: a web node, which knows neither
    whether the broker leads partitions nor the offsets the active brokers have seen, answers
    with it by itself; None sends the heartbeat to the controller (it changes the broker's state
    or offline log dirs, or only those facts of the cluster can tell). `process_heartbeat`
    decides by the same rule (`next_broker_state` starts from `state_decided_by_request`), so
    the web node's answer is the one the controller would give, with no records.
    """
    target = state_decided_by_request(broker, request)
    if target is None or transition_records(broker, target):
        return None
    if offline_log_dirs_change(broker, request) is not None:
        return None
    return heartbeat_response(broker, request, target)


def process_heartbeat(
    view: MetadataDelta,
    request: BrokerHeartbeatRequest,
    *,
    sessions: Mapping[int, BrokerSession],
    configs: ConfigView | None = None,
    max_moves: int | None = None,
) -> ControllerResult:
    broker = require_broker_epoch(view, request.broker_id, request.broker_epoch)
    target = next_broker_state(
        broker,
        request,
        has_leaderships=view.broker_has_leaderships(broker.broker_id),
        lowest_active_offset=lowest_active_offset(view, sessions),
    )
    records = transition_records(broker, target)
    more = False
    if records:
        moved, more = partition_moves(view, broker, target, configs, max_moves)
        records += moved
    dirs = offline_log_dirs_change(broker, request)
    if dirs is not None:
        records = _with_offline_log_dirs(broker, records, dirs)
    # More moves left (a broker leading more than one commit moves): the controller's fencing
    # rounds go on with them at once (`moves_pending`, a note: no field of Kafka's answer).
    notes = {"moves_pending": True} if more else {}
    return ControllerResult(records, heartbeat_response(broker, request, target), notes=notes)


def offline_log_dirs_change(
    broker: BrokerStatus | BrokerRegistration, request: BrokerHeartbeatRequest
) -> tuple[str, ...] | None:
    """The broker's offline log dirs as this heartbeat reports them (sorted, once each), or
    None when they are what the controller knows already (nothing to record)."""
    reported = tuple(sorted(set(request.offline_log_dirs)))
    return None if reported == broker.offline_log_dirs else reported


def _with_offline_log_dirs(
    broker: BrokerStatus | BrokerRegistration, records: list[Record], dirs: tuple[str, ...]
) -> list[Record]:
    """The heartbeat's records carrying its offline log dirs: on its registration change when
    it has one (the first record), else on a change record of their own."""
    if records and isinstance(records[0], BrokerRegistrationChangeRecord):
        return [dataclasses.replace(records[0], offline_log_dirs=dirs), *records[1:]]
    change = BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch, offline_log_dirs=dirs
    )
    return [change, *records]


def heartbeat_response(
    broker: BrokerStatus | BrokerRegistration,
    request: BrokerHeartbeatRequest,
    target: BrokerControlState,
) -> dict[str, object]:
    return {
        "error_code": 0,
        "error_message": None,
        "is_caught_up": request.current_metadata_offset >= broker.epoch,
        "is_fenced": target is S.FENCED,
        "should_shut_down": target is S.SHUTDOWN_NOW,
    }


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
    `continue_moves` off every broker already fenced or shutting down too."""
    leaving = sorted({*stale, *leaving_brokers(view)}) if continue_moves else stale
    if not leaving:
        return [], False
    if max_moves is None:
        return _moved_off(view, leaving, configs), False
    return moved_off_bounded(view, leaving, configs, max_moves)


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


def unregister_broker(
    view: MetadataDelta, broker_id: int, configs: ConfigView | None = None
) -> ControllerResult:
    broker = view.broker(broker_id)
    if broker is None:
        raise ApiError(
            Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered"
        )
    record = UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.epoch)
    moved = _with_canary_isolation(view, broker_id, None, _moved_off(view, [broker_id], configs))
    return ControllerResult([*moved, record], {"error_code": 0, "error_message": None})


def _require_uuid(value: str, what: str) -> None:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ApiError(
            Errors.INVALID_REGISTRATION, f"Invalid {what} {value!r}: not a UUID."
        ) from None
