"""Java's `.properties` format, as `java.util.Properties.load` reads it (mm2.properties).

Logical lines (a natural line ending in an odd number of backslashes continues on the next,
whose leading whitespace is skipped), comments (`#` or `!` first), keys ending at the first
unescaped `=`, `:` or whitespace, and the escapes `\\t \\n \\r \\f \\uXXXX` (any other escaped
character stands for itself). A repeated key keeps its last value, as Java's does.
"""

from __future__ import annotations

import dataclasses

WHITESPACE = " \t\f"
SEPARATORS = "=:"
ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """The text cannot be read as Java properties (a bad `\\u` escape)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Properties:
    """The keys and values, in the order they were first seen, and the line each was set on."""

    values: dict[str, str]
    lines: dict[str, int]


def parse_properties(text: str) -> Properties:
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for line_number, logical in _logical_lines(text):
        key, value = _split(logical, line_number)
        values[key] = value
        lines[key] = line_number
    return Properties(values, lines)


def _natural_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    natural = _natural_lines(text)
    index = 0
    while index < len(natural):
        start = index
        line = natural[index].lstrip(WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while _continues(line) and index < len(natural):
            parts.append(line[:-1])
            line = natural[index].lstrip(WHITESPACE)
            index += 1
        if _continues(line):  # a continuation at the end of the text joins nothing
            line = line[:-1]
        parts.append(line)
        found.append((start + 1, "".join(parts)))
    return found


def _continues(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split(line: str, line_number: int) -> tuple[str, str]:
    index = 0
    key_end = len(line)
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in SEPARATORS or char in WHITESPACE:
            key_end = index
            break
        index += 1
    value_start = key_end
    while value_start < len(line) and line[value_start] in WHITESPACE:
        value_start += 1
    if value_start < len(line) and line[value_start] in SEPARATORS:
        value_start += 1
        while value_start < len(line) and line[value_start] in WHITESPACE:
            value_start += 1
    return (
        _unescape(line[:key_end], line_number),
        _unescape(line[value_start:], line_number),
    )


def _unescape(text: str, line_number: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        escaped = text[index + 1]
        if escaped == "u":
            digits = text[index + 2 : index + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"line {line_number}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            index += 6
            continue
        out.append(ESCAPES.get(escaped, escaped))
        index += 2
    return "".join(out)
