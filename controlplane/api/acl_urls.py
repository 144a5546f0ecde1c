"""URL patterns for the acl APIs, included at /api/v1/ by controlplane.urls."""

from __future__ import annotations

from django.urls import URLPattern, path

from controlplane.api import acl_views

urlpatterns: list[URLPattern] = [
    path("create-acls", acl_views.CreateAclsView.as_view(), name="create-acls"),
    path("describe-acls", acl_views.DescribeAclsView.as_view(), name="describe-acls"),
    path("delete-acls", acl_views.DeleteAclsView.as_view(), name="delete-acls"),
]
