"""Rows of the config pages: each key as DescribeConfigs answers it, and a diff of changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from controlplane.controller.config_schema import REDACTED
from controlplane.controller.configs.describe import DEFAULT_CONFIG

NOT_SET = "(not set)"
DELETED = "(deleted)"


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigRow:
    """One key of a resource as DescribeConfigs answers it, for the page."""

    name: str
    value: str  # what to show: the value, "(redacted)" for a set sensitive key, "(not set)"
    source: str
    default: str
    documentation: str
    config_type: str
    read_only: bool
    sensitive: bool
    own_value: str | None  # the value set at this resource's own level (None: not set, secret)
    set_here: bool  # a dynamic value at this resource's own level
    inherited: str  # what the key falls back to without this level's value
    inherited_source: str


def config_row(entry: Mapping[str, Any], *, own_source: str, default: str | None) -> ConfigRow:
    """A row from one DescribeConfigs entry (asked with synonyms and documentation).

    `own_source` is the source of a value set at this resource's level (DYNAMIC_TOPIC_CONFIG
    for a topic...): the synonyms after it are what the key falls back to without it. A
    sensitive key's entry carries no value at all; its synonyms still say where it is set."""
    sensitive = bool(entry["is_sensitive"])
    source = str(entry["config_source"])
    synonyms = list(entry.get("synonyms") or [])
    set_here = source == own_source
    fallback = synonyms[1:] if set_here else synonyms
    if fallback:
        inherited = REDACTED if sensitive else _or_not_set(fallback[0]["value"])
        inherited_source = str(fallback[0]["source"])
    else:
        inherited, inherited_source = NOT_SET, DEFAULT_CONFIG
    return ConfigRow(
        name=str(entry["name"]),
        value=(REDACTED if synonyms else NOT_SET) if sensitive else _or_not_set(entry["value"]),
        source=source,
        default=NOT_SET if default is None or sensitive else default,
        documentation=str(entry.get("documentation") or ""),
        config_type=str(entry.get("config_type") or ""),
        read_only=bool(entry.get("read_only")),
        sensitive=sensitive,
        own_value=entry["value"] if set_here and not sensitive else None,
        set_here=set_here,
        inherited=inherited,
        inherited_source=inherited_source,
    )


def _or_not_set(value: Any) -> str:
    return NOT_SET if value is None else str(value)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigChange:
    """One IncrementalAlterConfigs operation: SET a value or DELETE the key."""

    name: str
    operation: str
    value: str | None = None

    def as_body(self) -> dict[str, Any]:
        return {"name": self.name, "config_operation": self.operation, "value": self.value}


@dataclasses.dataclass(frozen=True, slots=True)
class DiffRow:
    name: str
    operation: str
    old: str
    new: str
    fallback: str  # what a deleted key goes back to
    sensitive: bool

    @property
    def deletes(self) -> bool:
        return self.operation == "DELETE"


def config_diff(changes: Iterable[ConfigChange], rows: Mapping[str, ConfigRow]) -> list[DiffRow]:
    """Per change: the key's value at this level now → its new value (or deleted, and what it
    then falls back to). Sensitive values are never shown, neither the old nor the new one."""
    diff = []
    for change in changes:
        row = rows.get(change.name)
        sensitive = row is not None and row.sensitive
        if row is None:  # a key the registry does not know: the API will say so
            old, fallback = NOT_SET, NOT_SET
        else:
            old = (
                (REDACTED if row.set_here else NOT_SET) if sensitive else _or_not_set(row.own_value)
            )
            fallback = f"{row.inherited} ({row.inherited_source})"
        if change.operation == "DELETE":
            new = DELETED
        else:
            new = REDACTED if sensitive else _or_not_set(change.value)
        diff.append(
            DiffRow(
                name=change.name,
                operation=change.operation,
                old=old,
                new=new,
                fallback=fallback,
                sensitive=sensitive,
            )
        )
    return diff
