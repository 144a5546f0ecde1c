"""URL patterns for the delegation token APIs, included at /api/v1/ by controlplane.urls."""

from __future__ import annotations

from django.urls import URLPattern, path

from controlplane.api import token_views as views

urlpatterns: list[URLPattern] = [
    path(
        "create-delegation-token",
        views.CreateDelegationTokenView.as_view(),
        name="create-delegation-token",
    ),
    path(
        "renew-delegation-token",
        views.RenewDelegationTokenView.as_view(),
        name="renew-delegation-token",
    ),
    path(
        "expire-delegation-token",
        views.ExpireDelegationTokenView.as_view(),
        name="expire-delegation-token",
    ),
    path(
        "describe-delegation-token",
        views.DescribeDelegationTokenView.as_view(),
        name="describe-delegation-token",
    ),
]
