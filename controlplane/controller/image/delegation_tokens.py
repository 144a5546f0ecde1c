"""The delegation tokens' part of the image (Kafka's DelegationTokenImage and
DelegationTokenDelta): live tokens by id, without their HMAC (it is recomputable).

Replays DelegationTokenRecord and RemoveDelegationTokenRecord.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from controlplane.controller.records import (
    DelegationTokenRecord,
    Record,
    RemoveDelegationTokenRecord,
)


@dataclasses.dataclass(slots=True)
class DelegationTokenImage:
    delegation_tokens: dict[str, DelegationTokenRecord] = dataclasses.field(default_factory=dict)

    def apply(self, delta: DelegationTokenDelta) -> None:
        for token_id, token in delta.changed_delegation_tokens.items():
            if token is None:
                self.delegation_tokens.pop(token_id, None)
            else:
                self.delegation_tokens[token_id] = token

    def as_comparable(self) -> dict[str, Any]:
        return {
            "delegation_tokens": {k: v.to_data() for k, v in sorted(self.delegation_tokens.items())}
        }

    def records(self) -> Iterator[Record]:
        """The records that rebuild this part in an empty image: each live token's latest
        record (its creation or last renewal), by id."""
        for token_id in sorted(self.delegation_tokens):
            yield self.delegation_tokens[token_id]


class DelegationTokenDelta:
    """Tokens created, renewed or removed (None) over a DelegationTokenImage."""

    def __init__(self, image: DelegationTokenImage) -> None:
        self.image = image
        self.changed_delegation_tokens: dict[str, DelegationTokenRecord | None] = {}

    def replayers(self) -> dict[type[Record], Callable[[Any, int], None]]:
        return {
            DelegationTokenRecord: self.replay_delegation_token,
            RemoveDelegationTokenRecord: self.replay_remove_delegation_token,
        }

    def delegation_token(self, token_id: str) -> DelegationTokenRecord | None:
        if token_id in self.changed_delegation_tokens:
            return self.changed_delegation_tokens[token_id]
        return self.image.delegation_tokens.get(token_id)

    def all_delegation_tokens(self) -> Iterator[DelegationTokenRecord]:
        for token_id, token in self.image.delegation_tokens.items():
            if token_id not in self.changed_delegation_tokens:
                yield token
        for changed in self.changed_delegation_tokens.values():
            if changed is not None:
                yield changed

    def replay_delegation_token(self, record: DelegationTokenRecord, offset: int) -> None:
        if record.expiration_timestamp > record.max_timestamp:
            raise ValueError(f"DelegationTokenRecord {record.token_id} expires after its max")
        self.changed_delegation_tokens[record.token_id] = record

    def replay_remove_delegation_token(
        self, record: RemoveDelegationTokenRecord, offset: int
    ) -> None:
        if self.delegation_token(record.token_id) is None:
            raise ValueError(f"RemoveDelegationTokenRecord for unknown token {record.token_id}")
        self.changed_delegation_tokens[record.token_id] = None
