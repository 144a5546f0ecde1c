"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 for the wire listener (RFC 5802, RFC 7677), as Kafka's
ScramSaslServer does it, from the credentials of the metadata log (KIP-554).

Two rounds after the SaslHandshake naming the mechanism: the client's first message
(`n,[a=authzid],n=user,r=nonce[,ext]`) is answered with the server's (`r=nonce,s=salt,i=n`),
the client's final message (`c=...,r=nonce,p=proof`) with the server's signature
(`v=signature`). The connection is then `User:<user>`, the same principal its PLAIN login or a
broker's forwarded request would be (ACLs and super users apply alike). Kafka's `tokenauth=true`
extension logs a delegation token in: the user is the token id, the password its HMAC (base64),
and the connection is the token's owner, marked token-authenticated (no new tokens).

Unlike Kafka's server, an unknown user is not told apart from a wrong password: it gets a
server-first message with a salt derived from the user's name and fails on its proof, with the
same message. Messages are bounded (MAX_MESSAGE_BYTES) and parsed strictly: channel binding is
refused (`n` only), the channel-binding field must repeat the GS2 header, the final nonce must
be the combined one, the authorization id, if any, must be the user. No salt, key, proof or
password is ever logged or put into an error message.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import functools
import hashlib
import hmac
import re
import secrets
from typing import Any, Protocol

from controlplane.controller.scram.formatter import (
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_password,
    proof_matches,
    server_signature,
)
from controlplane.controller.scram_records import MECHANISMS
from controlplane.login_failures import (
    CLIENT_DOOR,
    CONTROLLER_DOOR,
    FAILED_AUTHENTICATION_DELAY_S,
    FAILED_LOGINS,
)
from controlplane.principals import AuthenticatedPrincipal
from wire import metrics
from wire.sasl import SaslFailed

MAX_MESSAGE_BYTES = 4096  # a client's SCRAM message: a name, a nonce, extensions, a proof
TOKEN_AUTH = "tokenauth"  # Kafka's ScramLoginModule.TOKEN_AUTH_CONFIG extension
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # RFC 5802's value: any ASCII but NUL and ","
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>(?:m={_VALUE},)?"
    rf"n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))"
)
CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_BASE64})"
)


def invalid_credentials(mechanism: str) -> SaslFailed:
    """Kafka's SaslServerAuthenticator answer to a SaslException: names no reason."""
    return SaslFailed(
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )


def sasl_name(name: str) -> str:
    """RFC 5802's saslname decoded: "=2C" is ",", "=3D" is "=" (Kafka's ScramFormatter)."""
    return name.replace("=2C", ",").replace("=3D", "=")


def _extensions(text: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key: value for key, _, value in pairs}


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslFailed("Invalid SCRAM message: not base64.") from None


@dataclasses.dataclass(frozen=True, slots=True)
class ScramIdentity:
    """Whom a SCRAM user name logs in as, and with what credential."""

    credential: ScramCredential
    principal_name: str
    token_authenticated: bool = False


class IdentityLookup(Protocol):
    def __call__(self, user: str, mechanism: str, token_auth: bool) -> ScramIdentity | None: ...


@dataclasses.dataclass(slots=True)
class ClientFirst:
    gs2_header: str
    bare: str
    user: str
    nonce: str
    token_auth: bool


def parse_client_first(message: bytes) -> ClientFirst:
    text = _text(message)
    match = CLIENT_FIRST.fullmatch(text)
    if match is None:
        raise SaslFailed("Invalid SCRAM client first message format.")
    user = sasl_name(match["name"])
    authzid = match["authzid"]
    if authzid is not None and sasl_name(authzid) != user:
        raise SaslFailed(
            "Authentication failed: Client requested an authorization id that is different "
            "from username"
        )
    extensions = _extensions(match["extensions"])
    return ClientFirst(
        match["gs2"], match["bare"], user, match["nonce"], extensions.get(TOKEN_AUTH) == "true"
    )


