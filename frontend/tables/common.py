"""Formatting shared by every area's rows, and the Kafka errors a page shows."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from audit.resources import is_authorization_error
from controlplane.controller.errors import Errors


def format_age(last_contact_ms: int | None, now_ms: int) -> str:
    """`3 s ago`, `2 min ago`, `1 h ago`; an em dash when never heard from."""
    if last_contact_ms is None:
        return "—"
    seconds = max(0, (now_ms - last_contact_ms) // 1000)
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def format_ms(timestamp_ms: int | None) -> str:
    if timestamp_ms is None:
        return "—"
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{timestamp_ms % 1000:03d}Z"


def error_name(code: int) -> str:
    """Kafka's name of an error code (a code Kafka never numbered says so)."""
    try:
        return Errors(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def error_code_of(item: Mapping[str, Any]) -> int:
    code = item.get("error_code", 0)
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


@dataclasses.dataclass(frozen=True, slots=True)
class KafkaProblem:
    """One error the API answered: the whole request's, or one item's."""

    error_code: int
    error: str
    message: str
    subject: str = ""  # the item it is about ("TOPIC orders"), empty for the whole request

    @property
    def is_authorization(self) -> bool:
        return is_authorization_error(self.error_code)
