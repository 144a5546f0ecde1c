"""Rows of the SCRAM users page: a user's mechanism and iteration count, never a salt or a key."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

from frontend.tables.columns import Column, Table


@dataclasses.dataclass(frozen=True, slots=True)
class ScramRow:
    user: str
    mechanism: str
    iterations: int


def scram_rows(credentials: Iterable[tuple[str, str, int]]) -> list[ScramRow]:
    return [ScramRow(name, mechanism, iterations) for name, mechanism, iterations in credentials]


def _delete_link(row: ScramRow) -> SafeString:
    query = urlencode({"name": row.user, "mechanism": row.mechanism})
    return format_html(
        '<a class="danger-link" href="{}?{}" data-testid="scram-delete"'
        ' aria-label="Delete {}\'s {} credential">Delete…</a>',
        reverse("frontend:scram-delete"),
        query,
        row.user,
        row.mechanism,
    )


def _set_link(row: ScramRow) -> SafeString:
    query = urlencode({"name": row.user, "mechanism": row.mechanism})
    return format_html(
        '<a href="{}?{}" data-testid="scram-alter">New password…</a>',
        reverse("frontend:scram-set"),
        query,
    )


SCRAM_COLUMNS = (
    Column("user", "User", css="mono", testid="scram-user"),
    Column("mechanism", "Mechanism", css="mono", testid="scram-mechanism"),
    Column("iterations", "Iterations", num=True, testid="scram-iterations"),
    Column(
        "actions",
        mark_safe('<span class="visually-hidden">Actions</span>'),
        lambda r: format_html("{} {}", _set_link(r), _delete_link(r)),
        css="nowrap",
    ),
)


def scram_table(rows: Sequence[ScramRow]) -> Table:
    return Table(
        SCRAM_COLUMNS,
        rows,
        testid="scram-table",
        row_attributes=lambda r: {"data-scram-user": r.user, "data-mechanism": r.mechanism},
    )
