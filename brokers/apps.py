from django.apps import AppConfig


class BrokersConfig(AppConfig):
    name = "brokers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from brokers import projection  # noqa: F401  (registers the brokers projection)
        from brokers.metrics import ClusterCollector
        from controlplane.metrics import register_scrape_collector

        register_scrape_collector(ClusterCollector())
