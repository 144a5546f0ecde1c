"""URL patterns for the quota APIs, included at /api/v1/ by controlplane.urls."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
