"""SASL/PLAIN for the wire listener: who a connection is (SCRAM-SHA-256 and -512: wire.scram).

PLAIN's message is `authzid NUL authcid NUL password` (RFC 4616). The user is a principal's
name and the password its token, the same token its REST calls carry as a bearer: the
connection is then `User:<name>`. A delegation token authenticates too, as Kafka's SCRAM
`tokenauth` does: the user is the token's id and the password its HMAC (base64, as
CreateDelegationToken answers it); the connection is then the token's owner, marked
token-authenticated, so it may not create tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
"""

from __future__ import annotations

import hmac

from controlplane.principals import (
    AuthenticatedPrincipal,
    principal_by_token,
    principal_forwarded,
)
from controlplane.runtime.lease import now_ms

PLAIN = "PLAIN"
# SCRAM's exchange is wire.scram's (the credentials of SCRAM users, KIP-554).
MECHANISMS = (PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512")
MAX_PLAIN_BYTES = 2048  # three NUL-separated fields of at most 255 bytes each, with room


class SaslFailed(Exception):
    """SASL_AUTHENTICATION_FAILED: the message shown to the client names no secret."""


def plain_fields(auth_bytes: bytes) -> tuple[str, str, str]:
    """(authzid, authcid, password) of a PLAIN message; SaslFailed when malformed."""
    if len(auth_bytes) > MAX_PLAIN_BYTES:
        raise SaslFailed("Invalid SASL/PLAIN message: too long.")
    parts = auth_bytes.split(b"\x00")
    if len(parts) != 3:
        raise SaslFailed("Invalid SASL/PLAIN message: expected authzid, user and password.")
    try:
        authzid, user, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise SaslFailed("Invalid SASL/PLAIN message: not UTF-8.") from None
    if not user or not password:
        raise SaslFailed("Invalid SASL/PLAIN message: empty user or password.")
    return authzid, user, password


def authenticate_plain(auth_bytes: bytes) -> AuthenticatedPrincipal:
    """The principal a PLAIN message proves, or SaslFailed."""
    authzid, user, password = plain_fields(auth_bytes)
    if authzid and authzid != user:  # Kafka's PlainSaslServer: no authorizing as another
        raise SaslFailed("Authentication failed: authorization id must equal the user.")
    principal = principal_by_token(password)
    if principal is not None and hmac.compare_digest(principal.name, user):
        return principal
    owner = _delegation_token_owner(user, password)
    if owner is not None:
        return principal_forwarded(owner, token_authenticated=True)
    raise SaslFailed("Authentication failed: invalid username or password.")


def _delegation_token_owner(token_id: str, hmac_text: str) -> str | None:
    """The owner's name (`User:<name>` → `<name>`) of a live token whose HMAC this is."""
    from security.models import DelegationToken
    from security.selectors import token_hmac_matches

    token = DelegationToken.objects.filter(token_id=token_id[:64]).first()
    if token is None or token.expiration_timestamp < now_ms():
        return None
    if not token_hmac_matches(token_id=token.token_id, hmac_text=hmac_text):
        return None
    kind, _, name = token.owner.partition(":")
    return name if kind == "User" and name else None
