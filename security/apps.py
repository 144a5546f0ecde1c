from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "security"
    label = "security"
    verbose_name = "ACLs and delegation tokens"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.runtime.projections import register_projection
        from security.projection import TokenProjection

        register_projection(TokenProjection())
