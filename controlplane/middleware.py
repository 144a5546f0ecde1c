"""Request ids, the listener a request arrived on, metrics, and JSON errors for the API."""

from __future__ import annotations

import io
import logging
import re
import time
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from whitenoise.middleware import WhiteNoiseMiddleware

from controlplane.controller.errors import Errors
from controlplane.http_errors import UNAVAILABLE_MESSAGE, is_unavailable, json_error
from controlplane.log_context import request_id_var

API_PREFIXES = ("/api/", "/internal/")
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

logger = logging.getLogger(__name__)


class RequestIdMiddleware:
    """Takes `X-Request-ID` (or makes one), keeps it for logs and records, echoes it back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get("X-Request-ID", "")
        request_id = given if REQUEST_ID_PATTERN.match(given) else str(uuid.uuid4())
        request.request_id = request_id  # type: ignore[attr-defined]
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = request_id
        return response


def on_internal_port(request: HttpRequest) -> bool:
    """The request arrived on `CP_INTERNAL_PORT` (the port the server bound, never a header)."""
    from django.conf import settings

    port = settings.CP_INTERNAL_PORT
    return bool(port) and request.META.get("SERVER_PORT") == str(port)


def on_internal_listener(request: HttpRequest) -> bool:
    """The request is resolved against the internal listener's URL conf."""
    from django.conf import settings

    urlconf = getattr(request, "urlconf", None) or settings.ROOT_URLCONF
    return bool(urlconf == settings.CP_INTERNAL_URLCONF)


class ListenerMiddleware:
    """A request that arrived on the internal port gets the internal listener's URL conf.

    A process that binds the public and the internal port (the embedded run, the test stacks)
    serves each listener's paths on its own port only: the brokers' API on the internal port, the
    admin API and the UI on the others. A process started with `CP_LISTENER=internal` has the
    internal conf as its ROOT_URLCONF whatever the port.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if on_internal_port(request):
            from django.conf import settings

            request.urlconf = settings.CP_INTERNAL_URLCONF  # type: ignore[attr-defined]
        return self.get_response(request)


class StaticFilesMiddleware:
    """WhiteNoise (the UI's and Swagger UI's files) on the public listener only."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.whitenoise = WhiteNoiseMiddleware(get_response)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if on_internal_listener(request):
            return self.get_response(request)
        response: HttpResponse = self.whitenoise(request)
        return response


# No page of ours may be framed (clickjacking: a framed "New ACL" form), and pages run only the
# scripts and load only what this origin serves (the UI and Swagger UI have no inline script).
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)


class ContentSecurityPolicyMiddleware:
    """Every answer carries the CSP (X-Frame-Options: DENY comes from Django's middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


class MetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from controlplane.metrics import observe_request

        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else "unmatched"
        observe_request(
            request.method or "", route, response.status_code, time.perf_counter() - started
        )
        return response


def is_api_request(request: HttpRequest) -> bool:
    """Under an API prefix, or anything on the internal listener (it serves nothing but API)."""
    return request.path.startswith(API_PREFIXES) or on_internal_listener(request)


def too_large(length: int) -> HttpResponse:
    from django.conf import settings

    return json_error(
        Errors.INVALID_REQUEST,
        f"Request body of {length} bytes exceeds the limit of {settings.CP_MAX_BODY_BYTES} bytes.",
        413,
    )


def body_refusal(request: HttpRequest) -> HttpResponse | None:
    """A body the API will not read (413, 411, 400), or None; a chunked body is read here.

    The control plane's server hands every body over whole, with its Content-Length. Another
    WSGI server may pass a chunked body without one: read to its end when the server says the
    stream ends there (`wsgi.input_terminated`), else refuse it with 411, never read it as empty.
    """
    from django.conf import settings

    limit = settings.CP_MAX_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH")
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if chunked and not declared:
        if not request.META.get("wsgi.input_terminated"):
            return json_error(
                Errors.INVALID_REQUEST, "Chunked request bodies need a Content-Length here.", 411
            )
        body = request.META["wsgi.input"].read(limit + 1)
        if len(body) > limit:
            return too_large(len(body))
        request.META["CONTENT_LENGTH"] = str(len(body))
        request._stream = io.BytesIO(body)
        return None
    try:
        length = int(declared or 0)
    except ValueError:
        return json_error(Errors.INVALID_REQUEST, "Invalid Content-Length header.", 400)
    if length < 0:
        return json_error(Errors.INVALID_REQUEST, "Invalid Content-Length header.", 400)
    if length > limit:
        return too_large(length)
    return None


class ApiErrorMiddleware:
    """No HTML error pages on the API: oversized bodies, unknown paths, crashes answer JSON.

    That includes `/internal/...` on the public listener (a 404 with Kafka's error body, as for
    any unknown API path) and every path on the internal listener."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api_request(request):
            return self.get_response(request)
        refusal = body_refusal(request)
        if refusal is not None:
            return refusal
        response = self.get_response(request)
        if response.status_code == 404 and "json" not in response.get("Content-Type", ""):
            return json_error(Errors.INVALID_REQUEST, f"No such API path: {request.path}", 404)
        if response.status_code == 405 and "json" not in response.get("Content-Type", ""):
            return json_error(Errors.INVALID_REQUEST, f"Method {request.method} not allowed.", 405)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        api = is_api_request(request)
        if is_unavailable(exception):
            # /metrics and the UI too: a scrape or a page during a PostgreSQL or Redis restart is
            # "try again", never a 500 (the fault campaign caught /metrics answering one).
            logger.warning("metadata or session store unreachable: %s", exception)
            response = (
                json_error(Errors.NOT_CONTROLLER, UNAVAILABLE_MESSAGE, 503)
                if api
                else HttpResponse(UNAVAILABLE_MESSAGE, status=503, content_type="text/plain")
            )
            response["Retry-After"] = "1"
            return response
        if not api:
            return None
        logger.exception("unhandled error on %s", request.path)
        return json_error(Errors.UNKNOWN_SERVER_ERROR, "Unexpected server error.", 500)
