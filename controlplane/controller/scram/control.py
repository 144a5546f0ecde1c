"""AlterUserScramCredentials on the controller, as Kafka's ScramControlManager.alterCredentials.

Each user named is answered on its own (Kafka's per-user results) and changed all or nothing: a
user named twice in one request (two upsertions, two deletions, or one of each) is
DUPLICATE_RESOURCE and none of its entries applies; an empty name or an iteration count outside
4096..16384 is UNACCEPTABLE_CREDENTIAL; a mechanism other than SCRAM-SHA-256 and SCRAM-SHA-512
is UNSUPPORTED_SASL_MECHANISM; deleting a credential that does not exist is RESOURCE_NOT_FOUND;
below metadata.version 3.5-IV2 every user is UNSUPPORTED_VERSION. A user refused writes nothing;
the others' records are written. Answers come in the order users were first named.

The salted password never reaches the controller: the door that received the request turns each
upsertion into the credential the controller keeps (`controller_upsertion`: the stored key and
the server key, as ScramControlManager.finishUpsertion derives them), so a salted password never
crosses the request channel, a log line or the controller's memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import Record
from controlplane.controller.scram.formatter import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    b64,
    credential_from_salted_password,
    unb64,
)
from controlplane.controller.scram_records import (
    MECHANISMS,
    SCRAM_METADATA_VERSION,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

DUPLICATE = "A user credential cannot be altered twice in the same request"
Change = Callable[[MetadataDelta, Mapping[str, Any]], Record]


def controller_upsertion(upsertion: Mapping[str, Any]) -> dict[str, Any]:
    """An upsertion as the controller takes it: the salted password (base64) replaced by the
    stored and server keys it derives; an unknown mechanism's keys are left empty (the
    controller refuses it before they matter). ValueError when salt or salted password is not
    base64."""
    mechanism = str(upsertion["mechanism"])
    keys = {"stored_key": "", "server_key": ""}
    if mechanism in MECHANISMS:
        credential = credential_from_salted_password(
            mechanism,
            unb64(str(upsertion["salt"])),
            unb64(str(upsertion["salted_password"])),
            int(upsertion["iterations"]),
        )
        keys = {"stored_key": b64(credential.stored_key), "server_key": b64(credential.server_key)}
    return {
        "name": upsertion["name"],
        "mechanism": mechanism,
        "iterations": upsertion["iterations"],
        "salt": upsertion["salt"],
        **keys,
    }


def check_name_and_mechanism(name: str, mechanism: str) -> None:
    """Kafka's validateScramUsernameAndMechanism."""
    if not name:
        raise ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if mechanism not in MECHANISMS:
        raise ApiError(Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")


def check_iterations(iterations: int) -> None:
    """Kafka's validateUpsertion: the mechanism's minimum, ScramControlManager's maximum."""
    if iterations < MIN_ITERATIONS:
        raise ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if iterations > MAX_ITERATIONS:
        raise ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")


def _deletion(view: MetadataDelta, deletion: Mapping[str, Any]) -> Record:
    name, mechanism = str(deletion["name"]), str(deletion["mechanism"])
    check_name_and_mechanism(name, mechanism)
    if view.scram_credential(name, mechanism) is None:
        raise ApiError(
            Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        )
    return RemoveUserScramCredentialRecord(name=name, mechanism=mechanism)


def _upsertion(view: MetadataDelta, upsertion: Mapping[str, Any]) -> Record:
    name, mechanism = str(upsertion["name"]), str(upsertion["mechanism"])
    check_name_and_mechanism(name, mechanism)
    check_iterations(int(upsertion["iterations"]))
    salt, stored, server = (
        str(upsertion.get(k) or "") for k in ("salt", "stored_key", "server_key")
    )
    try:
        unb64(salt)
        if not unb64(stored) or not unb64(server):
            raise ValueError("no keys")
    except ValueError:
        raise ApiError(
            Errors.INVALID_REQUEST, "The credential's salt or keys are malformed"
        ) from None
    return UserScramCredentialRecord(
        name=name,
        mechanism=mechanism,
        salt=salt,
        stored_key=stored,
        server_key=server,
        iterations=int(upsertion["iterations"]),
    )


def _named_users(payload: Mapping[str, Any]) -> tuple[list[str], set[str]]:
    """Every user named, in order of first appearance, and those named more than once."""
    order: list[str] = []
    seen: set[str] = set()
    twice: set[str] = set()
    for kind in ("deletions", "upsertions"):
        for item in payload.get(kind) or ():
            name = str(item["name"])
            if name in seen:
                twice.add(name)
            else:
                seen.add(name)
                order.append(name)
    return order, twice


def alter_credentials(
    view: MetadataDelta, payload: Mapping[str, Any]
) -> tuple[list[Record], dict[str, Any]]:
    """(records, response) of an AlterUserScramCredentials; see the module's docstring."""
    order, twice = _named_users(payload)
    level = view.metadata_version
    supported = level is None or level >= SCRAM_METADATA_VERSION
    changes: dict[str, tuple[Change, Mapping[str, Any]]] = {}
    for item in payload.get("deletions") or ():
        changes.setdefault(str(item["name"]), (_deletion, item))
    for item in payload.get("upsertions") or ():
        changes.setdefault(str(item["name"]), (_upsertion, item))
    records: list[Record] = []
    results = []
    for name in order:
        try:
            if name in twice:
                raise ApiError(Errors.DUPLICATE_RESOURCE, DUPLICATE)
            if not supported:
                raise ApiError(
                    Errors.UNSUPPORTED_VERSION,
                    "The current metadata.version does not support SCRAM",
                )
            change, item = changes[name]
            record = change(view, item)
        except ApiError as error:
            results.append(_result(name, error))
            continue
        records.append(record)
        results.append(_result(name, None))
    return records, {"throttle_time_ms": 0, "results": results}


def _result(user: str, error: ApiError | None) -> dict[str, Any]:
    if error is None:
        return {"user": user, "error_code": 0, "error": Errors.NONE.name, "error_message": None}
    return {"user": user, **error.as_fields()}
