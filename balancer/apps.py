from django.apps import AppConfig


class BalancerConfig(AppConfig):
    name = "balancer"
    default_auto_field = "django.db.models.BigAutoField"
