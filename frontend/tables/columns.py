"""A table as a list of columns (as django-tables2's tables), drawn by one partial,
`partials/table.html`: each column says its header, how its cell shows a row, and what sorting
by it orders by. Adding a column is one line of a table's list.

A cell is built in Python (`Column.cell`: the row's value, escaped, or HTML made with
`format_html`): a template per cell would cost most of a long page's time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

Cell = Callable[[Any], Any]  # a row -> what its cell shows (escaped unless SafeString)
RowKey = Callable[[Any], Any]  # a row -> what it sorts by, for rows sorted in Python


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """One column. `sort`: the queryset fields sorting by it orders by (`?sort=<name>`), or a
    key on the rows for a list sorted in Python; None when it does not sort."""

    name: str
    label: str
    cell: Cell | None = None  # None: the row's attribute `name`
    sort: tuple[str, ...] | RowKey | None = None
    num: bool = False  # a number: right-aligned
    css: str = ""  # the cell's class
    testid: str = ""
    title: Cell | None = None  # the cell's hover text
    header_title: str = ""  # the header's hover text

    @property
    def sortable(self) -> bool:
        return self.sort is not None

    def td(self, row: Any) -> str:
        content = self.cell(row) if self.cell is not None else getattr(row, self.name)
        css = " ".join(c for c in ("num" if self.num else "", self.css) if c)
        attributes = _attributes(
            {
                "class": css or None,
                "data-testid": self.testid or None,
                "title": None if self.title is None else self.title(row),
            }
        )
        return f"<td{attributes}>{conditional_escape(content)}</td>"


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """Rows under columns; `row_attributes` gives each `<tr>` its attributes (None leaves one
    out), in order."""

    columns: Sequence[Column]
    rows: Sequence[Any]
    testid: str = ""
    row_attributes: Callable[[Any], Mapping[str, object]] = lambda row: {}
    css: str = "table"  # the table's class

    def body(self) -> SafeString:
        return mark_safe(
            "\n".join(
                f"<tr{_attributes(self.row_attributes(row))}>"
                + "".join(column.td(row) for column in self.columns)
                + "</tr>"
                for row in self.rows
            )
        )


def _attributes(attributes: Mapping[str, object]) -> str:
    return "".join(
        format_html(' {}="{}"', name, value)
        for name, value in attributes.items()
        if value is not None
    )


def sort_fields(columns: Iterable[Column]) -> dict[str, tuple[str, ...]]:
    """What each sortable column orders by, for `views.base.sorting`: its queryset fields, or
    its own name where its rows are sorted in Python (`rows_sorted`)."""
    return {
        c.name: c.sort if isinstance(c.sort, tuple) else (c.name,) for c in columns if c.sortable
    }


def rows_sorted(
    rows: Iterable[Any], keys: Mapping[str, RowKey], key: str, *, descending: bool
) -> list[Any]:
    return sorted(rows, key=keys[key], reverse=descending)


def row_keys(columns: Iterable[Column]) -> dict[str, RowKey]:
    """The sort keys of the columns whose rows are sorted in Python."""
    return {c.name: c.sort for c in columns if callable(c.sort)}


# --- what cells are made of ---------------------------------------------------------------------
def link(url: str, content: Any, *, css: str = "", testid: str = "") -> SafeString:
    attributes = _attributes({"class": css or None, "data-testid": testid or None})
    return format_html('<a href="{}"{}>{}</a>', url, mark_safe(attributes), content)


def badge(kind: str, content: Any, *, testid: str = "", css: str = "") -> SafeString:
    classes = f"badge badge-{kind}" + (f" {css}" if css else "")
    if testid:
        return format_html('<span class="{}" data-testid="{}">{}</span>', classes, testid, content)
    return format_html('<span class="{}">{}</span>', classes, content)


def count(value: int, shown: Callable[[int], Any]) -> Any:
    """A figure: `shown(value)` (a badge, a link) when it is not 0, else a plain 0."""
    return shown(value) if value else 0


def dash_if_none(value: Any) -> Any:
    return "—" if value is None else value


def dash_if_empty(value: Any) -> Any:
    """A value, or a dash for an empty one (as the template filter `default:"—"`)."""
    return value or "—"


def joined(values: Iterable[Any], separator: str = ", ") -> str:
    """Values as the template filter `join` shows them."""
    return separator.join(str(v) for v in values)


def muted(content: Any, *, css: str = "") -> SafeString:
    return format_html('<span class="muted{}">{}</span>', f" {css}" if css else "", content)
