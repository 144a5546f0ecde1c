from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "security"
    label = "security"
    verbose_name = "ACLs, delegation tokens and SCRAM credentials"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.runtime.projections import register_projection
        from security.projection import ScramProjection, TokenProjection

        register_projection(TokenProjection())
        register_projection(ScramProjection())
