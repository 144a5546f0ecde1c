"""Kafka ACLs: the enums, a binding (resource pattern + access control entry) and a filter.

Follows Apache Kafka's ``org.apache.kafka.common.acl`` and ``org.apache.kafka.common.resource``
(``AclBinding``, ``AclBindingFilter``, ``ResourcePatternFilter``, ``AccessControlEntryFilter``),
flattened into one record each: a binding carries the resource pattern's three fields and the
entry's four. Enum members carry Kafka's wire codes, and their ``.name`` is Kafka's name.

Pure data and pure functions: no I/O, no framework.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Self

CLUSTER_NAME = "kafka-cluster"
"""The only name a CLUSTER resource may have."""

WILDCARD_RESOURCE = "*"
"""A LITERAL resource pattern with this name matches every resource of its type."""

WILDCARD_PRINCIPAL = "User:*"
"""An entry for this principal matches every principal."""

WILDCARD_HOST = "*"
"""An entry for this host matches every client address."""


class _KafkaEnum(enum.IntEnum):
    """An enum of Kafka's: members carry the wire code, ``.name`` is Kafka's name."""

    @classmethod
    def from_name(cls, name: str) -> Self:
        """The member called ``name`` (case-insensitive, as Kafka's ``fromString``).

        Unlike Kafka, which maps an unknown name to UNKNOWN, an unknown name is an error here.
        """
        member = cls.__members__.get(name.upper())
        if member is None:
            known = ", ".join(cls.__members__)
            raise ValueError(f"Unknown {cls.__name__} name {name!r}; expected one of: {known}")
        return member


class ResourceType(_KafkaEnum):
    """Kafka's ``org.apache.kafka.common.resource.ResourceType``."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_KafkaEnum):
    """Kafka's ``org.apache.kafka.common.resource.PatternType``.

    ANY and MATCH are for filters only; a binding is LITERAL or PREFIXED.
    """

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_KafkaEnum):
    """Kafka's ``org.apache.kafka.common.acl.AclOperation``."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_KafkaEnum):
    """Kafka's ``org.apache.kafka.common.acl.AclPermissionType``."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_PRINCIPAL_FORMAT_ERROR = "expected a string in format principalType:principalName but got "


def parse_principal(principal: str) -> tuple[str, str]:
    """Split ``"Type:name"`` into ``(type, name)`` at the first colon.

    As Kafka's ``SecurityUtils.parseKafkaPrincipal`` (same message), and stricter in one way:
    the principal type may not be empty (Kafka accepts ``":alice"``). The name may be empty
    and may itself contain colons.
    """
    principal_type, sep, name = principal.partition(":")
    if not sep or not principal_type:
        raise ValueError(_PRINCIPAL_FORMAT_ERROR + principal)
    return principal_type, name


