from django.apps import AppConfig


class CanaryConfig(AppConfig):
    name = "canary"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from canary.metrics import CanaryCollector
        from controlplane.metrics import register_scrape_collector

        register_scrape_collector(CanaryCollector())
