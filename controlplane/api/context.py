from __future__ import annotations

from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request

from controlplane.authz import client_host
from controlplane.principals import AuthenticatedPrincipal
from controlplane.runtime.conversation import RequestContext


def principal_of(request: Request) -> AuthenticatedPrincipal:
    user = request.user
    if not isinstance(user, AuthenticatedPrincipal):
        raise NotAuthenticated()
    return user


def request_context(request: Request) -> RequestContext:
    return RequestContext(
        principal=principal_of(request).principal,
        client_id=request.headers.get("X-Client-ID", "")[:255],
        client_host=client_host(request),
        request_id=getattr(request._request, "request_id", ""),
    )
