"""The OpenAPI schema documents both listeners: the public API and the brokers' internal API.

Each listener has its own URL conf (controlplane/urls.py, controlplane/urls_internal.py) and
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
