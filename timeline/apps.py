from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    label = "timeline"
    verbose_name = "Incident and event timeline"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from controlplane.runtime.projections import register_projection
        from timeline.projection import TimelineProjection

        register_projection(TimelineProjection())
