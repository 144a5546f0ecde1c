from __future__ import annotations

import logging

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit import reports, services
from audit.api.serializers import (
    AuditEventSerializer,
    AuditExportRequestSerializer,
    AuditExportSerializer,
)
from audit.filtersets import AuditEventFilterSet
from audit.models import AuditExport
from audit.selectors import audit_event_list, audit_export_list
from audit.spark.catalog import REPORT_NAMES
from audit.spark.times import BadTime, parse_time
from controlplane.api.context import principal_of
from controlplane.api.permissions import ClusterAlterPermission, ClusterDescribePermission
from controlplane.api.responses import INT, STR, arr, nullable, obj, ok
from controlplane.controller.errors import ApiError, Errors
from controlplane.http_errors import error_body

logger = logging.getLogger("controlplane.audit")


class AuditEventListView(generics.ListAPIView):  # type: ignore[type-arg]
    """The audit trail, newest first: every admin request, allowed or denied."""

    permission_classes = [ClusterDescribePermission]
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilterSet

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return audit_event_list()


class AuditExportListView(generics.ListAPIView):  # type: ignore[type-arg]
    """Export runs, newest first (DESCRIBE on CLUSTER); POST starts one (ALTER on CLUSTER)."""

    permission_classes = [ClusterDescribePermission]  # the read; POST: ALTER on CLUSTER
    serializer_class = AuditExportSerializer

    def get_permissions(self):  # type: ignore[no-untyped-def]
        if self.request.method == "POST":
            return [ClusterAlterPermission()]
        return super().get_permissions()

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return audit_export_list()

    @extend_schema(request=AuditExportRequestSerializer, responses={202: AuditExportSerializer})
    def post(self, request: Request) -> Response:
        AuditExportRequestSerializer.validated(request.data if request.body else {})
        principal = principal_of(request).principal
        export = services.audit_export_start(requested_by=principal)
        logger.info("audit export %d to %s requested by %s", export.pk, export.path, principal)
        return Response(AuditExportSerializer(export).data, status=status.HTTP_202_ACCEPTED)


class AuditExportDetailView(generics.RetrieveAPIView):  # type: ignore[type-arg]
    """One export run and its progress."""

    permission_classes = [ClusterDescribePermission]
    serializer_class = AuditExportSerializer

    def get_object(self) -> AuditExport:
        return get_object_or_404(audit_export_list(), pk=self.kwargs["export_id"])


REPORT_ROWS = obj(
    "name",
    "export_commit",
    "count",
    "rows",
    name=STR,
    export_commit=INT,
    parameters={"type": "object", "properties": {k: nullable(INT) for k in ("from", "to", "at")}},
    count=INT,
    rows=arr(obj()),
)
TIME_PARAMETERS = [
    OpenApiParameter(name, str, description=f"{name}: ISO 8601 or epoch milliseconds")
    for name in ("from", "to", "at")
]


class AuditReportView(APIView):
    """A PySpark audit report over the latest export, as JSON rows (DESCRIBE on CLUSTER)."""

    permission_classes = [ClusterDescribePermission]

    @extend_schema(parameters=TIME_PARAMETERS, responses=ok(REPORT_ROWS))
    def get(self, request: Request, name: str) -> Response:
        if name not in REPORT_NAMES:
            return Response(
                {
                    "error_code": int(Errors.INVALID_REQUEST),
                    "error": Errors.INVALID_REQUEST.name,
                    "error_message": f"No report named {name!r}; reports: "
                    f"{', '.join(REPORT_NAMES)}.",
                },
                status=status.HTTP_404_NOT_FOUND,
            )
        times: dict[str, int | None] = {}
        for key in ("from", "to", "at"):
            text = request.query_params.get(key) or ""
            try:
                times[key] = parse_time(text, name=key) if text else None
            except BadTime as error:
                raise ApiError(Errors.INVALID_REQUEST, str(error)) from None
        wanted = reports.ReportRequest(name, times["from"], times["to"], times["at"])
        try:
            return Response(reports.audit_report_rows(wanted))
        except reports.ReportBusy as error:
            busy = Response(
                error_body(Errors.THROTTLING_QUOTA_EXCEEDED, str(error)),
                status=status.HTTP_429_TOO_MANY_REQUESTS,
            )
            busy["Retry-After"] = str(error.retry_after_s)
            return busy
        except reports.ReportError as error:
            raise ApiError(Errors.INVALID_REQUEST, str(error)) from None
