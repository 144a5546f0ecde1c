from django.apps import AppConfig


class ReplicasConfig(AppConfig):
    name = "replicas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.metrics import register_scrape_collector
        from replicas import health_projection, projection, timer  # noqa: F401  (projections, timer)
        from replicas.metrics import ReplicationCollector

        register_scrape_collector(ReplicationCollector())
