"""The current request id for every log line, and formatters whose lines cannot be forged.

Kept free of Django imports: logging configuration loads this module.

Every field of a log line may hold what a client sent (a resource name, a principal, a path), so
a formatter escapes control characters in each of them: a newline in a resource name becomes the
two characters `\\n`, and one record is always one line (a traceback's lines follow it, indented,
so no line it adds can pass for a record). `CP_LOG_FORMAT=json` writes one JSON object per line
instead, for log shippers.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from typing import Any

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

# C0 and C1 control characters, DEL, and Unicode's line and paragraph separators.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
TRACEBACK_INDENT = "    "


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    named = NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """`text` with every control character written as an escape: always one printable line."""
    return CONTROL_CHARACTERS.sub(_escape_one, text)


class RequestIdLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


def _traceback(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    """The record's traceback (and stack), each line escaped and indented."""
    parts = []
    if record.exc_info:
        parts.append(formatter.formatException(record.exc_info))
    elif record.exc_text:
        parts.append(record.exc_text)
    if record.stack_info:
        parts.append(formatter.formatStack(record.stack_info))
    lines = "\n".join(parts).splitlines()
    return "".join(f"\n{TRACEBACK_INDENT}{escape_control(line)}" for line in lines)


class SafeFormatter(logging.Formatter):
    """The plain text format, one line per record whatever its fields hold."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = escape_control(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        saved = {
            name: value
            for name, value in vars(record).items()
            if isinstance(value, str)
            and name not in ("message", "asctime", "exc_text")
            and CONTROL_CHARACTERS.search(value)
        }
        for name, value in saved.items():
            setattr(record, name, escape_control(value))
        try:
            line = self.formatMessage(record)
        finally:
            for name, value in saved.items():
                setattr(record, name, value)
        return line + _traceback(self, record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, request id, message, traceback."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, self.datefmt),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["traceback"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # json.dumps escapes every control character (ensure_ascii also the separators).
        return json.dumps(entry, default=str)
