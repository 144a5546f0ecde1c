"""The ACLs' part of the image (Kafka's AclsImage and AclsDelta).

Replays AccessControlEntryRecord and RemoveAccessControlEntryRecord.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import (
    AccessControlEntryRecord,
    Record,
    RemoveAccessControlEntryRecord,
)


@dataclasses.dataclass(slots=True)
class AclsImage:
    acls: dict[str, AccessControlEntryRecord] = dataclasses.field(default_factory=dict)

    def apply(self, delta: AclsDelta) -> None:
        for acl_id, acl in delta.changed_acls.items():
            if acl is None:
                self.acls.pop(acl_id, None)
            else:
                self.acls[acl_id] = acl

    def as_comparable(self) -> dict[str, Any]:
        return {"acls": {k: v.to_data() for k, v in sorted(self.acls.items())}}

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image: each ACL's own, by id."""
        for acl_id in sorted(self.acls):
            yield self.acls[acl_id]


class AclsDelta:
    """ACLs changed over an AclsImage, by id; None marks a removed ACL."""

    def __init__(self, image: AclsImage) -> None:
        self.image = image
        self.changed_acls: dict[str, AccessControlEntryRecord | None] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            AccessControlEntryRecord: self.replay_acl,
            RemoveAccessControlEntryRecord: self.replay_remove_acl,
        }

    def acl(self, acl_id: str) -> AccessControlEntryRecord | None:
        if acl_id in self.changed_acls:
            return self.changed_acls[acl_id]
        return self.image.acls.get(acl_id)

    def all_acls(self) -> Iterator[tuple[str, AccessControlEntryRecord]]:
        """Every ACL held now, by id: the image's in its order (as changed), then those added."""
        changed = self.changed_acls
        for acl_id, record in self.image.acls.items():
            current = changed.get(acl_id, record)
            if current is not None:
                yield acl_id, current
        for acl_id, added in changed.items():
            if added is not None and acl_id not in self.image.acls:
                yield acl_id, added

    def replay_acl(self, record: AccessControlEntryRecord, offset: int) -> None:
        self.changed_acls[record.id] = record

    def replay_remove_acl(self, record: RemoveAccessControlEntryRecord, offset: int) -> None:
        if self.acl(record.id) is None:
            raise ValueError(f"RemoveAccessControlEntryRecord for unknown ACL {record.id}")
        self.changed_acls[record.id] = None
