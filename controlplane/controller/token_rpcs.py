"""Controller handlers for delegation tokens (registered with dispatch.handler).

Create, renew and expire write DelegationTokenRecord / RemoveDelegationTokenRecord
(controlplane.controller.tokens); the hourly sweep removes expired tokens. Describe is a read of
the projection and needs no controller. The payloads carry the requester principal ("User:x").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controlplane.controller import tokens
from controlplane.controller.dispatch import handler
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult

if TYPE_CHECKING:
    from controlplane.controller.dispatch import ControllerEnv


@handler("CreateDelegationToken")
def _create_delegation_token(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = tokens.create_token(view, payload, env.configs(view), env.now_ms)
    return ControllerResult(records, response)


@handler("RenewDelegationToken")
def _renew_delegation_token(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = tokens.renew_token(view, payload, env.configs(view), env.now_ms)
    return ControllerResult(records, response)


@handler("ExpireDelegationToken")
def _expire_delegation_token(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = tokens.expire_token(view, payload, env.configs(view), env.now_ms)
    return ControllerResult(records, response)


@handler("ExpireDelegationTokens", state_idempotent=True)
def _expire_delegation_tokens(
    view: MetadataDelta, payload: Mapping[str, Any], env: ControllerEnv
) -> ControllerResult:
    records, response = tokens.sweep_expired(view, env.now_ms)
    return ControllerResult(records, response)
