from django.apps import AppConfig


class ReplicasConfig(AppConfig):
    name = "replicas"
    default_auto_field = "django.db.models.BigAutoField"
