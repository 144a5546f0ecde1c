from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from controlplane.principals import AuthenticatedPrincipal, principal_by_id, principal_by_token

SESSION_KEY = "cp_principal_id"


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
        principal_id = request._request.session.get(SESSION_KEY)
        if principal_id is None:
            return None
        principal = principal_by_id(principal_id)
        if principal is None:
            return None
        self.enforce_csrf(request)
        return principal, None
