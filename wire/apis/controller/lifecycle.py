"""The broker lifecycle on the controller's listeners, as a stock Kafka broker sends it:
BrokerRegistration and BrokerHeartbeat, translated to the REST internal API's bodies, checked
by its serializers and run by its services (the same core rules, fencing, sessions and
metadata log as the REST door; a broker on the wire and one on REST share a cluster)."""

from __future__ import annotations

from typing import Any

from kio.index import load_response_schema
from rest_framework.exceptions import ValidationError

from brokers import services
from brokers.api.serializers import BrokerHeartbeatSerializer, BrokerRegistrationSerializer
from brokers.selectors import registered_epochs
from controlplane.api.fields import StrictSerializer
from controlplane.controller.errors import ApiError, Errors
from controlplane.runtime.conversation import RequestContext
from replicas import services as replica_services
from replicas.api.serializers import AlterPartitionSerializer
from replicas.selectors import topic_names_by_id
from wire.apis.base import CONTROLLER_ONLY, WireRequest, wire_api
from wire.convert import from_data

BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63
# Kafka's SecurityProtocol ids.
SECURITY_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def context_of(request: WireRequest) -> RequestContext:
    caller = request.caller
    return RequestContext(
        principal=caller.principal.principal,
        client_id=caller.client_id[:255],
        client_host=caller.host,
        request_id=caller.request_id,
    )


def validated(serializer: type[StrictSerializer], body: dict[str, Any]) -> dict[str, Any]:
    """The REST serializer's checks on the translated body (its fast path, as the REST route
    takes: a leader's AlterPartition names hundreds of partitions): INVALID_REQUEST naming the
    field."""
    try:
        return serializer.validated(body)
    except ValidationError as error:
        detail = error.detail
        field, problems = next(iter(detail.items())) if isinstance(detail, dict) else ("", detail)
        raise ApiError(Errors.INVALID_REQUEST, f"{field}: {problems}") from None


def _cordoned(values: Any) -> dict[str, list[str]]:
    return {} if values is None else {"cordoned_log_dirs": [str(value) for value in values]}


def answer(request: WireRequest, data: dict[str, Any]) -> Any:
    return from_data(
        load_response_schema(request.api_key, request.api_version),
        {**data, "throttle_time": max(data.get("throttle_time_ms", 0), request.throttle_time_ms)},
    )


def refused(request: WireRequest, error: ApiError, **extra: Any) -> Any:
    return answer(request, {"error_code": int(error.error), **extra})


@wire_api("BrokerRegistration", BROKER_REGISTRATION, (0, 4), roles=CONTROLLER_ONLY)
def broker_registration(request: WireRequest) -> Any:
    body = request.body
    try:
        payload = validated(
            BrokerRegistrationSerializer,
            {
                "broker_id": int(body.broker_id),
                "cluster_id": body.cluster_id,
                "incarnation_id": str(body.incarnation_id),
                "listeners": [
                    {
                        "name": listener.name,
                        "host": listener.host,
                        "port": int(listener.port),
                        "security_protocol": SECURITY_PROTOCOL_NAMES.get(
                            int(listener.security_protocol), "UNKNOWN"
                        ),
                    }
                    for listener in body.listeners
                ],
                "rack": body.rack,
                # A stock broker sends no version in its registration; its connection's
                # ApiVersions said what it runs (KIP-1095's rollout guard reads it).
                "software_version": request.caller.client_software_version or None,
                "log_dirs": [str(d) for d in getattr(body, "log_dirs", ())],
                "features": [
                    {
                        "name": f.name,
                        "min_supported_version": int(f.min_supported_version),
                        "max_supported_version": int(f.max_supported_version),
                    }
                    for f in body.features
                ],
            },
        )
        payload["listeners"] = [dict(item) for item in payload["listeners"]]
        payload["features"] = [dict(item) for item in payload["features"]]
        data = services.broker_register(payload=payload, context=context_of(request))
    except ApiError as error:
        return refused(request, error, broker_epoch=-1)
    return answer(request, {**data, "broker_epoch": data.get("broker_epoch", -1)})


@wire_api("BrokerHeartbeat", BROKER_HEARTBEAT, (0, 2), roles=CONTROLLER_ONLY)
def broker_heartbeat(request: WireRequest) -> Any:
    body = request.body
    try:
        payload = validated(
            BrokerHeartbeatSerializer,
            {
                "broker_id": int(body.broker_id),
                "broker_epoch": int(body.broker_epoch),
                "current_metadata_offset": int(body.current_metadata_offset),
                "want_fence": bool(body.want_fence),
                "want_shut_down": bool(body.want_shut_down),
                "offline_log_dirs": [str(d) for d in getattr(body, "offline_log_dirs", ())],
                # KIP-1066 (v2, from metadata.version 4.3-IV0): only when the broker says them
                **_cordoned(getattr(body, "cordoned_log_dirs", None)),
            },
        )
        data = services.broker_heartbeat(payload=payload, context=context_of(request))
    except ApiError as error:
        return refused(request, error, is_fenced=True)
    return answer(
        request,
        {
            "error_code": data["error_code"],
            "is_caught_up": bool(data.get("is_caught_up", False)),
            "is_fenced": bool(data.get("is_fenced", True)),
            "should_shut_down": bool(data.get("should_shut_down", False)),
        },
    )


ALLOCATE_PRODUCER_IDS = 67


