"""ACL, delegation token and SCRAM credential reads: the projections (cp_acl,
cp_delegation_token, cp_scram_credential), filtered as Kafka's DescribeAcls,
DescribeDelegationToken and DescribeUserScramCredentials filter them. The API, the UI and the
wire listener's SCRAM logins read these."""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import F, Q, QuerySet, Value

from controlplane.authz import is_authorized
from controlplane.controller.acls.bindings import WILDCARD_RESOURCE as WILDCARD
from controlplane.controller.acls.bindings import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.acls.control import ACL_FIELDS, binding_of
from controlplane.controller.errors import ApiError
from controlplane.controller.records import AccessControlEntryRecord
from controlplane.controller.scram.describe import describe_credentials
from controlplane.controller.scram.formatter import ScramCredential as ScramCredentialValue
from controlplane.controller.scram.formatter import unb64
from controlplane.controller.tokens.control import compute_hmac, secret_of
from controlplane.controller.tokens.describe import describe_tokens
from controlplane.models import Acl
from controlplane.principals import AuthenticatedPrincipal
from controlplane.selectors import config_view
from security.models import DelegationToken, ScramCredential
from security.projection import delegation_token_rows

AclRow = tuple[Any, ...]  # an ACL's ACL_FIELDS values, in that order


def acl_list(
    *, filters: Mapping[str, str] | None = None, order_by: Sequence[str] = ()
) -> QuerySet[Acl, AclRow]:
    """The ACLs of the projection as rows of ACL_FIELDS, filtered by exact field values and
    ordered by `order_by` (else by the model's order). Lazy: a page is a count and a slice."""
    wanted = dict(filters or {})
    if wanted.get("pattern_type") == MATCH:
        del wanted["pattern_type"]
        acls = _matching(Acl.objects.filter(**_without(wanted, "resource_name")), wanted)
    else:
        acls = Acl.objects.filter(**wanted)
    if order_by:
        acls = acls.order_by(*order_by)
    return acls.values_list(*ACL_FIELDS)


MATCH = "MATCH"  # Kafka's PatternType.MATCH: every pattern that applies to one resource name


def _without(filters: Mapping[str, str], key: str) -> dict[str, str]:
    return {k: v for k, v in filters.items() if k != key}


def _matching(acls: QuerySet[Acl], filters: Mapping[str, str]) -> QuerySet[Acl]:
    """Kafka's MATCH: the LITERAL ACLs of the name and of `*`, and every PREFIXED one whose
    prefix the name starts with (what the authorizer applies to that resource). Without a
    name, MATCH filters nothing."""
    name = filters.get("resource_name")
    if not name:
        return acls
    return acls.annotate(_matched_name=Value(name)).filter(
        Q(pattern_type="LITERAL", resource_name__in=[name, WILDCARD])
        | Q(pattern_type="PREFIXED", _matched_name__startswith=F("resource_name"))
    )


def acl_get(*, acl_id: str) -> AclRow | None:
    """One ACL as a row of ACL_FIELDS, None when there is no such ACL."""
    return Acl.objects.filter(pk=acl_id).values_list(*ACL_FIELDS).first()


def acls_describe(*, acl_filter: AclBindingFilter) -> list[dict[str, Any]]:
    """The ACLs of the projection that pass the filter, grouped by resource pattern (Kafka's
    DescribeAclsResponse `resources`), in the projection's order."""
    resources: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in _acl_candidates(acl_filter):
        binding = binding_of(AccessControlEntryRecord(*row))
        if not acl_filter.matches(binding):
            continue
        key = (binding.resource_type.name, binding.resource_name, binding.pattern_type.name)
        resources.setdefault(key, []).append(
            {
                "principal": binding.principal,
                "host": binding.host,
                "operation": binding.operation.name,
                "permission_type": binding.permission_type.name,
            }
        )
    return [
        {"resource_type": rt, "resource_name": name, "pattern_type": pt, "acls": entries}
        for (rt, name, pt), entries in resources.items()
    ]


def _acl_candidates(acl_filter: AclBindingFilter) -> QuerySet[Acl, AclRow]:
    """The projection's ACLs, narrowed in SQL by the filter's exact fields; the filter itself
    (with its LITERAL / PREFIXED / MATCH rules) decides."""
    rows = Acl.objects.all()
    resource_type, operation = acl_filter.resource_type, acl_filter.operation
    permission_type = acl_filter.permission_type
    if resource_type is not None and resource_type is not ResourceType.ANY:
        rows = rows.filter(resource_type=resource_type.name)
    if acl_filter.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        rows = rows.filter(pattern_type=acl_filter.pattern_type.name)
    if acl_filter.pattern_type is not PatternType.MATCH and acl_filter.resource_name is not None:
        rows = rows.filter(resource_name=acl_filter.resource_name)
    if acl_filter.principal is not None:
        rows = rows.filter(principal=acl_filter.principal)
    if acl_filter.host is not None:
        rows = rows.filter(host=acl_filter.host)
    if operation is not None and operation is not AclOperation.ANY:
        rows = rows.filter(operation=operation.name)
    if permission_type is not None and permission_type is not AclPermissionType.ANY:
        rows = rows.filter(permission_type=permission_type.name)
    return rows.values_list(*ACL_FIELDS)


