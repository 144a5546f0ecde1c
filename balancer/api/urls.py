from django.urls import URLPattern, path

from balancer.api import views

urlpatterns: list[URLPattern] = [
    path("balance/plans", views.BalancePlanListView.as_view(), name="balance-plan-list"),
    path(
        "balance/plans/<int:plan_id>",
        views.BalancePlanDetailView.as_view(),
        name="balance-plan-detail",
    ),
    path(
        "balance/plans/<int:plan_id>/execute",
        views.BalancePlanExecuteView.as_view(),
        name="balance-plan-execute",
    ),
    path(
        "balance/plans/<int:plan_id>/cancel",
        views.BalancePlanCancelView.as_view(),
        name="balance-plan-cancel",
    ),
]