@dataclasses.dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern bound to an access control entry (Kafka's ``AclBinding``)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validation_error(self) -> str | None:
        """Why this binding can't be created, or None if it can.

        The checks of Kafka's ``AclControlManager.validateNewAcl`` (in its order and words),
        then those the broker's CreateAcls handler makes (the CLUSTER resource's name), then
        that the principal parses as ``Type:name``. Requiring a CLUSTER binding to be LITERAL
        is this project's addition: Kafka only ever names the cluster literally.
        """
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return f"Invalid operation {self.operation.name}"
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return f"Invalid permissionType {self.permission_type.name}"
        if not self.resource_name:
            return "Resource name should not be empty"
        if self.resource_type is ResourceType.CLUSTER:
            if self.resource_name != CLUSTER_NAME:
                return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            if self.pattern_type is not PatternType.LITERAL:
                return "The CLUSTER resource must use the LITERAL pattern type"
        try:
            parse_principal(self.principal)
        except ValueError as e:
            return str(e)
        return None

    def is_unknown(self) -> bool:
        """True if any field is UNKNOWN (Kafka's ``AclBinding.isUnknown``)."""
        return (
            self.resource_type is ResourceType.UNKNOWN
            or self.pattern_type is PatternType.UNKNOWN
            or self.operation is AclOperation.UNKNOWN
            or self.permission_type is AclPermissionType.UNKNOWN
        )

    def to_filter(self) -> AclBindingFilter:
        """A filter that matches exactly this binding (Kafka's ``AclBinding.toFilter``)."""
        return AclBindingFilter(
            resource_type=self.resource_type,
            resource_name=self.resource_name,
            pattern_type=self.pattern_type,
            principal=self.principal,
            host=self.host,
            operation=self.operation,
            permission_type=self.permission_type,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A filter over ACL bindings, as used by DescribeAcls and DeleteAcls (Kafka's
    ``AclBindingFilter`` = ``ResourcePatternFilter`` + ``AccessControlEntryFilter``).

    Every field is optional: None matches anything, as do the enums' ANY values. The default
    filter, ``AclBindingFilter()``, is Kafka's ``AclBindingFilter.ANY``.

    ``pattern_type``: None or ANY match any pattern type, but a given ``resource_name`` must
    then equal the binding's name exactly; LITERAL or PREFIXED match only that pattern type
    (and the exact name); MATCH matches the bindings that would apply to a resource called
    ``resource_name``: LITERAL bindings of that name or of ``"*"``, and PREFIXED bindings whose
    name is a prefix of it.
    """

    resource_type: ResourceType | None = None
    resource_name: str | None = None
    pattern_type: PatternType | None = None
    principal: str | None = None
    host: str | None = None
    operation: AclOperation | None = None
    permission_type: AclPermissionType | None = None

    def matches(self, binding: AclBinding) -> bool:
        """True if the binding passes this filter."""
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        # Kafka's ResourcePatternFilter.matches.
        if self.resource_type not in (None, ResourceType.ANY, binding.resource_type):
            return False
        pattern_type = PatternType.ANY if self.pattern_type is None else self.pattern_type
        if pattern_type not in (PatternType.ANY, PatternType.MATCH, binding.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if pattern_type in (PatternType.ANY, binding.pattern_type):
            return self.resource_name == binding.resource_name
        # MATCH, against a binding of a different pattern type.
        if binding.pattern_type is PatternType.LITERAL:
            return binding.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        if binding.pattern_type is PatternType.PREFIXED:
            return self.resource_name.startswith(binding.resource_name)
        # Kafka throws for a binding that is neither LITERAL nor PREFIXED; none can be stored.
        return False

    def _matches_entry(self, binding: AclBinding) -> bool:
        # Kafka's AccessControlEntryFilter.matches.
        if self.principal is not None and self.principal != binding.principal:
            return False
        if self.host is not None and self.host != binding.host:
            return False
        if self.operation not in (None, AclOperation.ANY, binding.operation):
            return False
        return self.permission_type in (None, AclPermissionType.ANY, binding.permission_type)

    def is_unknown(self) -> bool:
        """True if any enum field is UNKNOWN (Kafka's ``AclBindingFilter.isUnknown``)."""
        return (
            self.resource_type is ResourceType.UNKNOWN
            or self.pattern_type is PatternType.UNKNOWN
            or self.operation is AclOperation.UNKNOWN
            or self.permission_type is AclPermissionType.UNKNOWN
        )

    def find_indefinite_field(self) -> str | None:
        """A description of the first field that keeps this filter from naming a single ACL,
        or None if it names at most one (Kafka's ``findIndefiniteField``, same messages).

        As in Kafka, a pattern type of ANY (or None) with a name given is not indefinite.
        """
        if self.resource_type in (None, ResourceType.ANY):
            return "Resource type is ANY."
        if self.resource_type is ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.resource_name is None:
            return "Resource name is NULL."
        if self.pattern_type is PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type is PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation in (None, AclOperation.ANY):
            return "Operation is ANY"
        if self.operation is AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type in (None, AclPermissionType.ANY):
            return "Permission type is ANY"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    def matches_at_most_one(self) -> bool:
        """True if this filter has no indefinite field (Kafka's ``matchesAtMostOne``)."""
        return self.find_indefinite_field() is None