def tokens_describe(
    *,
    principal: AuthenticatedPrincipal,
    host: str,
    owners: list[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """DescribeDelegationToken's answer: the live tokens `owners` own or renew (every token
    when None) that the principal owns, renews, may DESCRIBE, or may DESCRIBE_TOKENS of their
    owner's USER (every one for a super user), never an HMAC. Raises
    DELEGATION_TOKEN_AUTH_DISABLED (ApiError) while no secret key is set."""
    secret_of(config_view())

    def may_describe(token_id: str) -> bool:
        return is_authorized(
            principal,
            host=host,
            operation=AclOperation.DESCRIBE,
            resource_type=ResourceType.DELEGATION_TOKEN,
            resource_name=token_id,
        )

    def may_describe_tokens_of(owner: str) -> bool:
        return is_authorized(
            principal,
            host=host,
            operation=AclOperation.DESCRIBE_TOKENS,
            resource_type=ResourceType.USER,
            resource_name=owner,
        )

    return describe_tokens(
        delegation_token_rows(),
        owners=owners,
        requester=principal.principal,
        is_super=principal.is_super,
        may_describe=may_describe,
        may_describe_tokens_of=may_describe_tokens_of,
    )


def principal_search(*, contains: str, limit: int) -> list[str]:
    """Principals whose name contains `contains` (case-insensitive): those with a token here
    and those ACLs name, `User:<name>`, sorted, at most `limit` (two queries)."""
    from controlplane.models import Principal

    known = Principal.objects.filter(name__icontains=contains).values_list("name", flat=True)
    named = (
        Acl.objects.filter(principal__icontains=contains)
        .values_list("principal", flat=True)
        .distinct()
        .order_by("principal")
    )
    found = {f"User:{name}" for name in known[:limit]} | set(named[:limit])
    return sorted(found)[:limit]


def token_hmac_matches(*, token_id: str, hmac_text: str) -> bool:
    """Whether `hmac_text` is the HMAC of token `token_id` (so a page that names the token
    acts on that token and no other); False without a secret key or for a malformed HMAC."""
    try:
        secret = secret_of(config_view())
        wanted = base64.b64decode(hmac_text, validate=True)
    except (ApiError, binascii.Error, ValueError):
        return False
    return hmac.compare_digest(compute_hmac(secret, token_id), wanted)


# --- SCRAM credentials (KIP-554) -----------------------------------------------------------------


def scram_credentials_describe(*, users: Sequence[str] | None) -> dict[str, Any]:
    """DescribeUserScramCredentials from the projection: mechanisms and iterations of the users
    named (None or empty: every user), in one query; never a salt or a key."""
    rows = ScramCredential.objects.values_list("name", "mechanism", "iterations")
    if users:
        rows = rows.filter(name__in=set(users))
    found: dict[str, list[tuple[str, int]]] = {}
    for name, mechanism, iterations in rows:
        found.setdefault(name, []).append((mechanism, iterations))
    return describe_credentials(list(users) if users else None, found)


def scram_users(*, name_contains: str = "") -> QuerySet[ScramCredential, tuple[str, str, int]]:
    """Every credential as (user, mechanism, iterations), by user then mechanism (the UI's
    list, paged by the database); lazy."""
    rows = ScramCredential.objects.all()
    if name_contains:
        rows = rows.filter(name__icontains=name_contains)
    return rows.order_by("name", "mechanism").values_list("name", "mechanism", "iterations")


def scram_credential_get(*, name: str, mechanism: str) -> ScramCredentialValue | None:
    """The credential a SCRAM login of `name` is checked against (the wire listener)."""
    row = (
        ScramCredential.objects.filter(name=name, mechanism=mechanism)
        .values_list("salt", "stored_key", "server_key", "iterations")
        .first()
    )
    if row is None:
        return None
    salt, stored, server, iterations = row
    return ScramCredentialValue(unb64(salt), unb64(stored), unb64(server), iterations)


def token_scram_password(*, token_id: str, now_ms: int) -> tuple[str, str] | None:
    """(owner, password) a live delegation token logs in with over SCRAM (Kafka's `tokenauth`
    extension: the user is the token id, the password its HMAC in base64), or None: no such
    live token, or delegation tokens are disabled (no secret key)."""
    row = (
        DelegationToken.objects.filter(token_id=token_id[:64])
        .values_list("owner", "expiration_timestamp")
        .first()
    )
    if row is None or row[1] < now_ms:
        return None
    try:
        secret = secret_of(config_view())
    except ApiError:
        return None
    return row[0], base64.b64encode(compute_hmac(secret, token_id[:64])).decode("ascii")
