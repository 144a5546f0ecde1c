"""Who may send what on the wire, decided off the handlers' path: the request rate per
principal, the controller listeners' principals, SASL/PLAIN's check on the pool."""

from __future__ import annotations

import asyncio

from controlplane.principals import AuthenticatedPrincipal
from controlplane.throttling import REQUEST_RATE
from wire import metrics
from wire.sasl import SaslFailed, authenticate_plain, plain_fields

ANONYMOUS = AuthenticatedPrincipal(0, "ANONYMOUS", False, False)


async def within_request_rate(principal: AuthenticatedPrincipal, host: str, listener: str) -> None:
    """The REST API's request rate per principal (`CP_API_RATE_LIMIT`) on this door too: past
    it the connection waits (Kafka's request quotas mute the channel for the throttle time; its
    requests are answered in order, so nothing else of it is read meanwhile). ANONYMOUS is
    counted per address: it is everyone on a PLAINTEXT listener."""
    from django.conf import settings

    key = principal.principal
    if principal.name == ANONYMOUS.name:
        key = f"{key}@{host}"
    while True:
        wait_s = REQUEST_RATE.wait_s(
            key, rate=settings.CP_API_RATE_LIMIT, burst=settings.CP_API_RATE_BURST
        )
        if wait_s <= 0:
            return
        metrics.THROTTLED.labels(listener).inc()
        await asyncio.sleep(min(wait_s, 1.0))


def plain_user(auth_bytes: bytes) -> str:
    """The user a PLAIN message names (for the log and the throttle), or "" when it names none."""
    try:
        return plain_fields(auth_bytes)[1]
    except SaslFailed:
        return ""


def authenticate_plain_on_pool(auth_bytes: bytes) -> AuthenticatedPrincipal:
    from django.db import close_old_connections

    close_old_connections()
    try:
        return authenticate_plain(bytes(auth_bytes))
    finally:
        close_old_connections()
