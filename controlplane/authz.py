"""Authorization on the web side: Kafka ACL semantics over the ACL projection.

The ACL index is cached per process and rebuilt when the state tables follow a commit (the
notifier's tables generation) or after a few seconds at most.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpRequest

from controlplane.controller.acls.authorizer import (
    AclIndex,
    Action,
    AuthorizationResult,
    RequestContext,
    authorize,
)
from controlplane.controller.acls.bindings import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from controlplane.controller.acls.control import ACL_FIELDS, binding_of
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.records import AccessControlEntryRecord
from controlplane.models import Acl
from controlplane.principals import AuthenticatedPrincipal
from controlplane.runtime.notifier import notifier

if TYPE_CHECKING:
    from rest_framework.request import Request

CACHE_TTL_S = 5.0


# Kafka's internal topics, which brokers create themselves (plain CreateTopics to the
# controller, not in an Envelope): the group coordinator's, the transaction coordinator's and
# the share coordinator's.
BROKER_INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def broker_grants(principal: str) -> list[AclBinding]:
    """What `--broker` means, as ACLs would grant it: ALLOW CLUSTER_ACTION on the cluster, and
    CREATE of Kafka's internal topics."""

    def allow(resource_type: ResourceType, name: str, operation: AclOperation) -> AclBinding:
        return AclBinding(
            resource_type=resource_type,
            resource_name=name,
            pattern_type=PatternType.LITERAL,
            principal=principal,
            host=WILDCARD_HOST,
            operation=operation,
            permission_type=AclPermissionType.ALLOW,
        )

    return [
        allow(ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.CLUSTER_ACTION),
        *(allow(ResourceType.TOPIC, t, AclOperation.CREATE) for t in BROKER_INTERNAL_TOPICS),
    ]


class _AclCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index: AclIndex | None = None
        self._generation = -1
        self._loaded_at = 0.0
        self._with_broker_grant: dict[str, AclIndex] = {}

    def index(self) -> AclIndex:
        # Read again when a commit changed ACLs (their notice, which this process listens to
        # from its first authorization on), not after every commit: 10,000 ACLs take about 90 ms
        # to read and index, and a cluster committing ten times a second would read them on
        # nearly every request.
        generation = notifier.watched_acl_generation()
        fresh = time.monotonic() - self._loaded_at < CACHE_TTL_S
        if self._index is not None and generation == self._generation and fresh:
            return self._index
        rows = Acl.objects.values_list(*ACL_FIELDS)
        index = AclIndex.build(binding_of(AccessControlEntryRecord(*row)) for row in rows)
        with self._lock:
            self._index, self._generation = index, generation
            self._loaded_at = time.monotonic()
            self._with_broker_grant = {}
        return index

    def index_for(self, principal: AuthenticatedPrincipal) -> AclIndex:
        index = self.index()
        if not principal.is_broker:
            return index
        cached = self._with_broker_grant.get(principal.principal)
        if cached is None:
            cached = index.with_added(broker_grants(principal.principal))
            self._with_broker_grant[principal.principal] = cached
        return cached

    def clear(self) -> None:
        with self._lock:
            self._index = None


acl_cache = _AclCache()


def client_host(request: HttpRequest | Request) -> str:
    """The client's address: the host its principal's ACLs are matched against."""
    return str(request.META.get("REMOTE_ADDR") or "")


def is_authorized(
    principal: AuthenticatedPrincipal,
    *,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    resource_name: str,
) -> bool:
    result = authorize(
        acls=acl_cache.index_for(principal),
        context=RequestContext(principal=principal.principal, host=host),
        action=Action(operation, resource_type, resource_name),
        super_users=frozenset(settings.CP_SUPER_USERS)
        | ({principal.principal} if principal.is_super_user else frozenset()),
        allow_everyone_if_no_acl_found=settings.CP_ALLOW_EVERYONE_IF_NO_ACL_FOUND,
    )
    return result is AuthorizationResult.ALLOWED


def require_cluster(
    principal: AuthenticatedPrincipal, *, host: str, operation: AclOperation
) -> None:
    if not is_authorized(
        principal,
        host=host,
        operation=operation,
        resource_type=ResourceType.CLUSTER,
        resource_name=CLUSTER_NAME,
    ):
        raise ApiError(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            f"{principal.principal} is not authorized for {operation.name} on the cluster.",
        )


def refuse_broker_on_public_write(principal: AuthenticatedPrincipal) -> None:
    """KIP-590: broker principals only reach the controller through the internal listener."""
    if principal.is_broker:
        raise ApiError(
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            "Broker principals may not send admin writes to the public API.",
        )


# --- what a principal may see: the one helper every resource list uses -----------------------
@dataclasses.dataclass(frozen=True, slots=True)
class Visibility:
    """Which resources of one type a principal may see (by default: DESCRIBE), as Kafka's
    Metadata and Describe* answers leave out what the principal may not describe."""

    principal: AuthenticatedPrincipal
    host: str
    resource_type: ResourceType
    operation: AclOperation = AclOperation.DESCRIBE

    @property
    def everything(self) -> bool:
        """A super user sees every resource: nothing needs filtering (and no query)."""
        return self.principal.is_super

    def allows(self, name: str) -> bool:
        return self.everything or is_authorized(
            self.principal,
            host=self.host,
            operation=self.operation,
            resource_type=self.resource_type,
            resource_name=name,
        )

    def split(self, names: Iterable[str]) -> tuple[list[str], list[str]]:
        """(allowed, hidden) of `names`."""
        allowed: list[str] = []
        hidden: list[str] = []
        for name in names:
            (allowed if self.allows(name) else hidden).append(name)
        return allowed, hidden
