"""Delegation tokens over HTTP: create, renew and expire go through the controller (with the
requester principal in the payload), describe reads the projection (cp_delegation_token).

Kafka refuses CreateDelegationToken from a connection authenticated by a delegation token
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED). Principals here authenticate by bearer tokens or a
session, never by a delegation token; a broker that forwards a request in an Envelope says
whether it authenticated the client with one (`request_principal.token_authenticated`).
HMACs are answered by create only and are never logged.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from audit.api.mixins import AuditedRpcView
from controlplane.api import token_serializers as s
from controlplane.api.context import client_host, principal_of, request_context
from controlplane.api.permissions import IsPrincipal
from controlplane.authz import is_authorized, refuse_broker_on_public_write
from controlplane.controller.acl import AclOperation, ResourceType
from controlplane.controller.errors import ApiError, Errors
from controlplane.selectors import tokens_describe
from controlplane.services import controller_call


class PublicWritePermission(IsPrincipal):
    """Any principal but a broker's (KIP-590); the controller checks ownership."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        refuse_broker_on_public_write(principal_of(request))
        return True


EMPTY_CREATE: dict[str, Any] = {
    "error_code": 0,
    "error_message": None,
    "principal_type": "",
    "principal_name": "",
    "token_requester_principal_type": "",
    "token_requester_principal_name": "",
    "issue_timestamp_ms": -1,
    "expiry_timestamp_ms": -1,
    "max_timestamp_ms": -1,
    "token_id": "",
    "hmac": None,
}
EMPTY_EXPIRY: dict[str, Any] = {"error_code": 0, "error_message": None, "expiry_timestamp_ms": -1}


def _call(request: Request, api: str, payload: dict[str, Any]) -> dict[str, Any]:
    payload["requester"] = principal_of(request).principal
    return controller_call(api=api, payload=payload, context=request_context(request))


def _authorized_owner(request: Request, body: dict[str, Any]) -> bool:
    """Kafka: a token for another owner needs CREATE_TOKENS on that USER."""
    principal = principal_of(request)
    owner_type, owner_name = body["owner_principal_type"], body["owner_principal_name"]
    if owner_type is None and owner_name is None:
        return True
    if f"{owner_type}:{owner_name}" == principal.principal:
        return True
    return is_authorized(
        principal,
        host=client_host(request),
        operation=AclOperation.CREATE_TOKENS,
        resource_type=ResourceType.USER,
        resource_name=f"{owner_type}:{owner_name}",
    )


class CreateDelegationTokenView(AuditedRpcView):
    permission_classes = [PublicWritePermission]

    @extend_schema(request=s.CreateDelegationTokenSerializer)
    def post(self, request: Request) -> Response:
        body = s.CreateDelegationTokenSerializer.validated(request.data)
        if principal_of(request).token_authenticated:
            return Response(
                {
                    **EMPTY_CREATE,
                    "error_code": int(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED),
                    "error_message": "Delegation tokens cannot be created by a principal "
                    "authenticated with a delegation token.",
                }
            )
        if not _authorized_owner(request, body):
            return Response(
                {
                    **EMPTY_CREATE,
                    "error_code": int(Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED),
                    "error_message": "Not authorized to create tokens for this owner.",
                }
            )
        payload = {
            "owner_principal_type": body["owner_principal_type"],
            "owner_principal_name": body["owner_principal_name"],
            "renewers": [dict(r) for r in body["renewers"]],
            "max_lifetime_ms": body["max_lifetime_ms"],
        }
        return Response({**EMPTY_CREATE, **_call(request, "CreateDelegationToken", payload)})


class RenewDelegationTokenView(AuditedRpcView):
    permission_classes = [PublicWritePermission]

    @extend_schema(request=s.RenewDelegationTokenSerializer)
    def post(self, request: Request) -> Response:
        body = s.RenewDelegationTokenSerializer.validated(request.data)
        payload = {"hmac": body["hmac"], "renew_period_ms": body["renew_period_ms"]}
        return Response({**EMPTY_EXPIRY, **_call(request, "RenewDelegationToken", payload)})


class ExpireDelegationTokenView(AuditedRpcView):
    permission_classes = [PublicWritePermission]

    @extend_schema(request=s.ExpireDelegationTokenSerializer)
    def post(self, request: Request) -> Response:
        body = s.ExpireDelegationTokenSerializer.validated(request.data)
        payload = {"hmac": body["hmac"], "expiry_time_period_ms": body["expiry_time_period_ms"]}
        return Response({**EMPTY_EXPIRY, **_call(request, "ExpireDelegationToken", payload)})


class DescribeDelegationTokenView(AuditedRpcView):
    permission_classes = [IsPrincipal]

    @extend_schema(request=s.DescribeDelegationTokenSerializer)
    def post(self, request: Request) -> Response:
        body = s.DescribeDelegationTokenSerializer.validated(request.data)
        owners = body["owners"]
        try:
            described = tokens_describe(
                principal=principal_of(request),
                host=client_host(request),
                owners=None if owners is None else [dict(o) for o in owners],
            )
        except ApiError as error:
            return Response({**error.as_fields(), "tokens": []})
        return Response(described)
