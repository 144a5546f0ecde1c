"""The SCRAM credentials' part of the image (Kafka's ScramImage and ScramDelta): each user's
credential per mechanism.

Replays UserScramCredentialRecord (created or replaced) and RemoveUserScramCredentialRecord (a
credential that must exist, as Kafka's ScramControlManager.replay insists).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import Record
from controlplane.controller.scram_records import (
    MECHANISMS,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

ScramKey = tuple[str, str]  # (user name, mechanism)


@dataclasses.dataclass(slots=True)
class ScramImage:
    credentials: dict[ScramKey, UserScramCredentialRecord] = dataclasses.field(default_factory=dict)

    def apply(self, delta: ScramDelta) -> None:
        for key, credential in delta.changed_scram_credentials.items():
            if credential is None:
                self.credentials.pop(key, None)
            else:
                self.credentials[key] = credential

    def as_comparable(self) -> dict[str, Any]:
        return {
            "scram_credentials": {
                f"{name}/{mechanism}": record.to_data()
                for (name, mechanism), record in sorted(self.credentials.items())
            }
        }

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part: each credential, by user and mechanism."""
        for key in sorted(self.credentials):
            yield self.credentials[key]


class ScramDelta:
    """Credentials created, replaced or removed (None) over a ScramImage."""

    def __init__(self, image: ScramImage) -> None:
        self.image = image
        self.changed_scram_credentials: dict[ScramKey, UserScramCredentialRecord | None] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            UserScramCredentialRecord: self.replay_credential,
            RemoveUserScramCredentialRecord: self.replay_remove_credential,
        }

    def scram_credential(self, name: str, mechanism: str) -> UserScramCredentialRecord | None:
        key = (name, mechanism)
        if key in self.changed_scram_credentials:
            return self.changed_scram_credentials[key]
        return self.image.credentials.get(key)

    def all_scram_credentials(self) -> Iterator[UserScramCredentialRecord]:
        for key, credential in self.image.credentials.items():
            if key not in self.changed_scram_credentials:
                yield credential
        for changed in self.changed_scram_credentials.values():
            if changed is not None:
                yield changed

    def replay_credential(self, record: UserScramCredentialRecord, offset: int) -> None:
        if record.mechanism not in MECHANISMS or not record.name:
            raise ValueError(
                f"UserScramCredentialRecord for {record.name!r} with mechanism {record.mechanism!r}"
            )
        self.changed_scram_credentials[(record.name, record.mechanism)] = record

    def replay_remove_credential(
        self, record: RemoveUserScramCredentialRecord, offset: int
    ) -> None:
        if self.scram_credential(record.name, record.mechanism) is None:
            raise ValueError(
                f"RemoveUserScramCredentialRecord for {record.name!r} ({record.mechanism}), "
                "which has no credential"
            )
        self.changed_scram_credentials[(record.name, record.mechanism)] = None
