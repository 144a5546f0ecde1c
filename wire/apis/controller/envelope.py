"""KIP-590's Envelope on the wire: a broker forwards a client's admin write, header and all.

The same path as the REST Envelope (shell/api/envelope.py, whose checks this reuses): the sender
must hold CLUSTER_ACTION (refusals counted and audited as the Envelope); the inner request must
be one Kafka forwards; the original principal is read back as Kafka's DefaultKafkaPrincipalBuilder
wrote it (a version-prefixed DefaultPrincipalData) and the client address as Kafka sends it (the
raw 4 or 16 address bytes). The inner request then runs through the listener's own handler of
its API as the original principal, the forwarding broker noted, so it is authorized, applied and
audited as itself; its encoded response (header included) is the Envelope's `response_data`.
NOT_CONTROLLER and REQUEST_TIMED_OUT are the Envelope's own errors, so the broker retries.
"""

from __future__ import annotations

import dataclasses
import io
import ipaddress
import logging
import struct
import time
from typing import Any

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from audit.resources import envelope as envelope_resources
from audit.services import audit_event_record
from controlplane.controller.api_keys import KAFKA_FORWARDABLE
from controlplane.controller.errors import ApiError, Errors
from controlplane.http_errors import HTTP_STATUS, error_body
from controlplane.principals import AuthenticatedPrincipal
from shell.api.envelope import (
    RETRIED_BY_THE_SENDER,
    authorize_sender,
    forwarded_caller,
    inner_api_name,
    principal_decode,
)
from wire.apis.base import CONTROLLER_ONLY, WIRE_APIS, WireApi, WireRequest, wire_api
from wire.apis.unsupported import unsupported_answer
from wire.lengths import check_lengths
from wire.protocol import (
    SIZE,
    InvalidRequest,
    RequestHeader,
    encode_body,
    encode_response,
    leading_items,
    peek_header,
    read_body,
    read_header,
)

logger = logging.getLogger(__name__)

_PRINCIPAL_VERSION = struct.Struct(">h")
MAX_NODE_ID = 2**31 - 1  # node ids are Kafka int32s
_RETRIED = frozenset(int(e) for e in RETRIED_BY_THE_SENDER)


def forwarding_broker_id(client_id: str) -> int | None:
    """The forwarding broker's id, from its connection: a Kafka broker's channel to the
    controller (NodeToControllerChannelManager) sends its node id as its client id. None for a
    sender whose client id is not one (the principal is noted in any case)."""
    if not (client_id.isascii() and client_id.isdigit() and len(client_id) <= 10):
        return None
    node_id = int(client_id)
    return node_id if node_id <= MAX_NODE_ID else None


def decode_principal(data: bytes | None) -> AuthenticatedPrincipal:
    """Kafka's KafkaPrincipalSerde bytes: int16 version, then DefaultPrincipalData of it."""
    failure = ApiError(
        Errors.PRINCIPAL_DESERIALIZATION_FAILURE, "request_principal: not a DefaultPrincipalData."
    )
    if data is None or len(data) < _PRINCIPAL_VERSION.size:
        raise failure
    (version,) = _PRINCIPAL_VERSION.unpack_from(data)
    if version != DefaultPrincipalData.__version__:
        raise failure
    try:
        check_lengths(DefaultPrincipalData, data, _PRINCIPAL_VERSION.size)
        decoded, _ = entity_reader(DefaultPrincipalData)(memoryview(data), _PRINCIPAL_VERSION.size)
    except Exception:  # any byte string at all may have been sent
        raise failure from None
    return principal_decode(
        {
            "type": decoded.type_,
            "name": decoded.name,
            "token_authenticated": decoded.token_authenticated,
        }
    )


def encode_principal(principal: str, *, token_authenticated: bool = False) -> bytes:
    """What a forwarding broker sends for `principal` ("User:name")."""
    kind, _, name = principal.partition(":")
    buffer = io.BytesIO()
    buffer.write(_PRINCIPAL_VERSION.pack(DefaultPrincipalData.__version__))
    entity_writer(DefaultPrincipalData)(
        buffer,
        DefaultPrincipalData(type_=kind, name=name, token_authenticated=token_authenticated),
    )
    return buffer.getvalue()


def _client_address(data: bytes) -> str:
    try:
        return str(ipaddress.ip_address(bytes(data)))
    except ValueError:
        raise ApiError(
            Errors.INVALID_REQUEST, "Failed to parse client address from envelope."
        ) from None


