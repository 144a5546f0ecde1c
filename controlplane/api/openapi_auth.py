"""The OpenAPI schema's extensions (drf-spectacular finds them on import: controlplane.apps
imports this module): the Bearer and session security schemes, and request bodies that say they
refuse unknown fields, as StrictSerializer does."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

from controlplane.api.fields import StrictSerializer

NO_NUL = "^[^\\u0000]*$"
# What Python's str.strip() takes away (DRF trims text fields before checking they are blank).
_SPACE = (
    "\\t\\n\\u000b\\u000c\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000"
)
NOT_BLANK = f"^[^\\u0000]*[^\\u0000{_SPACE}][^\\u0000]*$"


class BearerTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "controlplane.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A principal's token (`manage.py create_principal NAME`)",
        }


class PrincipalSessionScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "controlplane.authentication.PrincipalSessionAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "The UI's session (log in at /ui/login/), CSRF enforced",
        }


class StrictSerializerExtension(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    """A StrictSerializer refuses fields it does not declare: `additionalProperties: false`."""

    target_class = "controlplane.api.fields.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        schema.update(getattr(self.target, "openapi_schema", {}))
        if schema.get("description") == StrictSerializer.__doc__:
            del schema["description"]  # the base class's docstring says nothing of this body
        properties = schema.get("properties", {})
        for name, field in force_instance(self.target).fields.items():  # type: ignore[no-untyped-call]
            prop = properties.get(name)
            if not isinstance(prop, dict):
                continue
            prop.update(getattr(field, "openapi", {}))
            if isinstance(field, serializers.ListField):
                if not field.allow_empty:
                    prop.setdefault("minItems", 1)
                field, prop = field.child, prop.get("items")
            if isinstance(field, serializers.CharField) and isinstance(prop, dict):
                _text_rules(field, prop)
        return schema


def _text_rules(field: serializers.CharField, prop: dict[str, Any]) -> None:
    """What DRF refuses in a text field: blanks (unless allowed) and NUL characters."""
    blank_refused = not field.allow_blank
    if blank_refused and not prop.get("minLength"):
        prop["minLength"] = 1
    if not {"enum", "pattern", "format"} & set(prop):
        prop["pattern"] = NOT_BLANK if blank_refused and field.trim_whitespace else NO_NUL
