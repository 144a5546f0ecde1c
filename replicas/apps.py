from django.apps import AppConfig


class ReplicasConfig(AppConfig):
    name = "replicas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.metrics import register_scrape_collector
        from controlplane.runtime.projections import register_projection
        from controlplane.runtime.timer import register_timer_job
        from replicas.health_projection import HealthProjection
        from replicas.metrics import ReplicationCollector
        from replicas.projection import TopicProjection
        from replicas.timer import apply_waiting_reports, rebalance_when_due

        register_projection(TopicProjection())
        register_projection(HealthProjection())
        register_scrape_collector(ReplicationCollector())
        register_timer_job(apply_waiting_reports)
        register_timer_job(rebalance_when_due)
