from __future__ import annotations

import logging

from django.conf import settings
from django.db.models import QuerySet

from audit.models import AuditEvent, AuditExport
from audit.spark import storage as store
from controlplane.runtime.lease import cluster_read

logger = logging.getLogger("controlplane.audit.export")


def audit_event_list() -> QuerySet[AuditEvent]:
    return AuditEvent.objects.order_by("-id")


def audit_export_list() -> QuerySet[AuditExport]:
    return AuditExport.objects.order_by("-id")


def audit_exported_offset() -> int:
    """The last metadata offset the audit export (at CP_AUDIT_EXPORT_PATH) has committed, its
    watermark; -1 when it has committed none, belongs to another cluster or cannot be read
    here (a Hadoop URI needs a Spark session). The metadata log's retention never deletes a
    record after it (controlplane.runtime.snapshots): the Parquet datasets stay the log's
    complete history."""
    location = settings.CP_AUDIT_EXPORT_PATH
    if not location or store.is_uri(location):
        return -1
    try:
        last = store.latest_commit(store.open_storage(location))
    except (store.ExportError, OSError):
        logger.warning("the audit export at %s cannot be read", location, exc_info=True)
        return -1
    if last is None or last.get("cluster_id") not in (None, cluster_read().cluster_id):
        return -1
    return int(last["watermark"]["metadata_log"]["offset"])
