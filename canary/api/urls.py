from __future__ import annotations

from django.urls import URLPattern, path

from canary.api import views

urlpatterns: list[URLPattern] = [
    path("canary", views.CanaryView.as_view(), name="canary"),
    path("canary/rollout", views.CanaryRolloutView.as_view(), name="canary-rollout"),
]
