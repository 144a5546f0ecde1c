"""KIP-590's Envelope: a broker redirects a client's admin write to the controller.

The sender must hold CLUSTER_ACTION on the cluster (a client pretending to be a broker is
refused, and counted). The inner request then runs through `controlplane.rpc.execute` as the
original principal, as its public API runs it: validated, authorized, sent to the controller and
audited as that principal, with the forwarding broker noted. Inner errors travel inside
`response_data`; NOT_CONTROLLER and REQUEST_TIMED_OUT are the envelope's own, so the broker
retries or gives up.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpResponseBase
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit.api.mixins import AuditedRpcView
from audit.resources import envelope as envelope_resources
from brokers.identity import bound_broker_id
from brokers.models import Broker
from controlplane.api import responses
from controlplane.api.context import principal_of
from controlplane.api.fields import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    documented,
)
from controlplane.api.permissions import IsPrincipal
from controlplane.authz import client_host, is_authorized
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.api_keys import ADMIN_APIS_BY_KEY, KAFKA_FORWARDABLE, ApiKey
from controlplane.controller.errors import ApiError, Errors
from controlplane.http_errors import HTTP_STATUS, error_body
from controlplane.metrics import FORWARDING
from controlplane.principals import AuthenticatedPrincipal, principal_forwarded
from controlplane.rpc import REGISTRY, Caller, execute
from controlplane.runtime.conversation import Forwarding

INT16_MAX = 32767
INT32_MAX = 2**31 - 1
PRINCIPAL_NAME_MAX = 255
# No control character (C0, C1, DEL, line and paragraph separators): what the schema says too.
PRINTABLE_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$"
PRINTABLE_NAME = re.compile("^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$")
PRINCIPAL_FIELDS = frozenset({"type", "name", "token_authenticated"})
RETRIED_BY_THE_SENDER = frozenset({Errors.NOT_CONTROLLER, Errors.REQUEST_TIMED_OUT})


FORWARDABLE_KEYS = sorted(k for k, api in ADMIN_APIS_BY_KEY.items() if api.forwardable)


class RequestHeaderSerializer(StrictSerializer):
    # Others are INVALID_REQUEST ("cannot be forwarded in an Envelope"), as Kafka answers.
    request_api_key = documented(
        StrictIntegerField(min_value=0, max_value=INT16_MAX), enum=FORWARDABLE_KEYS
    )
    request_api_version = StrictIntegerField(min_value=0, max_value=INT16_MAX)
    client_id = StrictCharField(
        max_length=255, allow_blank=True, allow_null=True, required=False, default=""
    )
    correlation_id = StrictIntegerField(min_value=-INT32_MAX - 1, max_value=INT32_MAX)


class EnvelopeSerializer(StrictSerializer):
    request_header = RequestHeaderSerializer()
    request_data = documented(serializers.JSONField(), type="object")  # the inner RPC's body
    # Decoded by the view: an undecodable principal is PRINCIPAL_DESERIALIZATION_FAILURE.
    request_principal = documented(
        serializers.JSONField(),
        type="object",
        required=["type", "name"],
        additionalProperties=False,
        properties={
            "type": {"type": "string", "enum": ["User"]},
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": PRINCIPAL_NAME_MAX,
                "pattern": PRINTABLE_PATTERN,
            },
            "token_authenticated": {"type": "boolean"},
        },
    )
    client_host_address = StrictCharField(max_length=64, allow_blank=True, trim_whitespace=False)
    # Which broker redirected it (the control plane's addition, for the audit trail).
    forwarding_broker_id = StrictIntegerField(
        min_value=0, max_value=INT32_MAX, required=False, allow_null=True, default=None
    )


def principal_decode(value: Any) -> AuthenticatedPrincipal:
    """The original principal, as Kafka's KafkaPrincipalSerde would read it back."""

    def failure(why: str) -> ApiError:
        return ApiError(Errors.PRINCIPAL_DESERIALIZATION_FAILURE, f"request_principal: {why}")

    if not isinstance(value, dict) or not set(value) <= PRINCIPAL_FIELDS:
        raise failure("expected an object with type, name and token_authenticated.")
    kind, name = value.get("type"), value.get("name")
    token_authenticated = value.get("token_authenticated", False)
    if kind != "User":
        raise failure(f"unknown principal type {kind!r} (only User).")
    if not isinstance(name, str) or not 0 < len(name) <= PRINCIPAL_NAME_MAX:
        raise failure(f"the name must be a string of 1 to {PRINCIPAL_NAME_MAX} characters.")
    if not PRINTABLE_NAME.fullmatch(name):
        raise failure("the name has control characters.")
    if not isinstance(token_authenticated, bool):
        raise failure("token_authenticated must be true or false.")
    return principal_forwarded(name, token_authenticated=token_authenticated)


