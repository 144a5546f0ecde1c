from django.urls import URLPattern, path

from audit.api import views

urlpatterns: list[URLPattern] = [
    path("audit-events", views.AuditEventListView.as_view(), name="audit-event-list"),
]
