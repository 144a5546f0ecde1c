"""The API's JSON parser: any body either parses into bounded JSON or is a 400, never a crash.

Python's JSON decoder recurses once per nesting level: a body nested a thousand levels deep
raised RecursionError (a 500 with a traceback). No Kafka request nests more than a few levels,
so anything deeper than `MAX_DEPTH` is refused as INVALID_REQUEST before anyone walks it.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


def json_depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests containers more than `limit` levels deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.") from None
        except (ValueError, UnicodeError) as error:  # DRF lets some of these through
            raise ParseError(f"JSON parse error - {error}") from None
        if json_depth_exceeds(data):
            raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.")
        return data
