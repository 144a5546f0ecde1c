from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    label = "audit"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"
