"""The ACL pages' tables: ACLs (the core's AccessControlEntryRecord, one a row) grouped by
principal or by resource pattern, each group a table of columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.template.defaultfilters import urlencode
from django.urls import reverse

from controlplane.controller.records import AccessControlEntryRecord
from frontend.tables.columns import Column, Table, badge, link

PERMISSION_BADGES = {"ALLOW": "ok", "DENY": "danger"}


def acl_resource(acl: AccessControlEntryRecord) -> str:
    return f"{acl.resource_type}:{acl.resource_name} ({acl.pattern_type})"


def _acls_of_resource(acl: AccessControlEntryRecord) -> str:
    return (
        f"{reverse('frontend:acl-list')}?resource_type={acl.resource_type}"
        f"&resource_name={urlencode(acl.resource_name)}&pattern_type={acl.pattern_type}"
        "&group=resource"
    )


def _acls_of_principal(acl: AccessControlEntryRecord) -> str:
    return f"{reverse('frontend:acl-list')}?principal={urlencode(acl.principal)}"


RESOURCE = Column(
    "resource", "Resource", lambda a: link(_acls_of_resource(a), acl_resource(a)), css="mono"
)
PRINCIPAL = Column(
    "principal", "Principal", lambda a: link(_acls_of_principal(a), a.principal), css="mono"
)
ACL_COLUMNS = (
    Column("host", "Host", css="mono"),
    Column("operation", "Operation", css="mono", testid="acl-operation"),
    Column(
        "permission_type",
        "Permission",
        lambda a: badge(
            PERMISSION_BADGES.get(a.permission_type, "muted"),
            a.permission_type,
            testid="acl-permission",
        ),
    ),
    Column(
        "delete",
        "",
        lambda a: link(
            reverse("frontend:acl-delete-confirm", args=[a.id]),
            "Delete…",
            css="danger-link",
            testid="acl-delete",
        ),
        css="nowrap",
    ),
)
# A group's first column names what the group does not: the resource of a principal's ACLs.
FIRST_COLUMN = {"principal": RESOURCE, "resource": PRINCIPAL}


@dataclasses.dataclass(frozen=True, slots=True)
class AclGroup:
    """ACLs of one principal, or of one resource pattern."""

    title: str
    params: dict[str, str]  # the filter that shows this group alone
    rows: list[AccessControlEntryRecord]
    by: str

    @property
    def table(self) -> Table:
        return Table(
            (FIRST_COLUMN[self.by], *ACL_COLUMNS),
            self.rows,
            testid="acl-table",
            row_attributes=lambda a: {"data-acl-id": a.id},
        )


def acl_rows(values: Iterable[tuple[Any, ...]]) -> list[AccessControlEntryRecord]:
    """Rows from ACLs read as ACL_FIELDS values (`acl_list`, `acl_get`)."""
    return [AccessControlEntryRecord(*(str(v) for v in row)) for row in values]


def acl_groups(rows: Iterable[AccessControlEntryRecord], by: str) -> list[AclGroup]:
    """Consecutive rows grouped by principal or by resource pattern (rows come ordered so)."""
    groups: list[AclGroup] = []
    for row in rows:
        if by == "principal":
            title, params = row.principal, {"principal": row.principal}
        else:
            title = acl_resource(row)
            params = {
                "resource_type": row.resource_type,
                "resource_name": row.resource_name,
                "pattern_type": row.pattern_type,
            }
        if groups and groups[-1].title == title:
            groups[-1].rows.append(row)
        else:
            groups.append(AclGroup(title=title, params=params, rows=[row], by=by))
    return groups
