"""Authorization of what a read answers: the one helper every resource list uses.

A list of resources answers only what the principal may see, as Kafka's Metadata and
Describe* answers leave out what the principal may not DESCRIBE. A view declares how:

- `permission_classes = [ClusterDescribePermission]` (or another cluster operation): the whole
  answer is about the cluster, DESCRIBE on CLUSTER or 403;
- `authorization = ResourceAuthorization(ResourceType.TOPIC, "name")` on an
  `AuthorizedListView`: every item is checked and the hidden ones are left out (a queryset is
  filtered in the database, a list of dicts in Python with `filter_items`);
- `authorization = CALLER_ONLY`: the answer is about the caller alone (whoami).

tests/api/test_url_authorization.py holds every API view of both URL confs to one of these and
walks every URL as a principal with no ACLs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.db.models import QuerySet
from rest_framework import generics
from rest_framework.request import Request

from controlplane.api.context import principal_of
from controlplane.authz import Visibility, client_host
from controlplane.chunked import in_chunks
from controlplane.controller.acls.bindings import AclOperation, ResourceType

Item = TypeVar("Item")


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceAuthorization:
    """Items are resources of `resource_type` named by `name_field` (a queryset lookup)."""

    resource_type: ResourceType
    name_field: str
    operation: AclOperation = AclOperation.DESCRIBE

    def visibility(self, request: Request) -> Visibility:
        return Visibility(
            principal_of(request), client_host(request), self.resource_type, self.operation
        )

    def filter_queryset(self, request: Request, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The rows of `queryset` the principal may see: one more query unless it sees all."""
        visibility = self.visibility(request)
        if visibility.everything:
            return queryset
        names = queryset.order_by().values_list(self.name_field, flat=True).distinct()
        allowed, hidden = visibility.split(names)
        if not hidden:
            return queryset
        if len(hidden) <= len(allowed):
            return queryset.exclude(in_chunks(self.name_field, hidden))
        return queryset.filter(in_chunks(self.name_field, allowed))

    def filter_items(
        self, request: Request, items: Iterable[Item], name_of: Callable[[Item], str]
    ) -> list[Item]:
        visibility = self.visibility(request)
        return [item for item in items if visibility.allows(name_of(item))]


@dataclasses.dataclass(frozen=True, slots=True)
class CallerOnly:
    """The answer is about the authenticated caller alone."""


CALLER_ONLY = CallerOnly()


class AuthorizedListView(generics.ListAPIView):  # type: ignore[type-arg]
    """A paginated list whose rows are filtered by `authorization` after the query filters."""

    authorization: ResourceAuthorization

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        filtered = super().filter_queryset(queryset)
        return self.authorization.filter_queryset(self.request, filtered)
