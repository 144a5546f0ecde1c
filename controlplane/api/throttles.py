"""The public API's request rate per principal (`CP_API_RATE_LIMIT`, controlplane.throttling):
429 THROTTLING_QUOTA_EXCEEDED with `Retry-After` beyond it. The internal listener is exempt (its
heartbeats have a rate per broker: controlplane.server.peer_limits)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from controlplane.principals import AuthenticatedPrincipal
from controlplane.throttling import REQUEST_RATE


class PrincipalRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait = 0.0

    def allow_request(self, request: Request, view: Any) -> bool:
        from controlplane.middleware import on_internal_listener  # (imports DRF's views)

        user = request.user
        if not isinstance(user, AuthenticatedPrincipal) or on_internal_listener(request._request):
            return True
        self._wait = REQUEST_RATE.wait_s(
            user.principal, rate=settings.CP_API_RATE_LIMIT, burst=settings.CP_API_RATE_BURST
        )
        return self._wait == 0

    def wait(self) -> float:
        return self._wait
