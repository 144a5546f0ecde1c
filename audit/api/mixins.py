"""An audited view outside the RPC registry: the Envelope, whose refusals are audited as itself
(an Envelope that ran is audited as its inner request, by `controlplane.rpc.execute`)."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase
from rest_framework.request import Request
from rest_framework.views import APIView

from audit.resources import Namers
from audit.services import audit_event_record
from controlplane.authz import client_host
from controlplane.principals import AuthenticatedPrincipal

logger = logging.getLogger("controlplane.audit")


class AuditedRpcView(APIView):
    """A request whose principal is unknown (401) names nobody and is not audited; every other
    one is. A request it audits never reached the controller (one that ran is audited as
    itself), so it names no offsets."""

    audit_api: str
    audit_namers: Namers

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        started = time.perf_counter()
        response = super().dispatch(request, *args, **kwargs)
        if self.audited(response):
            self._audit(response, (time.perf_counter() - started) * 1000)
        return response

    def audited(self, response: HttpResponseBase) -> bool:
        return True

    def audit_notes(self) -> dict[str, Any]:
        return {}

    def _audit(self, response: HttpResponseBase, ms: float) -> None:
        request: Request = self.request
        principal = getattr(request, "_user", None)
        if not isinstance(principal, AuthenticatedPrincipal):
            return
        django_request = request._request
        try:
            audit_event_record(
                api=self.audit_api,
                namers=type(self).audit_namers,
                principal=principal.principal,
                client_id=django_request.headers.get("X-Client-ID", ""),
                client_host=client_host(django_request),
                request_id=getattr(django_request, "request_id", ""),
                http_status=response.status_code,
                body=_body_of(request),
                answer=getattr(response, "data", None),
                notes=self.audit_notes(),
                first_offset=None,
                last_offset=None,
                forwarding=None,
                duration_ms=ms,
            )
        except DatabaseError:
            logger.exception("could not write the audit event of %s", self.audit_api)


def _body_of(request: Request) -> Any:
    """The parsed body; parsed now when a refusal came before the view read it."""
    try:
        return request.data
    except Exception:  # a malformed body: the request named nothing we can tell
        return None
