"""The OpenAPI schema documents both listeners: the public API and the brokers' internal API.

Each listener has its own URL conf (shell/urls.py, shell/urls_internal.py) and
serves only its own paths, but an operator reads one description of the API: `/api/schema/` (and
`manage.py spectacular`) list every path of both, as they did when one URL conf served them all.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from drf_spectacular.generators import SchemaGenerator


def both_listeners_patterns() -> list[Any]:
    """The internal conf's patterns, then the public conf's."""
    patterns: list[Any] = []
    for urlconf in (settings.CP_INTERNAL_URLCONF, settings.CP_PUBLIC_URLCONF):
        patterns += import_module(urlconf).urlpatterns
    return patterns


class BothListenersSchemaGenerator(SchemaGenerator):
    """drf-spectacular's generator over both URL confs unless given a URL conf or patterns."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("urlconf") is None and kwargs.get("patterns") is None:
            kwargs["patterns"] = both_listeners_patterns()
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]


# --- an honest schema: every error an operation can answer, and how to authenticate ----------
ERROR_STATUSES: dict[str, str] = {
    "400": "INVALID_REQUEST: malformed body or query, wrong types, unknown fields",
    "401": "No or bad bearer token",
    "403": "Not authorized (CLUSTER_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED)",
    "404": "No such resource or path",
    "405": "Method not allowed",
    "408": "The request's headers or body arrived too slowly (REQUEST_TIMED_OUT)",
    "411": "A chunked body the server cannot read to its end",
    "413": "Body larger than CP_MAX_BODY_BYTES",
    "415": "Body not JSON",
    "503": "No active controller (NOT_CONTROLLER); retry after Retry-After",
    "504": "The controller did not answer before the request's deadline (REQUEST_TIMED_OUT)",
}
PUBLIC_ONLY_STATUSES = {
    "429": "Request rate limit of the principal exceeded (THROTTLING_QUOTA_EXCEEDED); retry "
    "after Retry-After",
}
# The internal listener's rate: a broker's heartbeats and registrations (CP_HEARTBEAT_RATE_LIMIT).
BROKER_RATE_PATHS = ("/internal/v1/broker-heartbeat", "/internal/v1/broker-registration")
BROKER_RATE_STATUSES = {
    "429": "This broker's heartbeats and registrations exceed CP_HEARTBEAT_RATE_LIMIT "
    "(THROTTLING_QUOTA_EXCEEDED): not applied; retry after Retry-After",
}
NO_NUL = "^[^\\u0000]*$"
RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds"}}


def _error_response(description: str, status: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status in ("429", "503"):
        response["headers"] = RETRY_AFTER
    if status == "401":
        response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    return response


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> Any:
    """drf-spectacular postprocessing hook: Kafka's error body on every operation, for every
    status it may answer besides its success (docs/reference/conventions.md)."""
    from controlplane.api.responses import ERROR

    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR
    for path, operations in result.get("paths", {}).items():
        statuses = dict(ERROR_STATUSES)
        if path.startswith("/api/"):
            statuses.update(PUBLIC_ONLY_STATUSES)
        if path in BROKER_RATE_PATHS:
            statuses.update(BROKER_RATE_STATUSES)
        for method, operation in operations.items():
            if method.startswith("x-") or not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if schema.get("type") == "string" and not {"enum", "pattern", "format"} & set(
                    schema
                ):
                    schema["pattern"] = NO_NUL  # Django's forms refuse NUL characters
            _require_a_body_of_shapes(result["components"]["schemas"], operation)
            responses = operation.setdefault("responses", {})
            for status, description in statuses.items():
                responses.setdefault(status, _error_response(description, status))
    return result


def _require_a_body_of_shapes(schemas: dict[str, Any], operation: dict[str, Any]) -> None:
    """A body that is one of several shapes, each with required fields (a polymorphic request,
    `oneOf`), is itself required: drf-spectacular marks it optional, as it finds no required
    field on the union."""
    body = operation.get("requestBody")
    if not body or body.get("required"):
        return
    for media in body.get("content", {}).values():
        ref = media.get("schema", {}).get("$ref", "")
        shapes = schemas.get(ref.rsplit("/", 1)[-1], {}).get("oneOf")
        if shapes and all(_required_fields(schemas, shape) for shape in shapes):
            body["required"] = True


def _required_fields(schemas: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    ref = schema.get("$ref", "")
    resolved = schemas.get(ref.rsplit("/", 1)[-1], {}) if ref else schema
    return list(resolved.get("required", []))
