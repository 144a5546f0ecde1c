"""URL patterns for the quota APIs, included at /api/v1/ by controlplane.urls."""

from __future__ import annotations

from django.urls import URLPattern, path

from controlplane.api import quota_views as views

urlpatterns: list[URLPattern] = [
    path("alter-client-quotas", views.AlterClientQuotasView.as_view(), name="alter-client-quotas"),
    path(
        "describe-client-quotas",
        views.DescribeClientQuotasView.as_view(),
        name="describe-client-quotas",
    ),
    path(
        "client-quotas/effective",
        views.EffectiveClientQuotasView.as_view(),
        name="effective-client-quotas",
    ),
]
