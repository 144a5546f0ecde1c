"""Config provider references, `${provider:[path:]key}`, as Kafka's ConfigTransformer reads them.

The control plane never resolves a reference: it checks their syntax and that they name a
declared provider. Mirror nodes resolve them with their own providers (`mirror.node.providers`)
through `transform`, which leaves a reference it cannot resolve as it is (Kafka's behaviour).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator

# Kafka's ConfigTransformer.DEFAULT_PATTERN.
PATTERN = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
OPENING = "${"


@dataclasses.dataclass(frozen=True, slots=True)
class Reference:
    provider: str
    path: str
    key: str
    text: str  # as written, `${...}`


def references(value: str) -> Iterator[Reference]:
    for match in PATTERN.finditer(value):
        yield Reference(match.group(1), match.group(3) or "", match.group(4), match.group(0))


def has_reference(value: str) -> bool:
    return PATTERN.search(value) is not None


def is_single_reference(value: str) -> bool:
    """The whole value is one reference (nothing literal around it)."""
    return PATTERN.fullmatch(value.strip()) is not None


def reference_problems(value: str) -> list[str]:
    """Why the references in `value` are malformed: a `${` that starts no complete reference, an
    empty provider name or key."""
    problems: list[str] = []
    covered: set[int] = set()
    for match in PATTERN.finditer(value):
        covered.add(match.start())
        if not match.group(1).strip():
            problems.append(f"{match.group(0)} names no config provider")
        elif not match.group(4).strip():
            problems.append(f"{match.group(0)} names no key")
    start = value.find(OPENING)
    while start != -1:
        if start not in covered:
            problems.append(
                f"malformed config provider reference at {value[start : start + 40]!r}: "
                "expected ${provider:[path:]key}"
            )
            break
        start = value.find(OPENING, start + 2)
    return problems


# (provider, path, key) -> the value, or None when the provider has no such key.
Lookup = Callable[[str, str, str], "str | None"]


def transform(value: str, lookup: Lookup) -> tuple[str, list[Reference]]:
    """Replace every reference `lookup` resolves; the others stay literal. Returns the new value
    and the references left unresolved."""
    unresolved: list[Reference] = []

    def replace(match: re.Match[str]) -> str:
        reference = Reference(match.group(1), match.group(3) or "", match.group(4), match.group(0))
        resolved = lookup(reference.provider, reference.path, reference.key)
        if resolved is None:
            unresolved.append(reference)
            return match.group(0)
        return resolved

    return PATTERN.sub(replace, value), unresolved
