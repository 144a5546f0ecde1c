from django.apps import AppConfig


class ConfigsConfig(AppConfig):
    name = "configs"
    label = "configs"
    verbose_name = "Configs and client quotas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from configs import projection  # noqa: F401  (registers its projection)
        from configs.mutation_quota import controller_mutation_rate
        from controlplane.throttling import MUTATION_QUOTAS

        MUTATION_QUOTAS.rate_of = controller_mutation_rate  # KIP-599, enforced by the RPCs
