"""Controller events by API name: decode the payload, run the pure handler.

An event is plain JSON (it crosses the Celery queue). Each API registers a handler that turns the
current metadata view, the payload and the controller's environment into a ControllerResult.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller import acls, brokers, replication, topics
from controlplane.controller.configs import ConfigView
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.partitions import PartitionChanges
from controlplane.controller.records import Listener
from controlplane.controller.result import ControllerResult


@dataclasses.dataclass(frozen=True, slots=True)
class ControllerEnv:
    """What a handler may know besides metadata: the clock and the heartbeat tracker."""

    now_ms: int
    activated_ms: int
    sessions: Mapping[int, brokers.BrokerSession]
    session_timeout_ms: int = brokers.DEFAULT_SESSION_TIMEOUT_MS
    # Static broker configs (num.partitions, default.replication.factor, ...) from settings.
    static_configs: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def configs(self, view: MetadataDelta) -> ConfigView:
        return ConfigView(view.config, self.static_configs)


logger = logging.getLogger("controlplane.controller")


class ReplayFailed(Exception):
    """A handler answered records that do not replay (a controller bug). Part of them may be in
    the delta already, so the delta can no longer be committed; the caller starts over without
    this event."""

    def __init__(self, api: str, cause: Exception) -> None:
        super().__init__(f"{api}: {cause}")
        self.api = api
        self.index = -1


Handler = Callable[[MetadataDelta, Mapping[str, Any], ControllerEnv], ControllerResult]

HANDLERS: dict[str, Handler] = {}
# APIs whose retries are naturally idempotent (their outcome follows from state alone).
STATE_IDEMPOTENT_APIS: set[str] = set()


def handler(api: str, *, state_idempotent: bool = False) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[api] = fn
        if state_idempotent:
            STATE_IDEMPOTENT_APIS.add(api)
        return fn

    return register


def dispatch(
    api: str, view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    try:
        fn = HANDLERS[api]
    except KeyError:
        raise ApiError(Errors.INVALID_REQUEST, f"Unknown controller API {api!r}") from None
    return fn(view, payload, env)


def run_event(
    delta: MetadataDelta,
    api: str,
    payload: Mapping[str, Any],
    env: ControllerEnv,
    contacts: list[int] | None = None,
) -> dict[str, Any]:
    """Handle one event against the delta and replay its records into it; returns the response.

    A refused event (ApiError) leaves the delta untouched and answers its error. Brokers whose
    session starts with this event are appended to `contacts` and, when `env.sessions` is a
    dict, recorded in it so later events of the same batch see them.
    """
    try:
        result = dispatch(api, delta, payload, env)
    except ApiError as error:
        return error.as_fields()
    except Exception:  # a handler bug: this event fails, the delta was not touched
        logger.exception("controller handler for %s failed", api)
        return ApiError(
            Errors.UNKNOWN_SERVER_ERROR, f"The controller could not handle {api}."
        ).as_fields()
    try:
        for record in result.records:
            delta.replay(record)
    except ValueError as error:
        raise ReplayFailed(api, error) from error
    for broker_id in result.contacts:
        if isinstance(env.sessions, dict):
            env.sessions[broker_id] = brokers.BrokerSession(env.now_ms, -1)
        if contacts is not None:
            contacts.append(broker_id)
    return result.response


@handler("BrokerRegistration")
def _broker_registration(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    request = brokers.BrokerRegistrationRequest(
        broker_id=payload["broker_id"],
        cluster_id=payload["cluster_id"],
        incarnation_id=payload["incarnation_id"],
        listeners=tuple(Listener(**item) for item in payload.get("listeners", ())),
        rack=payload.get("rack"),
        pod=payload.get("pod") or brokers.BROKER_POD,
        log_dirs=tuple(payload.get("log_dirs", ())),
    )
    return brokers.register_broker(
        view,
        request,
        sessions=env.sessions,
        now_ms=env.now_ms,
        session_timeout_ms=env.session_timeout_ms,
        configs=env.configs(view),
    )


@handler("BrokerHeartbeat", state_idempotent=True)
def _broker_heartbeat(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return brokers.process_heartbeat(
        view, heartbeat_request(payload), sessions=env.sessions, configs=env.configs(view)
    )


def heartbeat_request(payload: Mapping[str, Any]) -> brokers.BrokerHeartbeatRequest:
    return brokers.BrokerHeartbeatRequest(
        broker_id=payload["broker_id"],
        broker_epoch=payload["broker_epoch"],
        current_metadata_offset=payload["current_metadata_offset"],
        want_fence=payload.get("want_fence", False),
        want_shut_down=payload.get("want_shut_down", False),
        offline_log_dirs=tuple(payload.get("offline_log_dirs", ())),
    )


@handler("FenceStaleBrokers", state_idempotent=True)
def _fence_stale_brokers(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return brokers.fence_stale_brokers(
        view,
        sessions=env.sessions,
        now_ms=env.now_ms,
        session_timeout_ms=env.session_timeout_ms,
        activated_ms=env.activated_ms,
        configs=env.configs(view),
    )


@handler("UnregisterBroker")
def _unregister_broker(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return brokers.unregister_broker(view, payload["broker_id"], env.configs(view))


@handler("CreateAcls")
def _create_acls(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return acls.create_acls(view, payload["creations"])


def _partition_changes(answer: tuple[PartitionChanges, dict[str, Any]]) -> ControllerResult:
    changes, response = answer
    return ControllerResult(list(changes.records), response)


@handler("CreateTopics")
def _create_topics(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = topics.create_topics(view, payload, configs=env.configs(view))
    return ControllerResult(records, response)


@handler("DeleteTopics")
def _delete_topics(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = topics.delete_topics(view, payload)
    return ControllerResult(records, response)


@handler("CreatePartitions")
def _create_partitions(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = topics.create_partitions(view, payload)
    return ControllerResult(records, response)


@handler("ElectLeaders")
def _elect_leaders(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(
        replication.elect_leaders(
            view,
            election_type=payload["election_type"],
            topic_partitions=payload.get("topic_partitions"),
            configs=env.configs(view),
        )
    )


@handler("AlterPartition")
def _alter_partition(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(
        replication.alter_partition(
            view,
            broker_id=payload["broker_id"],
            broker_epoch=payload["broker_epoch"],
            topics=payload["topics"],
            configs=env.configs(view),
        )
    )


@handler("AlterReplicaState")
def _alter_replica_state(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(
        replication.alter_replica_state(view, payload, configs=env.configs(view))
    )


@handler("RebalanceLeaders", state_idempotent=True)
def _rebalance_leaders(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    return _partition_changes(replication.rebalance_leaders(view, configs=env.configs(view)))


# Handlers of later capabilities register themselves when imported (kept out of this file so
# each capability owns its module).
from controlplane.controller import acl_rpcs, config_rpcs, quota_rpcs, token_rpcs  # noqa: E402, F401
