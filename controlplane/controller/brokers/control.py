"""Broker registration, heartbeats and unregistration (Kafka KRaft semantics); fencing the
brokers whose session lapsed is `fencing`'s.

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

from controlplane.controller.brokers.cordoned import cordoned_log_dirs_change
from controlplane.controller.canary.rules import (
    BROKER_POD,
    BROKER_PODS,
    CANARY_BROKER_POD,
    canary_brokers_of,
    isolated,
)
from controlplane.controller.config_schema import BROKER, BROKER_POD_CONFIG, ConfigView
from controlplane.controller.env import (
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
    ReplicaOffline,
    config_view,
    has_leaderless_replica,
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
    default_log_dir,
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
    cordoned_log_dirs: tuple[str, ...] | None = None  # KIP-1066 (BrokerHeartbeat v2)


def heartbeat_request(payload: Mapping[str, Any]) -> BrokerHeartbeatRequest:
    """A BrokerHeartbeat body as the request both the web node and the controller decide on."""
    return BrokerHeartbeatRequest(
        broker_id=payload["broker_id"],
        broker_epoch=payload["broker_epoch"],
        current_metadata_offset=payload["current_metadata_offset"],
        want_fence=payload.get("want_fence", False),
        want_shut_down=payload.get("want_shut_down", False),
        offline_log_dirs=tuple(payload.get("offline_log_dirs", ())),
        cordoned_log_dirs=None
        if payload.get("cordoned_log_dirs") is None
        else tuple(payload["cordoned_log_dirs"]),
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
    check_supported_features(view.finalized_features(), request.features, request.broker_id)
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
    pod = view.config(BROKER, str(request.broker_id), BROKER_POD_CONFIG) or request.pod
    record = RegisterBrokerRecord(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        broker_epoch=view.next_offset,
        listeners=request.listeners,
        rack=request.rack,
        pod=pod,
        log_dirs=request.log_dirs,
        fenced=True,
        software_version=request.software_version,
        features=request.features,
    )
    moved: list[Record] = []
    if existing is not None:
        # A new incarnation: the old one leaves every ISR, and its offline replicas are
        # forgotten (the restarted broker reports its log dirs afresh).
        moved = moved_off(view, [request.broker_id], configs, clear_offline=True)
    records = [record, *_with_canary_isolation(view, request.broker_id, pod, moved)]
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


def moved_off(
    view: MetadataDelta,
    broker_ids: list[int],
    configs: ConfigView | None,
    *,
    clear_offline: bool = False,
    changes: PartitionChanges | None = None,
) -> list[Record]:
    """The brokers out of every ISR, what they led re-elected: the records of `changes` (new
    ones by default; given, the moves see its earlier changes and follow them)."""
    changes = changes or PartitionChanges(view)
    remove_from_isrs(
        changes, broker_ids, configs=configs or config_view(view), clear_offline=clear_offline
    )
    return list(changes.records)


def moved_off_bounded(
    view: MetadataDelta,
    broker_ids: list[int],
    configs: ConfigView | None,
    limit: int,
    changes: PartitionChanges | None = None,
) -> tuple[list[Record], bool]:
    """`moved_off`, changing at most `limit` partitions; and whether more may be left."""
    changes = changes or PartitionChanges(view)
    more = remove_from_isrs(changes, broker_ids, configs=configs or config_view(view), limit=limit)
    return list(changes.records), more


def leaving_brokers(view: MetadataDelta) -> list[int]:
    """Brokers whose partitions must move off them: fenced or in controlled shutdown."""
    return sorted(b.broker_id for b in view.all_brokers() if b.fenced or b.in_controlled_shutdown)


def partition_moves(
    view: MetadataDelta,
    broker: BrokerStatus | BrokerRegistration,
    target: BrokerControlState,
    configs: ConfigView | None,
    limit: int | None = None,
    changes: PartitionChanges | None = None,
) -> tuple[list[Record], bool]:
    """What a broker state change does to partitions (Kafka's handleBrokerFenced, -Unfenced,
    -InControlledShutdown): leaving brokers leave every ISR, an unfenced one may lead again.
    With `limit`, a leaving broker's moves stop at that many partitions; the answer's second
    part says more may be left (the controller's fencing rounds go on with them). The records
    are those of `changes` when given (the moves follow its earlier changes).

    An unfenced broker's elections are not in its heartbeat's commit: the answer says they are
    pending, and the controller's next round (at once) elects every leaderless partition a
    live replica can lead, for every broker unfenced meanwhile, in bounded commits. Kafka
    elects in the unfencing operation itself; here a storm of brokers coming back after a
    mass fencing is elected for in one bounded round, not one large commit per heartbeat (each
    of which held the controller while other brokers' sessions lapsed)."""
    changes = changes or PartitionChanges(view)
    current = broker.control_state
    if current == target or (current is S.FENCED and target is not S.UNFENCED):
        return list(changes.records), False
    if target is S.UNFENCED:
        return list(changes.records), has_leaderless_replica(view, broker.broker_id)
    if target is S.SHUTDOWN_NOW and current is S.CONTROLLED_SHUTDOWN:
        # it left every ISR when its controlled shutdown began
        return list(changes.records), False
    if limit is None:
        return moved_off(view, [broker.broker_id], configs, changes=changes), False
    return moved_off_bounded(view, [broker.broker_id], configs, limit, changes)


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
    if current is S.SHUTDOWN_NOW:  # fenced in a controlled shutdown: until it registers again
        return S.SHUTDOWN_NOW
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
    """The lowest metadata offset any active broker has reported (Kafka: lowestActiveOffset).
    Active: unfenced and not in a controlled shutdown. A leaving broker's own offset never
    holds the shutdown up: it is applying the loss of its leaderships, which takes seconds at
    a thousand partitions, and the brokers that matter are those taking them over."""
    offsets = [
        sessions[b.broker_id].metadata_offset if b.broker_id in sessions else -1
        for b in view.all_brokers()
        if not b.fenced and not b.in_controlled_shutdown
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
    if cordoned_log_dirs_change(broker, request.cordoned_log_dirs) is not None:
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
    changes = PartitionChanges(view)
    dirs = offline_log_dirs_change(broker, request)
    if dirs is not None:  # first: the state change's moves then see those replicas offline
        offline_dir_moves(changes, broker, dirs, configs)
    more = False
    if records:
        _, more = partition_moves(view, broker, target, configs, max_moves, changes)
    records += changes.records
    if dirs is not None:
        records = _with_offline_log_dirs(broker, records, dirs)
    cordoned = cordoned_log_dirs_change(broker, request.cordoned_log_dirs, view.metadata_version)
    if cordoned is not None:
        records = _with_dirs_change(broker, records, cordoned_log_dirs=cordoned)
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


def offline_dir_moves(
    changes: PartitionChanges,
    broker: BrokerRegistration,
    offline_dirs: tuple[str, ...],
    configs: ConfigView | None,
) -> None:
    """KIP-858, as Kafka's controller handles a heartbeat's offline log dirs: every replica of
    the broker in a dir that went offline with this heartbeat becomes OfflineReplica (out of
    the ISR and its leadership), through the same change as AlterReplicaState's. A replica's
    dir is the one the broker assigned it, else its broker's default (its only dir; a broker
    with several that has not placed it yet has it nowhere, UNASSIGNED)."""
    failed = frozenset(offline_dirs) - frozenset(broker.offline_log_dirs)
    if not failed:
        return
    view = changes.view
    broker_id = broker.broker_id
    default = default_log_dir(broker.log_dirs)
    on_failed = []
    for tp in sorted(view.partitions_with_replica(broker_id)):
        partition = view.partition(tp)
        assert partition is not None
        if broker_id in partition.offline_replicas:
            continue
        dirs = partition.directories
        where = dirs[partition.replicas.index(broker_id)] if dirs else default
        if where in failed:
            on_failed.append((tp, partition))
    if not on_failed:
        return
    offline = ReplicaOffline(view, broker_id, configs or config_view(view))
    for tp, partition in on_failed:
        changes.add(offline.change(tp, partition))


def _with_offline_log_dirs(
    broker: BrokerStatus | BrokerRegistration, records: list[Record], dirs: tuple[str, ...]
) -> list[Record]:
    return _with_dirs_change(broker, records, offline_log_dirs=dirs)


def _with_dirs_change(
    broker: BrokerStatus | BrokerRegistration,
    records: list[Record],
    *,
    offline_log_dirs: tuple[str, ...] | None = None,
    cordoned_log_dirs: tuple[str, ...] | None = None,
) -> list[Record]:
    """The heartbeat's records carrying its dirs' news: on its registration change when it has
    one (the first record), else on a change record of their own."""
    news: dict[str, Any] = {}
    if offline_log_dirs is not None:
        news["offline_log_dirs"] = offline_log_dirs
    if cordoned_log_dirs is not None:
        news["cordoned_log_dirs"] = cordoned_log_dirs
    if records and isinstance(records[0], BrokerRegistrationChangeRecord):
        return [dataclasses.replace(records[0], **news), *records[1:]]
    change = BrokerRegistrationChangeRecord(broker.broker_id, broker.epoch)
    return [dataclasses.replace(change, **news), *records]


def heartbeat_response(
    broker: BrokerStatus | BrokerRegistration,
    request: BrokerHeartbeatRequest,
    target: BrokerControlState,
) -> dict[str, object]:
    return {
        "error_code": 0,
        "error_message": None,
        "is_caught_up": request.current_metadata_offset >= broker.epoch,
        "is_fenced": target in (S.FENCED, S.SHUTDOWN_NOW),  # Kafka's BrokerControlState.fenced
        "should_shut_down": target is S.SHUTDOWN_NOW,
    }


def unregister_broker(
    view: MetadataDelta, broker_id: int, configs: ConfigView | None = None
) -> ControllerResult:
    broker = view.broker(broker_id)
    if broker is None:
        raise ApiError(
            Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered"
        )
    record = UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.epoch)
    moved = _with_canary_isolation(view, broker_id, None, moved_off(view, [broker_id], configs))
    return ControllerResult([*moved, record], {"error_code": 0, "error_message": None})


def _require_uuid(value: str, what: str) -> None:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ApiError(
            Errors.INVALID_REGISTRATION, f"Invalid {what} {value!r}: not a UUID."
        ) from None
