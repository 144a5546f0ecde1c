from django.apps import AppConfig


class ConfigsConfig(AppConfig):
    name = "configs"
    label = "configs"
    verbose_name = "Configs and client quotas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from configs import projection  # noqa: F401  (registers its projection)
