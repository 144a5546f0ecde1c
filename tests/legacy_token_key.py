"""A metadata log as an older version wrote it: `delegation.token.secret.key` set as a dynamic
config, a ConfigRecord every reader of the log could see. Written through the real controller
with that version's schema (the key not read-only), so the log, the state tables and the
snapshots are what that version left."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.controller.config_schema import BROKER_CONFIGS
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext

TOKEN_KEY = "delegation.token.secret.key"


@contextlib.contextmanager
def older_schema() -> Iterator[None]:
    """The key as an older version defined it: a dynamic config (tokens signed with it)."""
    dynamic = dataclasses.replace(BROKER_CONFIGS[TOKEN_KEY], read_only=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(BROKER_CONFIGS, TOKEN_KEY, dynamic)
        yield


def older_write(api: str, payload: dict[str, Any], principal: str = "User:admin") -> Any:
    """One write through the controller as the older version made it."""
    context = RequestContext(principal=principal, request_id=str(uuid.uuid4()))
    with older_schema():
        return get_runtime().handle(ControllerEvent(api, payload, context)).response


def older_version_sets_the_key(value: str, resource_name: str = "") -> None:
    answer = older_write(
        "IncrementalAlterConfigs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": resource_name,
                    "configs": [{"name": TOKEN_KEY, "config_operation": "SET", "value": value}],
                }
            ]
        },
    )
    assert answer["responses"][0]["error_code"] == 0, answer


def older_version_creates_a_token(owner: str = "User:alice") -> dict[str, Any]:
    """A token signed with the key the log held, as the older version signed it."""
    answer: dict[str, Any] = older_write(
        "CreateDelegationToken",
        {
            "owner_principal_type": None,
            "owner_principal_name": None,
            "renewers": [],
            "max_lifetime_ms": -1,
            "requester": owner,
        },
        principal=owner,
    )
    assert answer["error_code"] == 0 and answer["hmac"], answer
    return answer
