"""Rows of the ACL pages, grouped by principal or by resource pattern."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

PERMISSION_BADGES = {"ALLOW": "ok", "DENY": "danger"}


@dataclasses.dataclass(frozen=True, slots=True)
class AclRow:
    id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str

    @property
    def badge(self) -> str:
        return PERMISSION_BADGES.get(self.permission_type, "muted")

    @property
    def resource(self) -> str:
        return f"{self.resource_type}:{self.resource_name} ({self.pattern_type})"


@dataclasses.dataclass(frozen=True, slots=True)
class AclGroup:
    """ACLs of one principal, or of one resource pattern."""

    title: str
    params: dict[str, str]  # the filter that shows this group alone
    rows: list[AclRow]


def acl_rows(values: Iterable[tuple[Any, ...]]) -> list[AclRow]:
    """Rows from ACLs read as ACL_FIELDS values (`acl_list`, `acl_get`)."""
    return [AclRow(*(str(v) for v in row)) for row in values]


def acl_groups(rows: Iterable[AclRow], by: str) -> list[AclGroup]:
    """Consecutive rows grouped by principal or by resource pattern (rows come ordered so)."""
    groups: list[AclGroup] = []
    for row in rows:
        if by == "principal":
            title, params = row.principal, {"principal": row.principal}
        else:
            title = row.resource
            params = {
                "resource_type": row.resource_type,
                "resource_name": row.resource_name,
                "pattern_type": row.pattern_type,
            }
        if groups and groups[-1].title == title:
            groups[-1].rows.append(row)
        else:
            groups.append(AclGroup(title=title, params=params, rows=[row]))
    return groups