def _inner(data: bytes) -> tuple[RequestHeader, Any, WireApi | None]:
    """The forwarded request header and body, read as the listener reads a frame (Kafka's
    parseRequest: INVALID_REQUEST for anything it cannot read), and the API serving it here:
    None for one a Kafka broker forwards that this controller does not serve (at that version),
    answered UNSUPPORTED_VERSION (`wire.apis.unsupported`)."""
    try:
        api_key, api_version, _ = peek_header(data)
    except InvalidRequest:
        raise ApiError(Errors.INVALID_REQUEST, "request_data: no request header.") from None
    if api_key not in KAFKA_FORWARDABLE:
        raise ApiError(
            Errors.INVALID_REQUEST, f"{inner_api_name(api_key)} cannot be forwarded in an Envelope."
        )
    served = WIRE_APIS.get(api_key)
    if served is not None and not served.min_version <= api_version <= served.max_version:
        served = None
    name = served.name if served is not None else KAFKA_FORWARDABLE[api_key]
    try:
        header = read_header(data)
        bound = served.max_items if served is not None else None
        items = leading_items(header, data) if bound is not None else 0
        if bound is not None and items > bound:
            raise ApiError(
                Errors.INVALID_REQUEST,
                f"{name} with {items} items: at most {bound} per request.",
            )
        return header, read_body(header, data), served
    except InvalidRequest:
        if served is None:  # not even readable here: the Envelope's own UNSUPPORTED_VERSION
            raise ApiError(
                Errors.UNSUPPORTED_VERSION, f"{name} v{api_version} is not served here."
            ) from None
        raise ApiError(
            Errors.INVALID_REQUEST, f"request_data: not a {name} v{api_version} request."
        ) from None


def _retried_by_the_sender(response: Any) -> int | None:
    """NOT_CONTROLLER or REQUEST_TIMED_OUT when that is the inner request's whole answer (the
    whole-request error every item carries): the broker retries the Envelope.

    Walks the response entity itself and stops at the first code that rules it out (any other
    code, or a second one): an answered request is known from its first item, whatever its size.
    """
    found: int | None = None
    pending: list[Any] = [response]
    while pending:
        value = pending.pop()
        if isinstance(value, (list, tuple)):
            pending.extend(reversed(value))
            continue
        if not dataclasses.is_dataclass(value):
            continue
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if field.name == "error_code" and isinstance(item, int):
                if int(item) not in _RETRIED or found not in (None, int(item)):
                    return None
                found = int(item)
            elif isinstance(item, (list, tuple)) or dataclasses.is_dataclass(item):
                pending.append(item)
    return found


def _encoded(header: RequestHeader, response: Any) -> bytes:
    """The inner response as Kafka's envelope carries it: its header and body, unframed (a
    handler may answer its body already encoded)."""
    body = response if isinstance(response, bytes) else encode_body(response)
    frame = encode_response(header.api_key, header.api_version, header.correlation_id, body)
    return frame[SIZE.size :]


def _refused(request: WireRequest, error: ApiError, inner_api: str, started: float) -> Any:
    """The Envelope's own error, audited as the Envelope (as the REST one audits its refusals)."""
    caller = request.caller
    answer = error_body(error.error, error.message)
    try:
        audit_event_record(
            api="Envelope",
            namers=envelope_resources,
            principal=caller.name,
            client_id=caller.client_id,
            client_host=caller.host,
            request_id=caller.request_id,
            http_status=HTTP_STATUS.get(error.error, 400),
            body=None,
            answer=answer,
            notes={"inner_api": inner_api},
            first_offset=None,
            last_offset=None,
            forwarding=None,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    except Exception:  # the answer stands: a refusal that could not be audited is logged
        logger.exception("could not audit a refused Envelope")
    return EnvelopeResponse(response_data=None, error_code=ErrorCode(int(error.error)))


@wire_api("Envelope", 58, (0, 0), roles=CONTROLLER_ONLY)
def envelope(request: WireRequest) -> Any:
    started = time.perf_counter()
    sender = request.caller.principal
    inner_api = ""
    try:
        data = bytes(request.body.request_data)
        if len(data) >= 2:  # named in the audit row of a refusal, as the REST Envelope does
            inner_api = inner_api_name(struct.unpack_from(">h", data)[0])
        bound = authorize_sender(sender, request.caller.host)
        client_host = _client_address(request.body.client_host_address)
        principal = decode_principal(request.body.request_principal)
        header, body, served = _inner(data)
        if served is None:
            name = KAFKA_FORWARDABLE[header.api_key]
            unsupported = unsupported_answer(header.api_key, header.api_version, body, name)
            if unsupported is None:
                raise ApiError(
                    Errors.UNSUPPORTED_VERSION, f"{name} v{header.api_version} is not served here."
                )
            return EnvelopeResponse(
                response_data=_encoded(header, unsupported), error_code=ErrorCode.none
            )
    except ApiError as error:
        return _refused(request, error, inner_api, started)
    caller = forwarded_caller(
        principal,
        sender,
        sender_host=request.caller.host,
        client_host=client_host,
        client_id=header.client_id,
        request_id=request.caller.request_id,
        broker_id=forwarding_broker_id(request.caller.client_id) if bound is None else bound,
        kafka_protocol=True,
    )
    forwarded = WireRequest(
        api_key=header.api_key,
        api_version=header.api_version,
        correlation_id=header.correlation_id,
        body=body,
        caller=caller,
        advertised=request.advertised,
        listener=request.listener,
        listener_name=request.listener_name,
        listener_role=request.listener_role,
    )
    try:
        response = served.handler(forwarded)
    except Exception:  # the broker is answered, never left waiting
        logger.exception("forwarded %s failed", inner_api)
        return EnvelopeResponse(response_data=None, error_code=ErrorCode.unknown_server_error)
    retried = _retried_by_the_sender(response)
    if retried is not None:  # ran and was audited as itself: not audited as an Envelope
        return EnvelopeResponse(response_data=None, error_code=ErrorCode(retried))
    return EnvelopeResponse(response_data=_encoded(header, response), error_code=ErrorCode.none)
