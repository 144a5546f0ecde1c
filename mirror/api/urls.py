"""The mirror API's routes under /api/v1/ (docs/reference/rest-api.md, "MirrorMaker 2")."""

from __future__ import annotations

from django.urls import URLPattern, path

from mirror.api import views

FLOW = "mirror/flows/<str:source>/<str:target>"
GROUP = "mirror/groups/<str:source>/<str:target>"

urlpatterns: list[URLPattern] = [
    path("mirror/config", views.MirrorConfigView.as_view(), name="mirror-config"),
    path("mirror/flows", views.MirrorFlowListView.as_view(), name="mirror-flow-list"),
    path(FLOW, views.MirrorFlowDetailView.as_view(), name="mirror-flow-detail"),
    path(f"{FLOW}/pause", views.MirrorFlowPauseView.as_view(), name="mirror-flow-pause"),
    path(f"{FLOW}/resume", views.MirrorFlowResumeView.as_view(), name="mirror-flow-resume"),
    path(
        f"{GROUP}/heartbeat",
        views.MirrorGroupHeartbeatView.as_view(),
        name="mirror-group-heartbeat",
    ),
    path(f"{GROUP}/<str:rpc>", views.MirrorGroupRpcView.as_view(), name="mirror-group-rpc"),
]
