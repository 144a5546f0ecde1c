"""DescribeUserScramCredentials as Kafka's ScramImage.describe answers it: each user's mechanisms
and iteration counts, never a salt or a key.

No users named (null or empty) describes every user with a credential, by name. A user named
twice is DUPLICATE_RESOURCE (once in the answer); a user with no credential is
RESOURCE_NOT_FOUND. Pure over the credentials found for the users asked about, so the web node
answers it from the projection without the controller (as Kafka's brokers answer it from their
image).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controller.errors import Errors

DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NO_SUCH_USER = "Attempt to describe a user credential that does not exist: "

CredentialInfos = Mapping[str, Sequence[tuple[str, int]]]  # user -> [(mechanism, iterations)]


def _result(user: str, infos: Sequence[tuple[str, int]]) -> dict[str, Any]:
    return {
        "user": user,
        "error_code": 0,
        "error_message": None,
        "credential_infos": [
            {"mechanism": mechanism, "iterations": iterations}
            for mechanism, iterations in sorted(infos)
        ],
    }


def _error(user: str, error: Errors, message: str) -> dict[str, Any]:
    return {
        "user": user,
        "error_code": int(error),
        "error_message": message + user,
        "credential_infos": [],
    }


def describe_credentials(users: Sequence[str] | None, found: CredentialInfos) -> dict[str, Any]:
    """The answer for `users` (None or empty: every user in `found`), given the credentials
    `found` of (at least) those users."""
    results = []
    if not users:
        results = [_result(user, found[user]) for user in sorted(found) if found[user]]
    else:
        counts: dict[str, int] = {}
        for user in users:
            counts[user] = counts.get(user, 0) + 1
        for user, count in counts.items():
            if count > 1:
                results.append(_error(user, Errors.DUPLICATE_RESOURCE, DUPLICATE_USER))
            elif found.get(user):
                results.append(_result(user, found[user]))
            else:
                results.append(_error(user, Errors.RESOURCE_NOT_FOUND, NO_SUCH_USER))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}
