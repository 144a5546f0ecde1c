from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "timeline"
    label = "timeline"
    verbose_name = "Incident and event timeline"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from timeline import projection  # noqa: F401  (register the projection)
