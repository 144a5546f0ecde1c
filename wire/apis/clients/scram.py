"""AlterUserScramCredentials and DescribeUserScramCredentials (KIP-554) on the wire: Kafka's
int8 mechanisms to and from the names the REST bodies take, bytes to and from base64, then the
same `controlplane.rpc.execute` the REST views call.

Served on both listener roles, as Kafka's schemas list them: brokers forward the alteration in
an Envelope (a stock broker's own answer to the description comes from its image; clients that
reach this door directly are answered from the projection). A whole-request refusal (no ALTER or
DESCRIBE on the cluster, a malformed body) is answered on every user named, as Kafka's
getErrorResponse does. The salted password is only converted here, never logged.
"""

from __future__ import annotations

import base64
from typing import Any

from controlplane.controller.scram_records import MECHANISM_TYPES
from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import code_of, name_of, respond, run_rpc
from wire.convert import Data, to_data


def _b64(raw: Any) -> str:
    return base64.b64encode(raw if isinstance(raw, bytes) else b"").decode("ascii")


def _mechanism(code: Any) -> str:
    """Kafka's ScramMechanism.fromType: a type it does not know is UNKNOWN (refused per user)."""
    return name_of(MECHANISM_TYPES, int(code))


def _users(wire: Data, *kinds: str) -> list[str]:
    """Every user the request names, once each, in order (whom a refusal is answered to)."""
    return list(dict.fromkeys(str(item["name"]) for kind in kinds for item in wire.get(kind) or ()))


@wire_api(
    "AlterUserScramCredentials", 51, (0, 0), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES
)
def alter_user_scram_credentials(request: WireRequest) -> Any:
    wire = to_data(request.body)
    body = {
        "deletions": [
            {"name": d["name"], "mechanism": _mechanism(d["mechanism"])} for d in wire["deletions"]
        ],
        "upsertions": [
            {
                "name": u["name"],
                "mechanism": _mechanism(u["mechanism"]),
                "iterations": u["iterations"],
                "salt": _b64(u["salt"]),
                "salted_password": _b64(u["salted_password"]),
            }
            for u in wire["upsertions"]
        ],
    }
    answered = run_rpc("AlterUserScramCredentials", body, request)
    if answered.ok:
        results = answered.data["results"]
    else:
        results = [
            {"user": user, **answered.error_fields()}
            for user in _users(wire, "deletions", "upsertions")
        ]
    return respond(request, {"results": results})


@wire_api(
    "DescribeUserScramCredentials", 50, (0, 0), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES
)
def describe_user_scram_credentials(request: WireRequest) -> Any:
    wire = to_data(request.body)
    users = wire.get("users")
    answered = run_rpc("DescribeUserScramCredentials", {"users": users}, request)
    if not answered.ok:
        return respond(request, {**answered.error_fields(), "results": []})
    results = [
        {
            **result,
            "credential_infos": [
                {**info, "mechanism": code_of(MECHANISM_TYPES, info["mechanism"])}
                for info in result.get("credential_infos") or ()
            ],
        }
        for result in answered.data["results"]
    ]
    return respond(request, {**answered.data, "results": results})
