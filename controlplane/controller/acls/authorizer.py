"""Kafka's StandardAuthorizer decision, over an immutable index of ACLs.

Follows ``org.apache.kafka.metadata.authorizer.StandardAuthorizerData``:

* a super user is always allowed;
* the ACLs that apply to a resource are those of its type that are LITERAL with its exact name,
  LITERAL with the name ``"*"``, or PREFIXED with a prefix of its name;
* if none apply, the answer is the configured default (``allow.everyone.if.no.acl.found``);
* otherwise any applying DENY for the principal (or ``User:*``) and host (or ``*``, or a CIDR
  block holding it: Kafka 4.4) denies, else any such ALLOW allows, else the action is denied.

An ACL for ALL covers every operation. An ALLOW for READ, WRITE, DELETE or ALTER also allows
DESCRIBE, and an ALLOW for ALTER_CONFIGS also allows DESCRIBE_CONFIGS; a DENY implies nothing.

Pure data and pure functions: no I/O, no framework.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import ipaddress
from collections.abc import Iterable, Iterator, Mapping

from controlplane.controller.acls.bindings import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = [
    "AclIndex",
    "Action",
    "AuthorizationResult",
    "RequestContext",
    "authorize",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Action:
    """What is asked: an operation on one named resource (Kafka's ``Action``, LITERAL)."""

    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


@dataclasses.dataclass(frozen=True, slots=True)
class RequestContext:
    """Who asks, from where: ``principal`` as ``"User:alice"``, ``host`` the client address."""

    principal: str
    host: str


class AuthorizationResult(enum.Enum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"


# The operations whose ALLOW also allows DESCRIBE / DESCRIBE_CONFIGS (Kafka's IMPLIES_DESCRIBE,
# IMPLIES_DESCRIBE_CONFIGS).
_IMPLIES: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}

_Bucket = tuple[AclBinding, ...]
_LiteralKey = tuple[ResourceType, str]


class AclIndex:
    """An immutable set of ACL bindings, indexed by resource for authorization.

    Per resource type, LITERAL bindings are kept by exact name (the wildcard ``"*"`` is just
    the name ``"*"``), and PREFIXED bindings by prefix together with the set of prefix lengths
    in use. Finding the bindings that apply to a resource is then one lookup for its name, one
    for ``"*"``, and one per prefix length in use that fits the name: never a scan of the ACLs.

    Only LITERAL and PREFIXED bindings can be held (the only ones Kafka stores). Identical
    bindings are held once, as Kafka's controller keeps them. Iteration follows insertion.
    """

    __slots__ = ("_all", "_literal", "_prefix_lengths", "_prefixed")

    _all: dict[AclBinding, None]
    _literal: dict[_LiteralKey, _Bucket]
    _prefixed: dict[_LiteralKey, _Bucket]
    _prefix_lengths: dict[ResourceType, tuple[int, ...]]

    def __init__(self) -> None:
        """An empty index; use :meth:`build`, :meth:`with_added` and :meth:`without`."""
        self._all = {}
        self._literal = {}
        self._prefixed = {}
        self._prefix_lengths = {}

    @classmethod
    def build(cls, bindings: Iterable[AclBinding]) -> AclIndex:
        """An index holding ``bindings``.

        Raises ValueError for a binding that is neither LITERAL nor PREFIXED.
        """
        return cls().with_added(bindings)

    def with_added(self, bindings: Iterable[AclBinding]) -> AclIndex:
        """A new index holding this one's bindings and ``bindings``; this one is unchanged.

        Raises ValueError for a binding that is neither LITERAL nor PREFIXED.
        """
        new = [b for b in dict.fromkeys(bindings) if b not in self._all]
        for binding in new:
            if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
                raise ValueError(
                    "An ACL index holds only LITERAL or PREFIXED bindings, "
                    f"not {binding.pattern_type.name}: {binding}"
                )
        if not new:
            return self
        result = self._copy()
        for binding in new:
            result._all[binding] = None
            key = (binding.resource_type, binding.resource_name)
            table = result._table(binding.pattern_type)
            table[key] = (*table.get(key, ()), binding)
        result._refresh_prefix_lengths({b.resource_type for b in new})
        return result

    def without(self, bindings: Iterable[AclBinding]) -> AclIndex:
        """A new index holding this one's bindings except ``bindings``; this one is unchanged.

        Bindings this index does not hold are ignored.
        """
        gone = {b for b in bindings if b in self._all}
        if not gone:
            return self
        result = self._copy()
        for binding in gone:
            del result._all[binding]
            key = (binding.resource_type, binding.resource_name)
            table = result._table(binding.pattern_type)
            remaining = tuple(b for b in table[key] if b != binding)
            if remaining:
                table[key] = remaining
            else:
                del table[key]
        result._refresh_prefix_lengths({b.resource_type for b in gone})
        return result

    def matching(self, resource_type: ResourceType, resource_name: str) -> tuple[AclBinding, ...]:
        """The bindings whose resource pattern applies to the named resource of the type."""
        found: list[AclBinding] = []
        found.extend(self._literal.get((resource_type, resource_name), ()))
        if resource_name != WILDCARD_RESOURCE:
            found.extend(self._literal.get((resource_type, WILDCARD_RESOURCE), ()))
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(resource_name):
                break
            found.extend(self._prefixed.get((resource_type, resource_name[:length]), ()))
        return tuple(found)

    def select(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings that pass the filter, as DescribeAcls / DeleteAcls would select them."""
        return [b for b in self._all if acl_filter.matches(b)]

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(self._all)

    def __contains__(self, binding: object) -> bool:
        return binding in self._all

    def __repr__(self) -> str:
        return f"AclIndex({list(self._all)!r})"

    def _copy(self) -> AclIndex:
        result = AclIndex()
        result._all = dict(self._all)
        result._literal = dict(self._literal)
        result._prefixed = dict(self._prefixed)
        result._prefix_lengths = dict(self._prefix_lengths)
        return result

    def _table(self, pattern_type: PatternType) -> dict[_LiteralKey, _Bucket]:
        return self._literal if pattern_type is PatternType.LITERAL else self._prefixed

    def _refresh_prefix_lengths(self, resource_types: Iterable[ResourceType]) -> None:
        # Only called on a fresh copy, for the resource types whose PREFIXED bindings changed.
        for resource_type in resource_types:
            lengths = tuple(
                sorted({len(name) for (rt, name) in self._prefixed if rt is resource_type})
            )
            if lengths:
                self._prefix_lengths[resource_type] = lengths
            else:
                self._prefix_lengths.pop(resource_type, None)


@functools.lru_cache(maxsize=4096)
def _in_block(address: str, host: str) -> bool:
    """Whether the client `address` is in the ACL's `host` when that is a CIDR block (Kafka
    4.4's StandardAuthorizer; written only from metadata.version 4.4-IV1)."""
    if "/" not in host:
        return False
    try:
        return ipaddress.ip_address(address) in ipaddress.ip_network(host, strict=False)
    except ValueError:
        return False


def _decision(
    binding: AclBinding, context: RequestContext, action: Action
) -> AuthorizationResult | None:
    """What ``binding`` says about the action, or None if it does not speak to it.

    Assumes the binding's resource pattern applies (Kafka's ``StandardAuthorizerData.findResult``).
    """
    if binding.principal not in (context.principal, WILDCARD_PRINCIPAL):
        return None
    if binding.host not in (WILDCARD_HOST, context.host) and not _in_block(
        context.host, binding.host
    ):
        return None
    allow = binding.permission_type is AclPermissionType.ALLOW
    if binding.operation is not AclOperation.ALL and binding.operation is not action.operation:
        implied_by = _IMPLIES.get(action.operation)
        if not (allow and implied_by is not None and binding.operation in implied_by):
            return None
    # As Kafka: anything but ALLOW denies (only ALLOW and DENY can be created).
    return AuthorizationResult.ALLOWED if allow else AuthorizationResult.DENIED


def authorize(
    *,
    acls: AclIndex,
    context: RequestContext,
    action: Action,
    super_users: frozenset[str],
    allow_everyone_if_no_acl_found: bool,
) -> AuthorizationResult:
    """Kafka's StandardAuthorizer answer to ``context`` asking to perform ``action``."""
    if context.principal in super_users:
        return AuthorizationResult.ALLOWED
    applying = acls.matching(action.resource_type, action.resource_name)
    if not applying:
        if allow_everyone_if_no_acl_found:
            return AuthorizationResult.ALLOWED
        return AuthorizationResult.DENIED
    allowed = False
    for binding in applying:
        decision = _decision(binding, context, action)
        if decision is AuthorizationResult.DENIED:
            return AuthorizationResult.DENIED
        if decision is AuthorizationResult.ALLOWED:
            allowed = True
    return AuthorizationResult.ALLOWED if allowed else AuthorizationResult.DENIED