@wire_api("AllocateProducerIds", ALLOCATE_PRODUCER_IDS, (0, 0), roles=CONTROLLER_ONLY)
def allocate_producer_ids(request: WireRequest) -> Any:
    body = request.body
    try:
        data = services.producer_ids_allocate(
            broker_id=int(body.broker_id),
            broker_epoch=int(body.broker_epoch),
            context=context_of(request),
        )
    except ApiError as error:
        return refused(request, error, producer_id_start=-1, producer_id_len=0)
    if data.get("error_code"):
        return refused(
            request,
            ApiError(Errors(data["error_code"]), data.get("error_message")),
            producer_id_start=-1,
            producer_id_len=0,
        )
    return answer(request, data)


ALTER_PARTITION = 56


@wire_api("AlterPartition", ALTER_PARTITION, (2, 3), roles=CONTROLLER_ONLY)
def alter_partition(request: WireRequest) -> Any:
    """Kafka's AlterPartition by topic id (v2+), translated to the REST body's topic names;
    an id this cluster does not know is that topic's UNKNOWN_TOPIC_ID. v3's ISR members carry
    their broker epochs (KIP-903): a member whose epoch is not its registration's is
    INELIGIBLE_REPLICA, as Kafka's controller answers it."""
    body = request.body
    named = [str(t.topic_id) for t in body.topics if t.topic_id is not None]
    names = topic_names_by_id(topic_ids=named)
    epochs = registered_epochs()
    unknown: dict[str | None, list[dict[str, Any]]] = {}
    ineligible: dict[str, list[dict[str, Any]]] = {}
    asked = []
    for topic in body.topics:
        # Kafka's zero Uuid (kio's None) names no topic: UNKNOWN_TOPIC_ID, as any unknown id.
        topic_id = None if topic.topic_id is None else str(topic.topic_id)
        if topic_id is None or topic_id not in names:
            unknown[topic_id] = [
                _partition_refusal(int(p.partition_index), Errors.UNKNOWN_TOPIC_ID)
                for p in topic.partitions
            ]
            continue
        partitions = []
        for p in topic.partitions:
            isr, stale = _isr_of(p, epochs)
            if stale:
                ineligible.setdefault(topic_id, []).append(
                    _partition_refusal(int(p.partition_index), Errors.INELIGIBLE_REPLICA)
                )
                continue
            partitions.append(
                {
                    "partition_index": int(p.partition_index),
                    "leader_epoch": int(p.leader_epoch),
                    "new_isr": isr,
                    "partition_epoch": int(p.partition_epoch),
                    "leader_recovery_state": int(p.leader_recovery_state),
                }
            )
        asked.append({"topic_name": names[topic_id], "partitions": partitions})
    try:
        payload = validated(
            AlterPartitionSerializer,
            {
                "broker_id": int(body.broker_id),
                "broker_epoch": int(body.broker_epoch),
                "topics": asked,
            },
        )
        payload["topics"] = [
            {"topic_name": t["topic_name"], "partitions": [dict(p) for p in t["partitions"]]}
            for t in payload["topics"]
        ]
        data = replica_services.partition_alter(payload=payload, context=context_of(request))
    except ApiError as error:
        return refused(request, error, topics=[])
    if data.get("error_code"):
        return answer(request, {"error_code": data["error_code"], "topics": []})
    ids = {name: topic_id for topic_id, name in names.items()}
    topics: list[dict[str, Any]] = [
        {
            "topic_id": ids[t["topic_name"]],
            "partitions": [{**p, "leader_recovery_state": 0} for p in t["partitions"]]
            + ineligible.get(ids[t["topic_name"]], []),
        }
        for t in data.get("topics", [])
    ]
    topics += [{"topic_id": topic_id, "partitions": items} for topic_id, items in unknown.items()]
    return answer(request, {"error_code": 0, "topics": topics})


def _isr_of(partition: Any, epochs: dict[int, int]) -> tuple[list[int], bool]:
    """The new ISR's broker ids, and whether a member's epoch (v3) is not its registration's."""
    members = getattr(partition, "new_isr_with_epochs", None)
    if members is None:
        return [int(b) for b in partition.new_isr], False
    isr = [int(m.broker_id) for m in members]
    stale = any(
        int(m.broker_epoch) != -1 and epochs.get(int(m.broker_id)) != int(m.broker_epoch)
        for m in members
    )
    return isr, stale


def _partition_refusal(index: int, error: Errors) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": int(error),
        "leader_id": -1,
        "leader_epoch": -1,
        "isr": [],
        "leader_recovery_state": 0,
        "partition_epoch": -1,
    }


ASSIGN_REPLICAS_TO_DIRS = 73


@wire_api("AssignReplicasToDirs", ASSIGN_REPLICAS_TO_DIRS, (0, 0), roles=CONTROLLER_ONLY)
def assign_replicas_to_dirs(request: WireRequest) -> Any:
    """A broker with several log dirs places its replicas (KIP-858): the controller keeps each
    replica's dir in the partition's records and answers per partition, as Kafka's does."""
    body = request.body
    payload = {
        "broker_id": int(body.broker_id),
        "broker_epoch": int(body.broker_epoch),
        "directories": [
            {
                "id": str(directory.id_),
                "topics": [
                    {
                        "topic_id": str(topic.topic_id),
                        "partitions": [
                            {"partition_index": int(p.partition_index)} for p in topic.partitions
                        ],
                    }
                    for topic in directory.topics
                ],
            }
            for directory in body.directories
        ],
    }
    try:
        data = replica_services.replicas_assign_to_dirs(
            payload=payload, context=context_of(request)
        )
    except ApiError as error:
        return refused(request, error, directories=[])
    if data.get("error_code"):
        return answer(request, {"error_code": data["error_code"], "directories": []})
    directories = [{**d, "id_": d["id"]} for d in data["directories"]]
    return answer(request, {"error_code": 0, "directories": directories})
