"""Fields and limits shared by the admin forms."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

NAME_MAX = 255  # the ACL columns; Kafka's names fit
CONFIG_NAME_MAX = 1000


def choices(names: Iterable[str]) -> list[tuple[str, str]]:
    return [(name, name) for name in names]


def name_field(label: str, **kwargs: Any) -> forms.CharField:
    return forms.CharField(label=label, max_length=NAME_MAX, **kwargs)
