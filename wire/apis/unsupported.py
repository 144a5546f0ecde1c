"""How the control plane answers an API Kafka's controller serves but this one does not (yet):
as Kafka answers an API it does not serve.

On a listener, such an API is simply absent from ApiVersions, so no Kafka client sends it (a
broker that has asked its controller leaves it out of the ApiVersions it gives its clients
too). Inside an Envelope a broker may still carry one (a broker whose forwarding channel has not
connected yet offers its own versions of every forwarded API): the Envelope then answers the
inner request with UNSUPPORTED_VERSION in the inner response, the error on every item where
Kafka's answer has no whole-request field, so the client hears the API is not supported rather
than a server error, and its connection stays open. A version kio cannot even read is the
Envelope's own UNSUPPORTED_VERSION (Kafka's controller answers a forwarded request it cannot
parse so)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.index import load_response_schema

from controlplane.controller.errors import Errors
from wire.convert import from_data, to_data

ALTER_USER_SCRAM_CREDENTIALS = 51


def _scram_results(body: Any, error: dict[str, Any]) -> dict[str, Any]:
    users = [item.name for item in (*body.deletions, *body.upsertions)]
    return {"results": [{"user": user, **error} for user in dict.fromkeys(users)]}


# Kafka's getErrorResponse for answers whose only errors are per item.
_ITEMS: dict[int, Callable[[Any, dict[str, Any]], dict[str, Any]]] = {
    ALTER_USER_SCRAM_CREDENTIALS: _scram_results,
}


def unsupported_answer(api_key: int, version: int, body: Any, name: str) -> Any | None:
    """The response entity of `api_key` v`version` saying UNSUPPORTED_VERSION, or None when
    kio has no schema for it."""
    try:
        response_class = load_response_schema(api_key, version)
    except Exception:  # an API or a version kio does not know
        return None
    error = {
        "error_code": int(Errors.UNSUPPORTED_VERSION),
        "error_message": f"The controller does not support {name} v{version}.",
    }
    items = _ITEMS.get(api_key)
    data = {"throttle_time": 0, **error, **(items(body, error) if items else {})}
    return from_data(response_class, data)


def answered_unsupported(response: Any) -> bool:
    """Whether every error code of `response` is UNSUPPORTED_VERSION (and it has one)."""
    codes: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "error_code" and isinstance(item, int):
                    codes.add(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(to_data(response))
    return codes == {int(Errors.UNSUPPORTED_VERSION)}
