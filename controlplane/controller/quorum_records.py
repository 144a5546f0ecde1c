"""The quorum's own records (KIP-853): which KRaft version the quorum runs and who its voters
are, with the endpoints brokers reach them at.

In Kafka's log these are control records (KRaftVersionRecord, VotersRecord), not metadata
records: a broker configured with `controller.quorum.bootstrap.servers` instead of static voters
learns the active controller's address from them (its Raft client looks the leader's id up in
the latest VotersRecord, by the broker's controller listener name). Here they are records of the
metadata log like any other, at their own offsets, replayed into the features' part of the
image; `controlplane.controller.kraft` writes them as Kafka's control records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from controlplane.controller.records import Record, register_record_type

KRAFT_VERSION_0 = 0  # static voters (controller.quorum.voters), no voter records
KRAFT_VERSION_1 = 1  # KIP-853: voters in the log, brokers may bootstrap from any controller


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class KRaftVersionRecord(Record):
    """Kafka's KRaftVersionRecord: the quorum runs `kraft_version` from this offset on."""

    TYPE: ClassVar[str] = "KRaftVersionRecord"
    kraft_version: int


@dataclasses.dataclass(frozen=True, slots=True)
class VoterEndpoint:
    """One listener of a voter (VotersRecord.Endpoint): the name brokers know it by
    (`controller.listener.names`), where it is advertised."""

    name: str
    host: str
    port: int


@dataclasses.dataclass(frozen=True, slots=True)
class Voter:
    voter_id: int
    directory_id: str  # a UUID: the voter's metadata log directory (ReplicaKey)
    endpoints: tuple[VoterEndpoint, ...]
    min_kraft_version: int = KRAFT_VERSION_0
    max_kraft_version: int = KRAFT_VERSION_1

    def endpoint(self, name: str) -> VoterEndpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)


@register_record_type
@dataclasses.dataclass(frozen=True, slots=True)
class VotersRecord(Record):
    """Kafka's VotersRecord: the whole voter set from this offset on."""

    TYPE: ClassVar[str] = "VotersRecord"
    voters: tuple[Voter, ...]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> VotersRecord:
        return cls(
            voters=tuple(
                Voter(
                    voter_id=int(item["voter_id"]),
                    directory_id=str(item["directory_id"]),
                    endpoints=tuple(VoterEndpoint(**e) for e in item["endpoints"]),
                    min_kraft_version=int(item.get("min_kraft_version", KRAFT_VERSION_0)),
                    max_kraft_version=int(item.get("max_kraft_version", KRAFT_VERSION_1)),
                )
                for item in data["voters"]
            )
        )

    def voter(self, voter_id: int) -> Voter | None:
        return next((v for v in self.voters if v.voter_id == voter_id), None)
