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
from controlplane.principals import AuthenticatedPrincipal
from controlplane.services import ControllerNotes, controller_notes

logger = logging.getLogger("controlplane.audit")


class AuditedRpcView(APIView):
    """A request whose principal is unknown (401) names nobody and is not audited; every other
    one is, with what the controller wrote for it."""

    audit_api: str
    audit_namers: Namers

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        notes = ControllerNotes()
        token = controller_notes.set(notes)
        started = time.perf_counter()
        try:
            response = super().dispatch(request, *args, **kwargs)
        finally:
            controller_notes.reset(token)
        if self.audited(response):
            self._audit(response, notes, (time.perf_counter() - started) * 1000)
        return response

    def audited(self, response: HttpResponseBase) -> bool:
        return True

    def audit_notes(self) -> dict[str, Any]:
        return {}

    def _audit(self, response: HttpResponseBase, notes: ControllerNotes, ms: float) -> None:
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
                client_host=str(django_request.META.get("REMOTE_ADDR") or ""),
                request_id=getattr(django_request, "request_id", ""),
                http_status=response.status_code,
                body=_body_of(request),
                answer=getattr(response, "data", None),
                notes={**notes.private, **self.audit_notes()},
                first_offset=notes.first_offset,
                last_offset=notes.last_offset,
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
