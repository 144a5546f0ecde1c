"""Times as the audit commands and endpoints take them: ISO 8601 or epoch milliseconds."""

from __future__ import annotations

import datetime


class BadTime(ValueError):
    pass


def parse_time(text: str, *, name: str = "time") -> int:
    """Epoch milliseconds from `1764000000000` or `2026-11-24T06:00:00Z` (no zone: UTC)."""
    value = text.strip()
    if value.isascii() and value.lstrip("-").isdigit():
        return int(value)
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadTime(
            f"{name}: {text!r} is neither ISO 8601 (2026-11-24T06:00:00Z) nor epoch milliseconds."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)
