"""Rows of the config pages: each key as DescribeConfigs answers it, and a diff of changes;
the tables of keys and of the resources with configs as their columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from controlplane.controller.config_schema import REDACTED
from controlplane.controller.configs.describe import DEFAULT_CONFIG
from frontend.tables.columns import Column, Table, badge, link, muted
from frontend.templatetags.ui import config_value

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


# --- the tables --------------------------------------------------------------------------------
def _config_name(row: ConfigRow) -> SafeString:
    flags = (
        format_html(" {}", badge("muted", "read-only")) if row.read_only else "",
        format_html(" {}", badge("warn", "sensitive")) if row.sensitive else "",
    )
    return format_html("{}{}{}", row.name, *flags)


CONFIG_COLUMNS = (
    Column("name", "Name", _config_name, css="mono nowrap"),
    Column(
        "value",
        "Value",
        lambda r: config_value(r.value, r.name),
        css="mono",
        testid="config-value",
    ),
    Column(
        "source",
        "Source",
        lambda r: badge("ok" if r.set_here else "muted", r.source),
        testid="config-source",
    ),
    Column(
        "default",
        "Default",
        lambda r: config_value(r.default, r.name),
        css="mono",
        testid="config-default",
    ),
    Column(
        "documentation",
        "Documentation",
        lambda r: format_html("{} {}", r.documentation, muted(f"({r.config_type})")),
        css="small",
    ),
)


def config_table(rows: Sequence[ConfigRow]) -> Table:
    return Table(
        CONFIG_COLUMNS,
        rows,
        testid="config-table",
        row_attributes=lambda r: {
            "id": f"config-{r.name}",
            "data-config": r.name,
            "class": "set-here" if r.set_here else "",
        },
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigResource:
    """A resource with configs of its own: the index's row that links to them."""

    key: str
    link: SafeString
    sets: str


def broker_config_table(broker_ids: Iterable[int]) -> Table:
    """The cluster default, then each broker."""
    default = format_html(
        "{} {}",
        link(reverse("frontend:default-config"), "Cluster default"),
        muted('BROKER ""', css="small mono"),
    )
    rows = [
        ConfigResource(
            "default", default, "every broker's default (DYNAMIC_DEFAULT_BROKER_CONFIG)"
        ),
        *(
            ConfigResource(
                f"broker-{b}",
                link(reverse("frontend:broker-config", args=[b]), f"Broker {b}"),
                "this broker's own values (DYNAMIC_BROKER_CONFIG)",
            )
            for b in broker_ids
        ),
    ]
    columns = (
        Column("link", "Resource"),
        Column("sets", "What it sets", css="muted"),
    )
    return Table(
        columns,
        rows,
        testid="broker-config-table",
        row_attributes=lambda r: {"data-config-resource": r.key},
    )


TOPIC_CONFIG_COLUMNS = (
    Column(
        "topic",
        "Topic",
        lambda name: link(reverse("frontend:topic-config", args=[name]), name),
        css="mono",
    ),
)


CLIENT_CONFIG_HEADINGS = {"client-metrics": "Subscription", "group": "Group"}


def client_config_table(kind: str, names: Sequence[str]) -> Table:
    """Client metrics subscriptions (KIP-714) or groups (KIP-848) with configs, by name."""
    column = Column(
        kind,
        CLIENT_CONFIG_HEADINGS[kind],
        lambda name: link(reverse(f"frontend:{kind}-config", args=[name]), name),
        css="mono",
    )
    return Table(
        (column,),
        names,
        testid=f"{kind}-config-table",
        row_attributes=lambda name: {"data-config-resource": f"{kind}-{name}"},
    )


def topic_config_table(names: Sequence[str]) -> Table:
    return Table(
        TOPIC_CONFIG_COLUMNS,
        names,
        testid="topic-config-table",
        row_attributes=lambda name: {"data-config-resource": f"topic-{name}"},
    )
