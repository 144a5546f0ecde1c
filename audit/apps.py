from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    label = "audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit.services import audit_executed
        from controlplane.rpc import AUDITORS

        if audit_executed not in AUDITORS:
            AUDITORS.append(audit_executed)

        from audit.controller_events import audit_fencing_hold_off
        from controlplane.runtime.controller import FENCING_LISTENERS

        if audit_fencing_hold_off not in FENCING_LISTENERS:
            FENCING_LISTENERS.append(audit_fencing_hold_off)
