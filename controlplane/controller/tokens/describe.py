"""DescribeDelegationToken: which tokens a requester may see (Kafka's
DelegationTokenManager.describeTokens). A read of the projection; no HMAC is ever answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from typing import Any

from controlplane.controller.errors import Errors
from controlplane.controller.records import DelegationTokenRecord
from controlplane.controller.tokens.control import join_principal, split_principal


def describe_tokens(
    tokens: Iterable[DelegationTokenRecord],
    *,
    owners: list[Mapping[str, Any]] | None,
    requester: str,
    is_super: bool,
    may_describe: Callable[[str], bool] = lambda token_id: False,
    may_describe_tokens_of: Callable[[str], bool] = lambda owner: False,
) -> dict[str, Any]:
    """DescribeDelegationToken (Kafka's DelegationTokenManager.filterToken): the tokens the given
    owners own or renew (all when null, none when empty) that the requester owns or renews, may
    DESCRIBE (the DELEGATION_TOKEN resource, by id), may DESCRIBE_TOKENS of (the USER resource
    of the token's owner, KIP-373), or every one for a super user. No HMAC is answered."""
    wanted = (
        None
        if owners is None
        else {join_principal(o["principal_type"], o["principal_name"]) for o in owners}
    )
    answered = []
    for token in sorted(tokens, key=lambda t: (t.issue_timestamp, t.token_id)):
        if wanted is not None and not _owned_or_renewed_by(token, wanted):
            continue
        visible = (
            is_super
            or _owned_or_renewed_by(token, {requester})
            or may_describe(token.token_id)
            or may_describe_tokens_of(token.owner)
        )
        if not visible:
            continue
        owner_type, owner_name = split_principal(token.owner)
        requester_type, requester_name = split_principal(token.requester)
        answered.append(
            {
                "principal_type": owner_type,
                "principal_name": owner_name,
                "token_requester_principal_type": requester_type,
                "token_requester_principal_name": requester_name,
                "issue_timestamp": token.issue_timestamp,
                "expiry_timestamp": token.expiration_timestamp,
                "max_timestamp": token.max_timestamp,
                "token_id": token.token_id,
                "hmac": None,
                "renewers": [
                    dict(zip(("principal_type", "principal_name"), split_principal(r), strict=True))
                    for r in token.renewers
                ],
            }
        )
    return {"error_code": int(Errors.NONE), "error_message": None, "tokens": answered}


def _owned_or_renewed_by(token: DelegationTokenRecord, principals: Set[str]) -> bool:
    """Kafka's TokenInformation.ownerOrRenewer, for any of `principals`."""
    return token.owner in principals or not principals.isdisjoint(token.renewers)
