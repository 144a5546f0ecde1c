from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    label = "audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit.controller_events import audit_fencing_hold_off
        from audit.request_ids import audit_request_id_collisions
        from audit.selectors import audit_exported_offset
        from audit.services import CommitAudit, audit_executed
        from audit.timer import export_when_due
        from controlplane.rpc import register_auditor
        from controlplane.runtime.fencing import register_fencing_listener
        from controlplane.runtime.metadata_log import register_commit_audit
        from controlplane.runtime.request_ids import register_collision_listener
        from controlplane.runtime.snapshots import register_retention_floor
        from controlplane.runtime.timer import register_timer_job

        register_auditor(audit_executed)
        register_commit_audit(CommitAudit())
        register_fencing_listener(audit_fencing_hold_off)
        register_collision_listener(audit_request_id_collisions)
        register_timer_job(export_when_due)  # the embedded periodic export
        # The metadata log's retention never deletes what the export has not committed.
        register_retention_floor(audit_exported_offset)
