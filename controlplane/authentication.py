from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from controlplane.principals import (
    SESSION_PRINCIPAL,
    AuthenticatedPrincipal,
    principal_by_token,
    session_principal_of,
)

SESSION_KEY = SESSION_PRINCIPAL


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AuthenticatedPrincipal, str] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid bearer token header.")
        try:
            token = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid bearer token.") from None
        principal = principal_by_token(token)
        if principal is None:
            raise exceptions.AuthenticationFailed("Invalid bearer token.")
        return principal, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class PrincipalSessionAuthentication(authentication.SessionAuthentication):
    """The browser UI's session login, for the same principals (CSRF enforced)."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        session = request._request.session
        if session.get(SESSION_KEY) is None:
            return None
        principal = session_principal_of(session)  # None once the principal was re-keyed
        if principal is None:
            return None
        self.enforce_csrf(request)
        return principal, None
