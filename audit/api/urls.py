from django.urls import URLPattern, path

from audit.api import views

urlpatterns: list[URLPattern] = [
    path("audit-events", views.AuditEventListView.as_view(), name="audit-event-list"),
    path("audit-exports", views.AuditExportListView.as_view(), name="audit-export-list"),
    path(
        "audit-exports/<int:export_id>",
        views.AuditExportDetailView.as_view(),
        name="audit-export-detail",
    ),
    path("audit-reports/<str:name>", views.AuditReportView.as_view(), name="audit-report"),
]
