"""Kafka Connect's InternalRequestSignature: a follower signs the body of an internal request
(new task configs for the leader) with the flow's session key; the leader checks it.

Headers `X-Connect-Authorization` (the HMAC, base64) and `X-Connect-Request-Signature-Algorithm`
(HmacSHA256, Connect's default `inter.worker.signature.algorithm`). Beside them the follower
names itself in `X-Mirror-Member-Id` (its member id in the flow's group), for the audit trail:
the leader persists the task configs in the poster's name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
ALGORITHM = "HmacSHA256"
MEMBER_HEADER = "X-Mirror-Member-Id"


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A request header, whatever case the client spelled its name in."""
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), None)


def _mac(key_b64: str, body: bytes) -> bytes:
    return hmac.new(base64.b64decode(key_b64), body, hashlib.sha256).digest()


def signature_headers(key_b64: str, body: bytes) -> dict[str, str]:
    return {
        SIGNATURE_HEADER: base64.b64encode(_mac(key_b64, body)).decode(),
        ALGORITHM_HEADER: ALGORITHM,
    }


def signature_problem(key_b64: str | None, body: bytes, headers: Mapping[str, str]) -> str | None:
    """Why the request is not signed properly with `key_b64`, or None when it is."""
    signature = headers.get(SIGNATURE_HEADER)
    algorithm = headers.get(ALGORITHM_HEADER)
    if not signature or not algorithm:
        return "Internal request missing required signature."
    if algorithm != ALGORITHM:
        return f"This worker does not support the {algorithm!r} key signing algorithm."
    if not key_b64:
        return "This worker has no session key yet."
    try:
        given = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return "Internal request contained invalid signature."
    if not hmac.compare_digest(given, _mac(key_b64, body)):
        return "Internal request contained invalid signature."
    return None
