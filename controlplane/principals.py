"""Principals and their bearer tokens. Tokens are shown once; only their SHA-256 is stored."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets

from django.conf import settings

from controlplane.models import Principal

NAME_PATTERN = re.compile(r"^[A-Za-z0-9._@-]{1,200}$")


@dataclasses.dataclass(frozen=True, slots=True)
class AuthenticatedPrincipal:
    """The principal behind a request; DRF's `request.user`."""

    id: int
    name: str
    is_super_user: bool
    is_broker: bool
    is_authenticated: bool = True
    # Authenticated by a delegation token (at the broker that forwarded the request): Kafka
    # refuses such a principal new tokens. Bearer tokens and UI sessions never are.
    token_authenticated: bool = False

    @property
    def principal(self) -> str:
        return f"User:{self.name}"

    @property
    def is_super(self) -> bool:
        return self.is_super_user or self.principal in settings.CP_SUPER_USERS

    @classmethod
    def of(cls, row: Principal) -> AuthenticatedPrincipal:
        return cls(row.pk, row.name, row.is_super_user, row.is_broker)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def principal_create(*, name: str, super_user: bool = False, broker: bool = False) -> str:
    """Create (or re-key) a principal; returns its new token, which is never stored."""
    if not NAME_PATTERN.match(name):
        raise ValueError(
            f"Invalid principal name {name!r}: use 1-200 of letters, digits and . _ @ -"
        )
    token = secrets.token_urlsafe(32)
    Principal.objects.update_or_create(
        name=name,
        defaults={
            "token_hash": token_hash(token),
            "is_super_user": super_user,
            "is_broker": broker,
        },
    )
    return token


def principal_by_token(token: str) -> AuthenticatedPrincipal | None:
    row = Principal.objects.filter(token_hash=token_hash(token)).first()
    return None if row is None else AuthenticatedPrincipal.of(row)


def principal_by_id(principal_id: int) -> AuthenticatedPrincipal | None:
    row = Principal.objects.filter(pk=principal_id).first()
    return None if row is None else AuthenticatedPrincipal.of(row)


def principal_forwarded(name: str, *, token_authenticated: bool = False) -> AuthenticatedPrincipal:
    """The principal a broker authenticated and forwarded (KIP-590 Envelope). ACLs decide what
    it may do; a principal known here keeps its super-user and broker flags."""
    row = Principal.objects.filter(name=name).first()
    if row is None:
        return AuthenticatedPrincipal(
            0, name, False, False, token_authenticated=token_authenticated
        )
    known = AuthenticatedPrincipal.of(row)
    return dataclasses.replace(known, token_authenticated=token_authenticated)
