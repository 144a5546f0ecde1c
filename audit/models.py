"""The audit trail: one row per admin request, allowed or denied (KIP-590's controller audit)."""

from __future__ import annotations

from django.db import models


class Outcome(models.TextChoices):
    SUCCESS = "SUCCESS"  # the request and each of its resources succeeded
    PARTIAL = "PARTIAL"  # some resources succeeded, others failed
    FAILED = "FAILED"  # the request or every resource failed, not for authorization
    DENIED = "DENIED"  # refused by authorization (the whole request, or every resource)


class AuditEvent(models.Model):
    time_ms = models.BigIntegerField()
    principal = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255, blank=True, default="")
    client_host = models.CharField(max_length=64, blank=True, default="")
    # The broker that redirected the request in an Envelope (empty when sent directly).
    forwarding_principal = models.CharField(max_length=255, blank=True, default="")
    forwarding_host = models.CharField(max_length=64, blank=True, default="")
    forwarding_broker_id = models.IntegerField(null=True, blank=True)
    api = models.CharField(max_length=64)
    # [{resource_type, resource_name, error_code}]: names only, never a value or a secret.
    resources = models.JSONField(default=list)
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    error_code = models.IntegerField(default=0)
    http_status = models.SmallIntegerField()
    request_id = models.CharField(max_length=128, blank=True, default="")
    first_offset = models.BigIntegerField(null=True, blank=True)
    last_offset = models.BigIntegerField(null=True, blank=True)
    duration_ms = models.FloatField(default=0.0)

    class Meta:
        db_table = "cp_audit_event"
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["principal", "-id"], name="cp_audit_principal"),
            models.Index(fields=["api", "-id"], name="cp_audit_api"),
            models.Index(fields=["request_id"], name="cp_audit_request_id"),
            models.Index(fields=["time_ms"], name="cp_audit_time"),
        ]
        constraints = [
            # One row per applied write: copies of a principal's request id that answered the
            # same write (a concurrent retry, a resend) are audited once. Request ids belong to
            # their principal: another principal's write with the same id has a row of its own.
            # Refusals wrote nothing and keep a row per attempt.
            models.UniqueConstraint(
                fields=["principal", "request_id"],
                condition=models.Q(first_offset__isnull=False) & ~models.Q(request_id=""),
                name="cp_audit_one_row_per_write",
            )
        ]

    def __str__(self) -> str:
        return f"{self.api} by {self.principal}: {self.outcome}"


class ExportState(models.TextChoices):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class AuditExport(models.Model):
    """One run of the Parquet export (`export_audit`) started from the API, the UI or the
    periodic job, with its progress for whoever follows it. Bookkeeping of the control plane,
    not cluster metadata: it is not in the metadata log."""

    path = models.CharField(max_length=1024)
    requested_by = models.CharField(max_length=255)
    state = models.CharField(
        max_length=16, choices=ExportState.choices, default=ExportState.PENDING
    )
    created_ms = models.BigIntegerField()
    started_ms = models.BigIntegerField(null=True, blank=True)
    finished_ms = models.BigIntegerField(null=True, blank=True)
    # {phase, dataset, rows_done, rows_total, percent, rows_per_second, eta_seconds}
    progress = models.JSONField(default=dict)
    commit = models.IntegerField(null=True, blank=True)  # the export commit it wrote
    rows = models.JSONField(default=dict)  # rows exported per dataset
    message = models.TextField(blank=True, default="")  # what went wrong, for a FAILED one

    class Meta:
        db_table = "cp_audit_export"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"export {self.pk} to {self.path}: {self.state}"
