from django.apps import AppConfig


class BrokersConfig(AppConfig):
    name = "brokers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from brokers.metrics import ClusterCollector
        from brokers.projection import BrokerProjection
        from controlplane.metrics import register_scrape_collector
        from controlplane.runtime.projections import register_projection

        register_projection(BrokerProjection())
        register_scrape_collector(ClusterCollector())
