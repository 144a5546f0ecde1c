"""Config URLs that are not Kafka RPCs (those come from the RPC registry)."""

from __future__ import annotations

from django.urls import URLPattern, path

from configs.api import views

urlpatterns: list[URLPattern] = [
    path(
        "client-quotas/effective",
        views.EffectiveClientQuotasView.as_view(),
        name="effective-client-quotas",
    ),
]
