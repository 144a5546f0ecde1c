"""Every API error as Kafka's: `error_code`, `error` and `error_message`, never an HTML page."""

from __future__ import annotations

import logging
import math
from typing import Any

from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from controlplane.controller.errors import ApiError, Errors

logger = logging.getLogger(__name__)

HTTP_STATUS = {
    Errors.INVALID_REQUEST: status.HTTP_400_BAD_REQUEST,
    Errors.CLUSTER_AUTHORIZATION_FAILED: status.HTTP_403_FORBIDDEN,
    Errors.TOPIC_AUTHORIZATION_FAILED: status.HTTP_403_FORBIDDEN,
    Errors.SASL_AUTHENTICATION_FAILED: status.HTTP_401_UNAUTHORIZED,
    Errors.NOT_CONTROLLER: status.HTTP_503_SERVICE_UNAVAILABLE,
    Errors.REASSIGNMENT_IN_PROGRESS: status.HTTP_409_CONFLICT,  # one balance plan at a time
    Errors.REQUEST_TIMED_OUT: status.HTTP_504_GATEWAY_TIMEOUT,
    Errors.BROKER_ID_NOT_REGISTERED: status.HTTP_404_NOT_FOUND,  # no such broker
    Errors.STALE_BROKER_EPOCH: status.HTTP_409_CONFLICT,  # another incarnation's epoch
}


UNAVAILABLE_MESSAGE = "The metadata or session store cannot be reached now; retry."


def is_unavailable(error: Exception) -> bool:
    """A store the control plane depends on is down or restarting (PostgreSQL, Redis): the
    request may be retried, as for NOT_CONTROLLER (503 with Retry-After), never a 500.

    The driver's own errors count too: Django wraps what a cursor's execute and fetch raise,
    not what closing a server-side cursor raises (`QuerySet.iterator()` closes it in a
    `finally`), so a restart met while a chunked read is open surfaces as psycopg's error."""
    import psycopg
    from django.db import InterfaceError, OperationalError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return isinstance(
        error,
        OperationalError
        | InterfaceError
        | psycopg.OperationalError
        | psycopg.InterfaceError
        | RedisConnectionError
        | RedisTimeoutError,
    )


def error_body(error: Errors, message: str | None) -> dict[str, Any]:
    return {"error_code": int(error), "error": error.name, "error_message": message}


def api_error_response(error: ApiError) -> Response:
    response = Response(
        error_body(error.error, error.message),
        # An error may name its own status (a reused request id: 422), else its code's.
        status=getattr(error, "http_status", None)
        or HTTP_STATUS.get(error.error, status.HTTP_400_BAD_REQUEST),
    )
    if error.error is Errors.NOT_CONTROLLER:
        response["Retry-After"] = "1"
    return response


def validation_message(detail: Any, path: str = "") -> str:
    """Flatten DRF's nested error detail into one line naming each field."""
    if isinstance(detail, dict):
        parts = [
            validation_message(value, f"{path}.{key}" if path else str(key))
            for key, value in detail.items()
        ]
        return "; ".join(parts)
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            text = " ".join(str(item) for item in detail)
            return f"{path}: {text}" if path else text
        return "; ".join(
            validation_message(item, f"{path}[{i}]") for i, item in enumerate(detail) if item
        )
    return f"{path}: {detail}" if path else str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApiError):
        return api_error_response(exc)
    if isinstance(exc, exceptions.ValidationError):
        return Response(
            error_body(Errors.INVALID_REQUEST, validation_message(exc.detail)),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, exceptions.ParseError):
        return Response(
            error_body(Errors.INVALID_REQUEST, f"Malformed request body: {exc.detail}"),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        response = Response(
            error_body(Errors.SASL_AUTHENTICATION_FAILED, str(exc.detail)),
            status=status.HTTP_401_UNAUTHORIZED,
        )
        response["WWW-Authenticate"] = "Bearer"
        return response
    if isinstance(exc, exceptions.Throttled):
        wait = max(1, math.ceil(getattr(exc, "wait", None) or 1))
        response = Response(
            error_body(
                Errors.THROTTLING_QUOTA_EXCEEDED,
                f"Request rate limit exceeded; retry after {wait} s.",
            ),
            status=status.HTTP_429_TOO_MANY_REQUESTS,
        )
        response["Retry-After"] = str(wait)
        return response
    if isinstance(exc, exceptions.PermissionDenied):
        return Response(
            error_body(Errors.CLUSTER_AUTHORIZATION_FAILED, str(exc.detail)),
            status=status.HTTP_403_FORBIDDEN,
        )
    if isinstance(exc, Http404 | exceptions.NotFound):
        return Response(
            error_body(
                Errors.INVALID_REQUEST, str(getattr(exc, "detail", None) or exc) or "Not found."
            ),
            status=status.HTTP_404_NOT_FOUND,
        )
    if isinstance(exc, exceptions.APIException):
        handled = drf_exception_handler(exc, context)
        code = handled.status_code if handled is not None else 400
        return Response(error_body(Errors.INVALID_REQUEST, str(exc.detail)), status=code)
    if is_unavailable(exc):
        logger.warning("metadata or session store unreachable: %s", exc)
        return api_error_response(ApiError(Errors.NOT_CONTROLLER, UNAVAILABLE_MESSAGE))
    logger.exception("unexpected error in the API")
    return Response(
        error_body(Errors.UNKNOWN_SERVER_ERROR, "Unexpected server error."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def json_error(error: Errors, message: str, http_status: int) -> JsonResponse:
    return JsonResponse(error_body(error, message), status=http_status)
