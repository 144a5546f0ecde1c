from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "security"
    label = "security"
    verbose_name = "ACLs and delegation tokens"
    default_auto_field = "django.db.models.BigAutoField"
