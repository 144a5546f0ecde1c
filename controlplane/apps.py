from django.apps import AppConfig


class ControlPlaneConfig(AppConfig):
    name = "controlplane"
    label = "controlplane"
    verbose_name = "Control plane"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from controlplane import metrics  # noqa: F401  (register collectors)
        from controlplane.api import openapi_auth  # noqa: F401  (the Bearer security scheme)

        # The Celery app, so that every Django process's shared tasks are sent through it.
        from controlplane.celery import app  # noqa: F401
        from controlplane.runtime import projections  # noqa: F401  (register projections)

        autodiscover_modules("rpcs")  # every app's admin RPCs (controlplane.rpc.REGISTRY)
