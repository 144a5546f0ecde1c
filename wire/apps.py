from django.apps import AppConfig


class WireConfig(AppConfig):
    name = "wire"
    label = "wire"
    verbose_name = "Kafka wire protocol listener"
