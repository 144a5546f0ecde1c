from typing import Any

from django.apps import AppConfig


class ControlPlaneConfig(AppConfig):
    name = "controlplane"
    label = "controlplane"
    verbose_name = "Control plane"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.utils.module_loading import autodiscover_modules

        # Before any connection opens: every one reads the log's json data as text.
        connection_created.connect(_read_json_as_text)

        from controlplane.api import openapi_auth  # noqa: F401  (the Bearer security scheme)

        # The Celery app, so that every Django process's shared tasks are sent through it.
        from controlplane.celery import app  # noqa: F401
        from controlplane.runtime.projections import (
            AclProjection,
            ConfigProjection,
            FeaturesProjection,
            register_projection,
        )

        # The runtime's own tables, below every app: authorization and the controller's settings.
        register_projection(FeaturesProjection())
        register_projection(AclProjection())
        register_projection(ConfigProjection())

        # Metadata snapshots: written when due (the active controller's timer), and their gauge.
        from controlplane.metrics import register_scrape_collector
        from controlplane.runtime.snapshots import metadata_snapshot_when_due
        from controlplane.runtime.timer import register_timer_job
        from controlplane.snapshot_metrics import SnapshotCollector

        register_timer_job(metadata_snapshot_when_due)
        register_scrape_collector(SnapshotCollector())
        autodiscover_modules("rpcs")  # every app's admin RPCs (controlplane.rpc.REGISTRY)


def _read_json_as_text(sender: Any, connection: Any, **kwargs: Any) -> None:
    """A new connection reads `json` values as text, as Django has it read `jsonb`: the log's
    data and the writes' stored answers are json (controlplane.models.JsonAsWritten) and their
    readers decode them themselves."""
    if connection.vendor != "postgresql":
        return
    from psycopg.types.string import TextLoader

    connection.connection.adapters.register_loader("json", TextLoader)