def authorize_sender(sender: AuthenticatedPrincipal, host: str) -> int | None:
    """Only brokers (CLUSTER_ACTION on the cluster) send an Envelope, and a principal bound to
    a broker id only while that broker is registered and unfenced (brokers.identity): a
    refusal is counted. Answers the bound broker's id (None for a principal bound to none).
    Shared by the REST Envelope and the wire listener's."""
    if not is_authorized(
        sender,
        host=host,
        operation=AclOperation.CLUSTER_ACTION,
        resource_type=ResourceType.CLUSTER,
        resource_name=CLUSTER_NAME,
    ):
        FORWARDING.authorization_failed.inc()
        raise ApiError(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            f"{sender.principal} is not authorized for CLUSTER_ACTION on the cluster: "
            "only brokers may send an Envelope.",
        )
    bound = bound_broker_id(sender.principal)
    if bound is None:
        return None
    fenced = Broker.objects.filter(pk=bound).values_list("fenced", flat=True).first()
    if fenced is None or fenced:
        FORWARDING.authorization_failed.inc()
        state = "not registered" if fenced is None else "fenced"
        raise ApiError(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            f"{sender.principal} forwards for broker {bound}, which is {state}: only a "
            "registered, unfenced broker may send an Envelope.",
        )
    return bound


def inner_api_name(api_key: int) -> str:
    api = ADMIN_APIS_BY_KEY.get(api_key)
    return api.name if api else KAFKA_FORWARDABLE.get(api_key, f"apiKey {api_key}")


def forwarded_api(api_key: int) -> ApiKey:
    """The API an Envelope carries: only the writes Kafka forwards (else INVALID_REQUEST)."""
    api = ADMIN_APIS_BY_KEY.get(api_key)
    if api is None or not api.forwardable:
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"{inner_api_name(api_key)} cannot be forwarded in an Envelope.",
        )
    return api


def forwarded_caller(
    principal: AuthenticatedPrincipal,
    sender: AuthenticatedPrincipal,
    *,
    sender_host: str,
    client_host: str,
    client_id: str,
    request_id: str,
    broker_id: int | None,
    kafka_protocol: bool = False,
) -> Caller:
    """The original client as the inner request runs (the forwarding broker noted); counted."""
    FORWARDING.redirected.inc()
    return Caller(
        principal,
        host=client_host,
        client_id=client_id,
        request_id=request_id,
        forwarding=Forwarding(sender.principal, sender_host, broker_id, kafka_protocol),
    )


def envelope_error(error: ApiError) -> Response:
    response = Response(
        {**error_body(error.error, error.message), "response_data": None},
        status=HTTP_STATUS.get(error.error, 400),
    )
    if error.error is Errors.NOT_CONTROLLER:
        response["Retry-After"] = "1"
    return response


class EnvelopeView(AuditedRpcView):
    permission_classes = [IsPrincipal]  # CLUSTER_ACTION is checked (and counted) in post
    audit_api = "Envelope"
    audit_namers = staticmethod(envelope_resources)
    inner_ran = False

    @extend_schema(request=EnvelopeSerializer, responses=responses.ok(responses.ENVELOPE))
    def post(self, request: Request) -> Response:
        try:
            return self._forward(request)
        except ApiError as error:
            return envelope_error(error)

    def audited(self, response: HttpResponseBase) -> bool:
        return not self.inner_ran  # a request that ran is audited as itself

    def audit_notes(self) -> dict[str, Any]:
        return {"inner_api": getattr(self, "inner_api", None) or _named_api(self.request)}

    def _forward(self, request: Request) -> Response:
        sender = principal_of(request)
        host = client_host(request)
        bound = authorize_sender(sender, host)
        body = EnvelopeSerializer.validated(request.data)
        header = body["request_header"]
        self.inner_api = inner_api_name(header["request_api_key"])
        api = forwarded_api(header["request_api_key"])
        if not isinstance(body["request_data"], dict):
            raise ApiError(Errors.INVALID_REQUEST, "request_data: expected a JSON object.")
        principal = principal_decode(body["request_principal"])
        self.inner_ran = True
        caller = forwarded_caller(
            principal,
            sender,
            sender_host=host,
            client_host=body["client_host_address"],
            client_id=header["client_id"] or "",
            request_id=getattr(request._request, "request_id", ""),
            broker_id=body["forwarding_broker_id"] if bound is None else bound,
        )
        answer = execute(REGISTRY[api.name], body["request_data"], caller)
        code = answer.data.get("error_code")
        if code in RETRIED_BY_THE_SENDER:
            raise ApiError(Errors(code), answer.data.get("error_message"))
        return Response(
            {
                **error_body(Errors.NONE, None),
                "response_header": {"correlation_id": header["correlation_id"]},
                "response_status": answer.status,
                "response_data": answer.data,
            }
        )


def _named_api(request: Request) -> str:
    """The API an envelope refused before it was read names, for the audit trail."""
    try:
        key = request.data["request_header"]["request_api_key"]
    except Exception:  # anything at all may have been sent
        return ""
    api = ADMIN_APIS_BY_KEY.get(key) if isinstance(key, int) else None
    return api.name if api else f"apiKey {key}"[:64]
