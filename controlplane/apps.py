from django.apps import AppConfig


class ControlPlaneConfig(AppConfig):
    name = "controlplane"
    label = "controlplane"
    verbose_name = "Control plane"

    def ready(self) -> None:
        from controlplane import metrics, projections  # noqa: F401  (register collectors)
