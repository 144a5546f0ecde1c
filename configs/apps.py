from django.apps import AppConfig


class ConfigsConfig(AppConfig):
    name = "configs"
    label = "configs"
    verbose_name = "Configs and client quotas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from configs.mutation_quota import controller_mutation_rate
        from configs.projection import QuotaProjection
        from controlplane.runtime.projections import register_projection
        from controlplane.throttling import MUTATION_QUOTAS

        register_projection(QuotaProjection())
        MUTATION_QUOTAS.rate_of = controller_mutation_rate  # KIP-599, enforced by the RPCs
