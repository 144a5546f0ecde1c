from django.apps import AppConfig


class CanaryConfig(AppConfig):
    name = "canary"
    default_auto_field = "django.db.models.BigAutoField"
