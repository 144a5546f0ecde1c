"""The audited admin RPC view: every request through it, allowed or denied, is audited."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponseBase
from rest_framework.request import Request
from rest_framework.views import APIView

from audit.services import audit_event_record
from controlplane.forwarding import ADMIN_APIS_BY_PATH, forwarding_of
from controlplane.principals import AuthenticatedPrincipal
from controlplane.services import ControllerNotes, controller_notes

logger = logging.getLogger("controlplane.audit")


class AuditedRpcView(APIView):
    """Kafka's admin RPCs. A request whose principal is unknown (401) names nobody and is not
    audited; every other one is, with what the controller wrote for it."""

    audit_api: str | None = None  # Kafka's name; by default the RPC served at this path

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
        api = self.audit_api or ADMIN_APIS_BY_PATH[django_request.path_info].name
        try:
            audit_event_record(
                api=api,
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
                forwarding=forwarding_of(django_request),
                duration_ms=ms,
            )
        except DatabaseError:
            logger.exception("could not write the audit event of %s", api)


def _body_of(request: Request) -> Any:
    """The parsed body; parsed now when a refusal came before the view read it."""
    try:
        return request.data
    except Exception:  # a malformed body: the request named nothing we can tell
        return None
