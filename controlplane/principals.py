"""Principals and their bearer tokens. Tokens are shown once; only their SHA-256 is stored."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
import threading
import time
from typing import Any

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


def new_token() -> str:
    """32 random bytes, URL-safe; never starting with "-", which every command line (argparse's
    `--token T`, the simulator's, the mirror node's, `kafka-*` tools) would take for an option:
    one token in 64 did, and a broker given it could not start."""
    while True:
        token = secrets.token_urlsafe(32)
        if not token.startswith("-"):
            return token


def principal_create(*, name: str, super_user: bool = False, broker: bool = False) -> str:
    """Create (or re-key) a principal; returns its new token, which is never stored."""
    if not NAME_PATTERN.match(name):
        raise ValueError(
            f"Invalid principal name {name!r}: use 1-200 of letters, digits and . _ @ -"
        )
    token = new_token()
    token_cache.clear()  # a re-keyed principal's old token stops working here at once
    forwarded_cache.clear()
    Principal.objects.update_or_create(
        name=name,
        defaults={
            "token_hash": token_hash(token),
            "is_super_user": super_user,
            "is_broker": broker,
        },
    )
    return token


class _TtlCache:
    """Principals by token hash (or by name), for a few seconds: authentication was the one query
    every API request made, and principals change rarely. A re-keyed or removed principal's old
    token keeps working for at most `ttl_s` in another process (as Kafka's brokers cache
    credentials)."""

    def __init__(self, ttl_s: float, max_entries: int) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[str, tuple[AuthenticatedPrincipal, float]] = {}
        self._lock = threading.Lock()

    def get(self, digest: str) -> AuthenticatedPrincipal | None:
        hit = self._entries.get(digest)
        if hit is None or hit[1] < time.monotonic():
            return None
        return hit[0]

    def put(self, digest: str, principal: AuthenticatedPrincipal) -> None:
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[digest] = (principal, time.monotonic() + self.ttl_s)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


token_cache = _TtlCache(ttl_s=5.0, max_entries=10_000)
forwarded_cache = _TtlCache(ttl_s=5.0, max_entries=10_000)


def principal_by_token(token: str) -> AuthenticatedPrincipal | None:
    digest = token_hash(token)
    cached = token_cache.get(digest)
    if cached is not None:
        return cached
    row = Principal.objects.filter(token_hash=digest).first()
    if row is None:
        return None  # never cached: a token created a moment later works at once
    principal = AuthenticatedPrincipal.of(row)
    token_cache.put(digest, principal)
    return principal


# --- UI sessions: tied to the principal's key --------------------------------------------------
# A session names its principal and a fingerprint of the key it logged in with: re-keying the
# principal (`create_principal` again) or deleting it ends every session it had, at the next
# request, as a new token is the only proof of who it is.
SESSION_PRINCIPAL = "cp_principal_id"
SESSION_KEY_FINGERPRINT = "cp_principal_key"


def key_fingerprint(token_hash_value: str) -> str:
    """A keyed digest of the stored token hash: the session never holds the hash itself."""
    return hmac.new(
        settings.SECRET_KEY.encode(), b"session:" + token_hash_value.encode(), hashlib.sha256
    ).hexdigest()


def session_login(session: Any, principal: AuthenticatedPrincipal) -> None:
    row = Principal.objects.filter(pk=principal.id).only("token_hash").first()
    session[SESSION_PRINCIPAL] = principal.id
    session[SESSION_KEY_FINGERPRINT] = key_fingerprint(row.token_hash if row else "")


def session_principal_of(session: Any) -> AuthenticatedPrincipal | None:
    """The session's principal while its key is the one it logged in with; else None (and the
    session is emptied: it ended when the key changed)."""
    principal_id = session.get(SESSION_PRINCIPAL)
    if not isinstance(principal_id, int) or isinstance(principal_id, bool):
        return None
    row = Principal.objects.filter(pk=principal_id).first()
    fingerprint = session.get(SESSION_KEY_FINGERPRINT)
    if (
        row is None
        or not isinstance(fingerprint, str)
        or not hmac.compare_digest(fingerprint, key_fingerprint(row.token_hash))
    ):
        session.flush()
        return None
    return AuthenticatedPrincipal.of(row)


def principal_forwarded(name: str, *, token_authenticated: bool = False) -> AuthenticatedPrincipal:
    """The principal a broker authenticated and forwarded (KIP-590 Envelope). ACLs decide what
    it may do; a principal known here keeps its super-user and broker flags."""
    known = forwarded_cache.get(name)
    if known is None:
        row = Principal.objects.filter(name=name).first()
        known = AuthenticatedPrincipal(0, name, False, False)
        if row is not None:
            known = AuthenticatedPrincipal.of(row)
        forwarded_cache.put(name, known)
    if token_authenticated:
        return dataclasses.replace(known, token_authenticated=True)
    return known
