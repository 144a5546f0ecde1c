"""Where a voter's controller listeners are (KIP-853's UpdateRaftVoter, as the controller's
own listener tells it): the VotersRecord brokers look the active controller up in.

A controller listener that serves a broker's Fetch reports its listener name and advertised
address for the voter it fronts (the active controller's id). When the log's voter set does not
hold that endpoint, the controller writes a new VotersRecord: the voter added, or its endpoint of
that name replaced (its other listeners kept). A quorum still at kraft.version 0 (a log written
before the quorum kept voters) moves to kraft.version 1 in the same commit, the KRaftVersionRecord
first, as Kafka's leader appends both when kraft.version is upgraded. Nothing changes when the
voter set already says it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.quorum_records import (
    KRAFT_VERSION_1,
    KRaftVersionRecord,
    Voter,
    VoterEndpoint,
    VotersRecord,
)
from controlplane.controller.records import Record
from controlplane.controller.result import ControllerResult

MAX_PORT = 65535


def voter_endpoints(payload: Mapping[str, Any]) -> tuple[int, tuple[VoterEndpoint, ...]]:
    try:
        voter_id = int(payload["voter_id"])
        endpoints = tuple(
            VoterEndpoint(str(e["name"]), str(e["host"]), int(e["port"]))
            for e in payload["endpoints"]
        )
    except (KeyError, TypeError, ValueError):
        raise ApiError(
            Errors.INVALID_REQUEST, "UpdateRaftVoter needs voter_id and endpoints."
        ) from None
    if voter_id < 0 or not endpoints:
        raise ApiError(Errors.INVALID_REQUEST, "A voter needs an id and an endpoint.")
    for endpoint in endpoints:
        if not endpoint.name or not endpoint.host or not 0 < endpoint.port <= MAX_PORT:
            raise ApiError(Errors.INVALID_REQUEST, f"Not a voter endpoint: {endpoint}.")
    return voter_id, endpoints


def update_voter(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    voter_id, endpoints = voter_endpoints(payload)
    voters = {voter.voter_id: voter for voter in view.voters}
    current = voters.get(voter_id)
    if current is None:
        updated = Voter(voter_id, env.new_uuid(), endpoints)
    else:
        names = {e.name for e in endpoints}
        kept = tuple(e for e in current.endpoints if e.name not in names)
        updated = Voter(
            voter_id,
            current.directory_id,
            tuple(sorted((*kept, *endpoints), key=lambda e: e.name)),
            current.min_kraft_version,
            current.max_kraft_version,
        )
    records: list[Record] = []
    if view.kraft_version < KRAFT_VERSION_1:
        records.append(KRaftVersionRecord(KRAFT_VERSION_1))
    elif current == updated:
        return ControllerResult([], {"error_code": 0, "changed": False})
    voters[voter_id] = updated
    records.append(VotersRecord(tuple(voters[v] for v in sorted(voters))))
    return ControllerResult(records, {"error_code": 0, "changed": True})
