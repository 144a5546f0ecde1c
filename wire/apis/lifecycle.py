"""The broker lifecycle on the controller's listeners, as a stock Kafka broker sends it:
BrokerRegistration and BrokerHeartbeat, translated to the REST internal API's bodies, checked
by its serializers and run by its services (the same core rules, fencing, sessions and
metadata log as the REST door; a broker on the wire and one on REST share a cluster)."""

from __future__ import annotations

from typing import Any

from kio.index import load_response_schema

from brokers import services
from brokers.api.serializers import BrokerHeartbeatSerializer, BrokerRegistrationSerializer
from controlplane.controller.errors import ApiError, Errors
from controlplane.runtime.conversation import RequestContext
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


def validated(serializer: Any, body: dict[str, Any]) -> dict[str, Any]:
    """The REST serializer's checks on the translated body: INVALID_REQUEST naming the field."""
    checked = serializer(data=body)
    if not checked.is_valid():
        field, problems = next(iter(checked.errors.items()))
        raise ApiError(Errors.INVALID_REQUEST, f"{field}: {problems}")
    return dict(checked.validated_data)


def answer(request: WireRequest, data: dict[str, Any]) -> Any:
    return from_data(
        load_response_schema(request.api_key, request.api_version),
        {**data, "throttle_time": data.get("throttle_time_ms", 0)},
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


@wire_api("BrokerHeartbeat", BROKER_HEARTBEAT, (0, 1), roles=CONTROLLER_ONLY)
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
