"""DescribeClientQuotas and AlterClientQuotas on the wire: the REST bodies are Kafka's already,
except the match type, an int8 on the wire and a name in the REST body."""

from __future__ import annotations

import dataclasses
from typing import Any

from controlplane.controller.quotas.describe import MatchType
from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import respond, run_rpc
from wire.convert import Data, to_data


def _match_type(code: int) -> str:
    try:
        return MatchType(code).name
    except ValueError:  # Kafka: "Unexpected match type" (INVALID_REQUEST), the RPC's answer too
        return f"UNKNOWN({code})"


def _component(component: Data) -> Data:
    return {**component, "match_type": _match_type(component["match_type"])}


@wire_api("DescribeClientQuotas", 48, (0, 1))
def describe_client_quotas(request: WireRequest) -> Any:
    wire = to_data(request.body)
    body = {"components": [_component(c) for c in wire["components"]], "strict": wire["strict"]}
    answered = run_rpc("DescribeClientQuotas", body, request)
    if not answered.ok:
        # Kafka answers a refused describe with null entries (from_data reads null as empty)
        refused = respond(request, {**answered.error_fields(), "entries": None})
        return dataclasses.replace(refused, entries=None)
    return respond(request, answered.data)


@wire_api("AlterClientQuotas", 49, (0, 1), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def alter_client_quotas(request: WireRequest) -> Any:
    wire = to_data(request.body)
    answered = run_rpc("AlterClientQuotas", wire, request)
    if answered.ok:
        entries = answered.data["entries"]
    else:
        entries = [{**answered.error_fields(), "entity": e["entity"]} for e in wire["entries"]]
    return respond(request, {"entries": entries})