def _text(message: bytes) -> str:
    if len(message) > MAX_MESSAGE_BYTES:
        raise SaslFailed("Invalid SCRAM message: too long.")
    try:
        return message.decode("ascii")
    except UnicodeDecodeError:
        raise SaslFailed("Invalid SCRAM message: not ASCII.") from None


class ScramExchange:
    """One connection's SCRAM exchange: `step` takes each client message and answers the
    server's; `principal` is set once the client's proof held."""

    def __init__(self, mechanism: str, lookup: IdentityLookup, *, unknown_user_key: bytes) -> None:
        if mechanism not in MECHANISMS:
            raise SaslFailed(f"Unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self._lookup = lookup
        self._unknown_user_key = unknown_user_key
        self._first: ClientFirst | None = None
        self._server_first = ""
        self._nonce = ""
        self._identity: ScramIdentity | None = None
        self.user = ""  # the name the client gave (for the failed-login log)
        self.principal: AuthenticatedPrincipal | None = None
        self.failed = False

    @property
    def complete(self) -> bool:
        return self.principal is not None

    def first(self, first: ClientFirst) -> bytes:
        """The client's first message (parsed) in, the server's first message out (on the
        listener's pool: the lookup reads the database)."""
        self.user = first.user
        self._first = first
        self._identity = self._lookup(first.user, self.mechanism, first.token_auth)
        credential = self._identity.credential if self._identity else self._unknown_user(first.user)
        self._nonce = first.nonce + secrets.token_urlsafe(24)
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def final(self, message: bytes) -> tuple[bytes, str, bool]:
        """The client's final message in; the server's final message out, with the principal
        name and whether it logged in with a delegation token. SaslFailed when the proof does
        not hold (or the user is unknown)."""
        assert self._first is not None
        match = CLIENT_FINAL.fullmatch(_text(message))
        if match is None:
            raise SaslFailed("Invalid SCRAM client final message format.")
        if _b64decode(match["channel"]) != self._first.gs2_header.encode("ascii"):
            raise SaslFailed("Invalid SCRAM client final message: channel binding mismatch.")
        if not hmac.compare_digest(match["nonce"], self._nonce):
            raise SaslFailed("Invalid client nonce in the final client message.")
        auth_message = ",".join(
            (self._first.bare, self._server_first, match["without_proof"])
        ).encode("ascii")
        identity = self._identity
        proof = _b64decode(match["proof"])
        if identity is None or not proof_matches(
            self.mechanism, identity.credential, auth_message, proof
        ):
            raise invalid_credentials(self.mechanism)
        signature = server_signature(self.mechanism, identity.credential, auth_message)
        answer = "v=" + base64.b64encode(signature).decode("ascii")
        return answer.encode("ascii"), identity.principal_name, identity.token_authenticated

    def _unknown_user(self, user: str) -> ScramCredential:
        """A credential nobody can prove: the same salt for the same name every time (so a
        second try looks like the first), keys that match no proof."""
        digest = hmac.new(
            self._unknown_user_key, f"{self.mechanism}/{user}".encode(), hashlib.sha256
        ).digest()
        return ScramCredential(digest[:16], digest, digest, MIN_ITERATIONS)


# --- on the listener's pool: the credential from the projection ------------------------------


def identity_on_pool(user: str, mechanism: str, token_auth: bool) -> ScramIdentity | None:
    """The credential `user` logs in with: a SCRAM user's from cp_scram_credential, or with
    `tokenauth`, a live delegation token's (its HMAC as the password, Kafka's
    DelegationTokenCache credential: a fresh salt, the mechanism's minimum iterations)."""
    from django.db import close_old_connections

    from controlplane.runtime.lease import now_ms
    from security.selectors import scram_credential_get, token_scram_password

    close_old_connections()
    try:
        if token_auth:
            found = token_scram_password(token_id=user, now_ms=now_ms())
            if found is None:
                return None
            owner, password = found
            kind, _, name = owner.partition(":")
            if kind != "User" or not name:
                return None
            credential = credential_from_password(
                mechanism, password, secrets.token_bytes(16), MIN_ITERATIONS
            )
            return ScramIdentity(credential, name, token_authenticated=True)
        stored = scram_credential_get(name=user, mechanism=mechanism)
        return None if stored is None else ScramIdentity(stored, user)
    finally:
        close_old_connections()


def principal_on_pool(name: str, token_authenticated: bool) -> AuthenticatedPrincipal:
    from django.db import close_old_connections

    from controlplane.principals import principal_forwarded

    close_old_connections()
    try:
        return principal_forwarded(name, token_authenticated=token_authenticated)
    finally:
        close_old_connections()


@functools.cache
def unknown_user_key() -> bytes:
    """The key unknown users' salts derive from: the same in every process of a deployment."""
    from django.conf import settings

    return hashlib.sha256(b"scram-unknown-user:" + settings.SECRET_KEY.encode()).digest()


# --- the server's step ------------------------------------------------------------------------


class ScramConnection(Protocol):
    """What of a wire connection the exchange needs (wire.server's _Connection)."""

    host: str
    mechanism: str
    scram: ScramExchange | None
    principal: AuthenticatedPrincipal | None

    @property
    def listener(self) -> Any: ...

    @property
    def door(self) -> Any: ...  # its door's handler pool runs what reads the database


def is_scram(mechanism: str) -> bool:
    return mechanism in MECHANISMS


async def scram_authenticate(conn: ScramConnection, auth_bytes: bytes) -> dict[str, Any]:
    """One SaslAuthenticate of a SCRAM exchange: the SaslAuthenticate response's fields
    (`auth_bytes`: the server's message; error 0 with no principal yet: the exchange goes on).
    A failure is counted, logged by name and address, throttled and answered after Kafka's
    delay, exactly as a failed PLAIN login."""
    loop = asyncio.get_running_loop()
    pool = conn.door.pool
    exchange = conn.scram
    try:
        if exchange is None:
            exchange = ScramExchange(
                conn.mechanism, identity_on_pool, unknown_user_key=unknown_user_key()
            )
            conn.scram = exchange
            first = parse_client_first(auth_bytes)
            exchange.user = first.user
            _within_retries(conn, first.user)
            challenge = await loop.run_in_executor(pool, exchange.first, first)
            return {"error_code": 0, "error_message": None, "auth_bytes": challenge}
        if exchange.failed or exchange.complete:
            raise SaslFailed("SaslAuthenticate after the SCRAM exchange ended.")
        answer, name, token_authenticated = exchange.final(auth_bytes)
        principal = await loop.run_in_executor(pool, principal_on_pool, name, token_authenticated)
    except SaslFailed as error:
        if exchange is not None:
            exchange.failed = True
        return await _failed(conn, exchange.user if exchange else "", error)
    exchange.principal = principal
    conn.principal = principal
    metrics.AUTHENTICATIONS.labels(conn.listener.listener_name, "successful").inc()
    return {"error_code": 0, "error_message": None, "auth_bytes": answer}


def _failed_logins_door(conn: ScramConnection) -> str:
    return CONTROLLER_DOOR if conn.listener.controller else CLIENT_DOOR


def _within_retries(conn: ScramConnection, user: str) -> None:
    wait_s = FAILED_LOGINS.retry_after_s(door=_failed_logins_door(conn), host=conn.host, name=user)
    if wait_s > 0:
        raise SaslFailed(
            f"Too many failed authentications from this address; retry in {wait_s:.0f} s."
        )


async def _failed(conn: ScramConnection, user: str, error: SaslFailed) -> dict[str, Any]:
    from kio.schema.errors import ErrorCode

    metrics.AUTHENTICATIONS.labels(conn.listener.listener_name, "failed").inc()
    FAILED_LOGINS.failed(host=conn.host, name=user, door=_failed_logins_door(conn), why=str(error))
    await asyncio.sleep(FAILED_AUTHENTICATION_DELAY_S)  # on the loop: no thread held
    return {
        "error_code": int(ErrorCode.sasl_authentication_failed),
        "error_message": str(error),
        "auth_bytes": b"",
    }
