"""URL patterns for the config APIs, included at /api/v1/ by controlplane.urls."""

from __future__ import annotations

from django.urls import URLPattern, path

from controlplane.api import config_views as views

urlpatterns: list[URLPattern] = [
    path("describe-configs", views.DescribeConfigsView.as_view(), name="describe-configs"),
    path("alter-configs", views.AlterConfigsView.as_view(), name="alter-configs"),
    path(
        "incremental-alter-configs",
        views.IncrementalAlterConfigsView.as_view(),
        name="incremental-alter-configs",
    ),
]
