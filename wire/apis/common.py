"""What every admin handler of the wire shares: run a registered RPC as the wire caller (the
REST route's path: authorized, validated, executed, audited), and build the response entity of
the request's version from a REST-shaped answer, with Kafka's codes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from controlplane.controller.errors import Errors
from controlplane.rpc import REGISTRY, RpcAnswer, execute
from wire.apis.base import WireRequest
from wire.convert import Data, from_data

KNOWN_CODES = frozenset(int(code.value) for code in ErrorCode)


def kafka_code(code: Any) -> int:
    """`code` when Kafka defines it; a house code (or none) is UNKNOWN_SERVER_ERROR (-1).
    Inside a response entity `wire.convert.from_data` answers the same for every error code."""
    return int(code) if isinstance(code, int) and int(code) in KNOWN_CODES else -1


def throttle_ms(answer: RpcAnswer) -> int:
    """The answer's throttle time; a request-rate refusal (429) waits its Retry-After."""
    if "throttle_time_ms" in answer.data:
        return int(answer.data["throttle_time_ms"])
    if answer.status == 429:
        return int(answer.headers.get("Retry-After", "1")) * 1000
    return 0


@dataclasses.dataclass(frozen=True, slots=True)
class Answered:
    """A REST answer as a wire handler needs it: the body on 200, else the whole-request error
    (which Kafka's getErrorResponse puts on every item)."""

    data: Data
    error_code: int  # 0 when the request ran (its items carry their own errors)
    error_message: str | None

    @property
    def ok(self) -> bool:
        return self.error_code == 0

    def error_fields(self) -> Data:
        return {"error_code": self.error_code, "error_message": self.error_message}


def run_rpc(name: str, body: Data, request: WireRequest) -> Answered:
    """Run the registered admin RPC `name` as the wire caller: authorized, validated, executed
    and audited exactly as its REST route runs it."""
    answer = execute(REGISTRY[name], body, request.caller)
    if answer.status == 200:
        return Answered(answer.data, 0, None)
    code = answer.data.get("error_code")
    if not isinstance(code, int) or code == 0 or code not in KNOWN_CODES:
        code = int(Errors.UNKNOWN_SERVER_ERROR)
    message = answer.data.get("error_message")
    return Answered(answer.data, code, message if isinstance(message, str) else None)


def respond(request: WireRequest, data: Mapping[str, Any]) -> Any:
    """The response entity of the request's API and version from REST-shaped `data`
    (`throttle_time_ms` is kio's `throttle_time`; fields the version lacks are dropped; a house
    error code Kafka does not define is UNKNOWN_SERVER_ERROR)."""
    data = dict(data)
    if "throttle_time_ms" in data:
        data["throttle_time"] = data.pop("throttle_time_ms")
    data.setdefault("throttle_time", 0)
    return from_data(load_response_schema(request.api_key, request.api_version), data)


def code_of(codes: Mapping[str, int], name: Any, unknown: int = 0) -> int:
    """Kafka's int8 code of an enum name the REST API answers (`unknown` for anything else)."""
    return codes.get(name, unknown) if isinstance(name, str) else unknown


def name_of(codes: Mapping[str, int], code: int, unknown: str = "UNKNOWN") -> str:
    """The name the REST body takes for Kafka's code `code`; Kafka reads a code it does not know
    as UNKNOWN (its `fromCode`/`forId`), which the RPC then refuses as Kafka does."""
    for name, value in codes.items():
        if value == code:
            return name
    return unknown


# Kafka's DescribeConfigsResponse.ConfigSource ids.
CONFIG_SOURCES = {
    "UNKNOWN": 0,
    "DYNAMIC_TOPIC_CONFIG": 1,
    "DYNAMIC_BROKER_CONFIG": 2,
    "DYNAMIC_DEFAULT_BROKER_CONFIG": 3,
    "STATIC_BROKER_CONFIG": 4,
    "DEFAULT_CONFIG": 5,
    "DYNAMIC_BROKER_LOGGER_CONFIG": 6,
    "CLIENT_METRICS_CONFIG": 7,
    "GROUP_CONFIG": 8,
}
