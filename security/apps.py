from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "security"
    label = "security"
    verbose_name = "ACLs and delegation tokens"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from security import projection  # noqa: F401  (registers its projection)
