from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    label = "audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import timer  # noqa: F401  (the embedded periodic export)
        from audit.controller_events import audit_fencing_hold_off
        from audit.request_ids import audit_request_id_collisions
        from audit.services import CommitAudit, audit_executed
        from controlplane.rpc import AUDITORS
        from controlplane.runtime.fencing import FENCING_LISTENERS
        from controlplane.runtime.metadata_log import COMMIT_AUDIT
        from controlplane.runtime.request_ids import COLLISION_LISTENERS

        if audit_executed not in AUDITORS:
            AUDITORS.append(audit_executed)
        if not any(isinstance(trail, CommitAudit) for trail in COMMIT_AUDIT):
            COMMIT_AUDIT.append(CommitAudit())
        if audit_fencing_hold_off not in FENCING_LISTENERS:
            FENCING_LISTENERS.append(audit_fencing_hold_off)
        if audit_request_id_collisions not in COLLISION_LISTENERS:
            COLLISION_LISTENERS.append(audit_request_id_collisions)
